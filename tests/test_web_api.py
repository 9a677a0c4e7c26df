"""The JSON API under /api: every endpoint's happy path and its bad inputs, on a real Redis."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from pydantic import SecretStr

from mimikit.models import Message, PendingQuestion, Result, Task, utcnow

TOKEN = "s3cret-token"


@pytest.fixture
def client(runtime):
    from mimikit.web import create_app

    return create_app(runtime.settings).test_client()


@pytest.fixture
def token_client(runtime):
    from mimikit.web import create_app

    settings = runtime.settings.model_copy(update={"api_token": SecretStr(TOKEN)})
    return create_app(settings).test_client()


def assert_json_error(response, status: int, *words: str) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json", response.get_data(as_text=True)[:200]
    body = response.get_json()
    assert body["status"] == status and body["error"]
    for word in words:
        assert word in body["error"], body["error"]
    return body


def add_message(runtime, role: str, text: str, minutes_ago: float = 0) -> Message:
    message = Message(role=role, text=text, createdAt=utcnow() - timedelta(minutes=minutes_ago))
    runtime.conversation.append(message)
    return message


# --- status -------------------------------------------------------------------------------------


def test_status_reports_redis_teller_llm_and_pending_question(client, runtime):
    runtime.conversation.ask(PendingQuestion(question="Which one?", options=["a", "b"]))
    body = client.get("/api/status").get_json()
    assert set(body) >= {"ok", "redis", "workers", "queues", "teller", "llm", "pendingQuestion"}
    assert body["ok"] is True and body["redis"]["ok"] is True
    assert body["teller"]["state"] == "idle"
    assert body["llm"]["configured"] is False and "MIMIKIT_LLM_BASE_URL" in body["llm"]["error"]
    assert body["pendingQuestion"]["options"] == ["a", "b"]
    assert body["sandbox"]["mode"] == "auto" and body["sandbox"]["state"] in ("ok", "warn")
    assert body["sandbox"]["detail"]


def test_status_with_redis_down_is_a_json_report_not_a_crash(runtime, redis_server):
    from processes import free_port

    from mimikit.config import load_settings
    from mimikit.web import create_app

    settings = load_settings().model_copy(
        update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    app_client = create_app(settings).test_client()
    body = app_client.get("/api/status").get_json()
    assert body["ok"] is False and body["redis"]["ok"] is False and body["redis"]["error"]
    # an endpoint that needs Redis answers a JSON 503 naming the error, never an HTML page
    response = app_client.get("/api/messages")
    assert_json_error(response, 503, "cannot reach Redis", "retry in a moment")
    assert response.headers["Retry-After"] == "2"


def test_wrong_method_and_unknown_path_are_json_errors(client):
    assert_json_error(client.post("/api/status"), 405)
    assert_json_error(client.get("/api/nope"), 404)
    assert_json_error(client.delete("/api/input"), 405)


# --- token auth ---------------------------------------------------------------------------------

API_CALLS = [
    ("get", "/api/status"), ("post", "/api/input"), ("get", "/api/messages"),
    ("get", "/api/messages/export"), ("get", "/api/messages/export?format=markdown"),
    ("get", "/api/messages/search?q=x"), ("get", "/api/events"), ("get", "/api/tasks"),
    ("get", "/api/tasks/task_x"), ("post", "/api/tasks/task_x/cancel"), ("get", "/api/question"),
    ("post", "/api/question/answer"), ("get", "/api/memory/search?q=x"),
]


@pytest.mark.parametrize(("method", "path"), API_CALLS)
def test_with_a_token_set_every_api_call_needs_the_bearer_token(token_client, method, path):
    call = getattr(token_client, method)
    assert_json_error(call(path), 401, "Authorization: Bearer")
    assert_json_error(call(path, headers={"Authorization": "Bearer wrong"}), 401)
    assert_json_error(call(path, headers={"Authorization": TOKEN}), 401)  # no "Bearer "


def test_with_the_token_api_calls_pass_and_the_page_itself_is_public(token_client):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert token_client.get("/api/status", headers=auth).status_code == 200
    response = token_client.post("/api/input", json={"text": "hi"}, headers=auth)
    assert response.status_code == 202
    page = token_client.get("/")
    assert page.status_code == 200 and b'id="token-dialog"' in page.data
    assert token_client.get("/static/app.js").status_code == 200


def test_events_accept_the_token_as_a_query_parameter_only_there(token_client):
    assert_json_error(token_client.get("/api/events?token=wrong"), 401)
    assert_json_error(token_client.get(f"/api/status?token={TOKEN}"), 401)


def test_web_refuses_a_public_bind_without_a_token(runtime):
    from processes import free_port, run_mimikit

    done = run_mimikit("web", "--host", "0.0.0.0", "--port", str(free_port()),
                       drop=("MIMIKIT_API_TOKEN",))
    assert done.returncode == 1
    assert "refusing to serve on 0.0.0.0 without a token" in done.stderr
    assert "MIMIKIT_API_TOKEN" in done.stderr


def test_web_on_a_public_bind_with_a_token_serves_and_checks_it(runtime, tmp_path):
    import urllib.error

    from web_helpers import WebServer

    server = WebServer(tmp_path / "web.log", env={"MIMIKIT_HOST": "0.0.0.0",
                                                  "MIMIKIT_API_TOKEN": TOKEN})
    try:
        server.start()
        with pytest.raises(urllib.error.HTTPError) as refused:
            server.get_json("/api/status")
        assert refused.value.code == 401
        assert "Bearer" in json.loads(refused.value.read())["error"]
        status = server.get_json("/api/status", headers={"Authorization": f"Bearer {TOKEN}"})
        assert status["ok"] is True
    finally:
        server.stop()


def test_web_debug_is_refused_on_a_public_bind_even_with_a_token(runtime, monkeypatch):
    from processes import free_port, run_mimikit

    monkeypatch.setenv("MIMIKIT_API_TOKEN", TOKEN)
    done = run_mimikit("web", "--debug", "--host", "0.0.0.0", "--port", str(free_port()))
    assert done.returncode == 1, done.stderr
    assert "refusing --debug on 0.0.0.0" in done.stderr and "127.0.0.1" in done.stderr
    assert "Traceback" not in done.stderr


# --- Host and Origin checks without a token (DNS rebinding, cross-site POSTs) -------------------


@pytest.mark.parametrize("host", ["evil.example", "rebound.attacker.test:8787", "10.0.0.5:8787",
                                  "127.0.0.1.evil.example", "localhost.evil.example:80", ""])
def test_without_a_token_a_request_for_a_foreign_host_is_a_403(client, runtime, host):
    for path in ("/api/status", "/", "/static/app.js", "/api/events"):
        assert_json_error(client.get(path, headers={"Host": host}), 403, "MIMIKIT_API_TOKEN")
    response = client.post("/api/input", json={"text": "rm -rf ~"}, headers={"Host": host})
    assert_json_error(response, 403, "loopback")
    assert runtime.conversation.count() == 0


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1:8787", "[::1]:8787", "::1",
                                  "LocalHost:80"])
def test_without_a_token_loopback_hosts_are_served(client, host):
    assert client.get("/api/status", headers={"Host": host}).status_code == 200
    assert client.post("/api/input", json={"text": "hi"}, headers={"Host": host}).status_code == 202


def test_the_configured_loopback_bind_address_is_an_allowed_host(runtime):
    from mimikit.web import create_app

    default = create_app(runtime.settings).test_client()
    assert_json_error(default.get("/api/status", headers={"Host": "127.0.0.2:8787"}), 403)
    bound = create_app(runtime.settings.model_copy(update={"host": "127.0.0.2"})).test_client()
    assert bound.get("/api/status", headers={"Host": "127.0.0.2:8787"}).status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "http://localhost:9999",
                                    "http://127.0.0.1:8788", "null", "file://"])
def test_without_a_token_a_cross_origin_post_is_a_403(client, runtime, origin):
    headers = {"Host": "127.0.0.1:8787", "Origin": origin}
    assert_json_error(client.post("/api/input", json={"text": "hi"}, headers=headers), 403,
                      "Origin")
    runtime.conversation.ask(PendingQuestion(question="Staging?"))
    assert_json_error(client.post("/api/question/answer", json={"answer": "yes"},
                                  headers=headers), 403)
    assert runtime.conversation.count() == 0 and runtime.conversation.question() is not None
    assert client.get("/api/status", headers=headers).status_code == 200  # reads carry no risk


@pytest.mark.parametrize(("host", "origin"), [
    ("127.0.0.1:8787", "http://127.0.0.1:8787"), ("localhost", "http://localhost"),
    ("localhost:80", "http://localhost"), ("[::1]:8787", "http://[::1]:8787"),
])
def test_a_same_origin_post_is_accepted(client, host, origin):
    response = client.post("/api/input", json={"text": "hi"},
                           headers={"Host": host, "Origin": origin})
    assert response.status_code == 202, response.get_data(as_text=True)


def test_with_a_token_the_host_is_not_restricted(token_client):
    auth = {"Authorization": f"Bearer {TOKEN}", "Host": "mimikit.example.org"}
    assert token_client.get("/api/status", headers=auth).status_code == 200
    assert_json_error(token_client.get("/api/status", headers={"Host": "x.example"}), 401)


def test_a_real_server_refuses_a_rebound_host_and_a_cross_site_post(runtime, tmp_path):
    import http.client

    from web_helpers import WebServer

    server = WebServer(tmp_path / "web.log").start()
    try:
        def call(method: str, headers: dict, body: str | None = None) -> tuple[int, dict]:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            conn.request(method, "/api/input" if body else "/api/status", body=body,
                         headers={"Content-Type": "application/json", **headers})
            reply = conn.getresponse()
            status, data = reply.status, json.loads(reply.read())
            conn.close()
            return status, data

        status, body = call("GET", {"Host": f"attacker.example:{server.port}"})
        assert status == 403 and "attacker.example" in body["error"]
        status, body = call("POST", {"Origin": "http://attacker.example"}, '{"text": "hi"}')
        assert status == 403 and "Origin" in body["error"]
        assert runtime.conversation.count() == 0
        origin = {"Origin": f"http://127.0.0.1:{server.port}"}
        assert call("POST", origin, '{"text": "hi"}')[0] == 202
    finally:
        server.stop()


# --- input --------------------------------------------------------------------------------------


def test_input_is_accepted_with_its_id_stored_and_queued_for_the_teller(client, runtime):
    response = client.post("/api/input", json={"text": "hello **there**"})
    assert response.status_code == 202
    message_id = response.get_json()["id"]
    (stored,) = runtime.conversation.recent(10)
    assert (stored.id, stored.role, stored.text) == (message_id, "user", "hello **there**")
    assert runtime.inbox.read()[0].message["id"] == message_id
    assert runtime.redis.exists(runtime.keys.teller_queued)


def test_input_of_exactly_the_limit_is_accepted(client):
    assert client.post("/api/input", json={"text": "x" * 32_768}).status_code == 202


@pytest.mark.parametrize(("body", "words"), [
    ({"text": 123}, ["'text'", "string"]),
    ({"text": "x" * 32_769}, ["'text'", "32768"]),
    ({"text": ""}, ["'text'"]),
    ({}, ["'text'", "required"]),
    ({"text": "hi", "extra": 1}, ["'extra'"]),
    (["hi"], ["JSON object"]),
])
def test_input_with_a_bad_body_is_a_400_naming_the_field(client, runtime, body, words):
    assert_json_error(client.post("/api/input", json=body), 400, *words)
    assert runtime.conversation.count() == 0


def test_input_that_is_not_json_or_too_big_is_refused(client):
    response = client.post("/api/input", data="text=hi",
                           content_type="application/x-www-form-urlencoded")
    assert_json_error(response, 400, "JSON")
    assert_json_error(client.post("/api/input", data="{not json", content_type="application/json"),
                      400, "JSON")
    huge = json.dumps({"text": "x" * 300_000})
    assert_json_error(client.post("/api/input", data=huge, content_type="application/json"), 413)


def test_a_chunked_body_over_the_limit_is_a_413_not_a_400(client, runtime):
    import io

    huge = json.dumps({"text": "x" * 300_000}).encode()
    # A chunked upload: no Content-Length; the server marks the stream as terminated.
    chunked = {"headers": {"Transfer-Encoding": "chunked"}, "content_type": "application/json",
               "environ_overrides": {"wsgi.input_terminated": True}}
    response = client.post("/api/input", input_stream=io.BytesIO(huge), **chunked)
    assert_json_error(response, 413, "limit")
    small = json.dumps({"text": "small enough"}).encode()
    response = client.post("/api/input", input_stream=io.BytesIO(small), **chunked)
    assert response.status_code == 202, response.get_data(as_text=True)
    assert [m.text for m in runtime.conversation.recent(5)] == ["small enough"]


def test_a_real_server_answers_413_to_a_chunked_body_over_the_limit(runtime, tmp_path):
    import http.client

    from web_helpers import WebServer

    server = WebServer(tmp_path / "web.log").start()
    try:
        body = json.dumps({"text": "x" * 300_000}).encode()
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        chunks = (body[i:i + 16_384] for i in range(0, len(body), 16_384))
        conn.request("POST", "/api/input", body=chunks, encode_chunked=True,
                     headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
        reply = conn.getresponse()
        assert reply.status == 413, reply.read()[:300]
        assert json.loads(reply.read())["status"] == 413
        conn.close()
        assert runtime.conversation.count() == 0
    finally:
        server.stop()


# --- messages -----------------------------------------------------------------------------------


def test_messages_are_oldest_first_limited_and_filtered_by_time(client, runtime):
    old = add_message(runtime, "user", "old", minutes_ago=30)
    mid = add_message(runtime, "assistant", "mid", minutes_ago=20)
    new = add_message(runtime, "system", "new", minutes_ago=10)
    texts = [m["text"] for m in client.get("/api/messages").get_json()["messages"]]
    assert texts == ["old", "mid", "new"]
    texts = [m["text"] for m in client.get("/api/messages?limit=2").get_json()["messages"]]
    assert texts == ["mid", "new"]
    after = mid.createdAt.isoformat()
    found = client.get("/api/messages", query_string={"after": after}).get_json()["messages"]
    assert [m["id"] for m in found] == [mid.id, new.id]
    before = mid.createdAt.isoformat().replace("+00:00", "Z")
    found = client.get("/api/messages", query_string={"before": before}).get_json()["messages"]
    assert [m["id"] for m in found] == [old.id, mid.id]


@pytest.mark.parametrize(("query", "words"), [
    ("limit=abc", ["'limit'", "integer"]),
    ("limit=0", ["'limit'", "between"]),
    ("limit=5000", ["'limit'"]),
    ("before=yesterday", ["'before'", "ISO 8601"]),
    ("after=12:xx", ["'after'"]),
])
def test_messages_with_a_bad_query_is_a_400_naming_the_parameter(client, query, words):
    assert_json_error(client.get(f"/api/messages?{query}"), 400, *words)


def test_export_returns_the_whole_history(client, runtime):
    for n in range(150):
        add_message(runtime, "user", f"m{n}", minutes_ago=200 - n)
    body = client.get("/api/messages/export").get_json()
    assert body["count"] == 150 and len(body["messages"]) == 150
    assert body["messages"][0]["text"] == "m0" and body["messages"][-1]["text"] == "m149"
    assert len(client.get("/api/messages").get_json()["messages"]) == 100


def test_export_refuses_other_methods_and_the_missing_token(client, token_client):
    assert_json_error(client.post("/api/messages/export"), 405)
    assert_json_error(token_client.get("/api/messages/export"), 401)


def test_before_includes_every_message_at_that_very_time(client, runtime):
    """The page pages back with ``before`` = its oldest time and ``limit`` = page + the ones it
    already shows at that time: this holds only because ``before`` is inclusive."""
    moment = utcnow() - timedelta(minutes=5)
    same = [Message(role="user", text=f"same {n}", createdAt=moment) for n in range(3)]
    for message in same:
        runtime.conversation.append(message)
    older = add_message(runtime, "user", "older", minutes_ago=10)
    add_message(runtime, "user", "newer", minutes_ago=1)
    before = moment.isoformat()
    found = client.get("/api/messages", query_string={"before": before, "limit": 4}).get_json()
    assert [m["id"] for m in found["messages"]][0] == older.id
    assert {m["id"] for m in found["messages"][1:]} == {m.id for m in same}


def test_a_limited_time_range_is_its_newest_messages_in_history_order(client, runtime):
    start = utcnow() - timedelta(hours=1)
    for n in range(30):
        runtime.conversation.append(Message(role="user", text=f"m{n}",
                                             createdAt=start + timedelta(seconds=n // 4)))
    full = client.get("/api/messages/export").get_json()["messages"]
    for seconds, limit in [(3, 5), (3, 16), (7, 30), (0, 2)]:
        before = (start + timedelta(seconds=seconds)).isoformat()
        query = {"before": before, "limit": limit}
        found = client.get("/api/messages", query_string=query).get_json()["messages"]
        end = min(30, 4 * (seconds + 1))  # up to that second, the whole second included
        assert found == full[max(0, end - limit):end], (seconds, limit)


def test_export_as_markdown_is_a_transcript_to_download(client, runtime):
    first = add_message(runtime, "user", "Deploy the **site** please", minutes_ago=3)
    add_message(runtime, "assistant", "Deployed to staging.\n\n- build ok\n- tests ok", minutes_ago=2)
    add_message(runtime, "system", "Task done: Deploy", minutes_ago=1)
    response = client.get("/api/messages/export?format=markdown")
    assert response.status_code == 200
    assert response.content_type == "text/markdown; charset=utf-8"
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith("attachment;") and disposition.endswith('.md"')
    text = response.get_data(as_text=True)
    assert text.startswith("# Mimikit conversation\n") and "3 messages" in text
    when = first.createdAt.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert f"## User · {when}\n\nDeploy the **site** please\n" in text
    headings = [line.split(" · ")[0] for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## User", "## Assistant", "## System"]
    assert "- build ok\n- tests ok" in text


def test_export_as_json_is_a_download_too(client, runtime):
    add_message(runtime, "user", "hello")
    response = client.get("/api/messages/export?format=json")
    assert response.headers["Content-Disposition"].endswith('.json"')
    assert [m["text"] for m in response.get_json()["messages"]] == ["hello"]


@pytest.mark.parametrize("query", ["format=pdf", "format=", "format=MARKDOWN"])
def test_export_in_an_unknown_format_is_a_400_naming_the_formats(client, runtime, query):
    add_message(runtime, "user", "hello")
    assert_json_error(client.get(f"/api/messages/export?{query}"), 400, "'format'", "json",
                      "markdown")
    assert runtime.conversation.count() == 1


# --- history search -----------------------------------------------------------------------------


def test_history_search_is_case_insensitive_newest_first_and_limited(client, runtime):
    add_message(runtime, "user", "Where is the Deploy log?", minutes_ago=40)
    add_message(runtime, "assistant", "Lunch was nice", minutes_ago=30)
    add_message(runtime, "assistant", "The deploy finished.", minutes_ago=20)
    add_message(runtime, "system", "Task done: DEPLOY staging", minutes_ago=10)
    body = client.get("/api/messages/search?q=deploy").get_json()
    assert [m["text"] for m in body["messages"]] == [
        "Task done: DEPLOY staging", "The deploy finished.", "Where is the Deploy log?"]
    assert body["truncated"] is False and body["scanned"] == 4
    body = client.get("/api/messages/search?q=Deploy&limit=2").get_json()
    assert [m["text"] for m in body["messages"]] == ["Task done: DEPLOY staging",
                                                      "The deploy finished."]
    assert client.get("/api/messages/search?q=nothing+like+this").get_json()["messages"] == []


def test_history_search_finds_chinese_text_and_keeps_every_field(client, runtime):
    add_message(runtime, "user", "上次部署用了 Cloudflare Workers", minutes_ago=5)
    found = client.get("/api/messages/search", query_string={"q": "部署"}).get_json()["messages"]
    assert len(found) == 1 and found[0]["role"] == "user"
    assert set(found[0]) >= {"id", "role", "text", "createdAt"}


def test_history_search_reads_a_bounded_number_of_messages(client, runtime, monkeypatch):
    import mimikit.web.api

    add_message(runtime, "user", "the needle", minutes_ago=500)
    for n in range(60):
        add_message(runtime, "user", f"hay {n}", minutes_ago=100 - n)
    monkeypatch.setattr(mimikit.web.api, "SEARCH_MAX_SCANNED_MESSAGES", 50)
    body = client.get("/api/messages/search?q=needle").get_json()
    assert body == {"messages": [], "scanned": 50, "truncated": True}
    monkeypatch.setattr(mimikit.web.api, "SEARCH_MAX_SCANNED_MESSAGES", 1000)
    body = client.get("/api/messages/search?q=needle").get_json()
    assert [m["text"] for m in body["messages"]] == ["the needle"]
    assert body["scanned"] == 61 and body["truncated"] is False


@pytest.mark.parametrize(("query", "words"), [
    ("", ["'q'", "required"]),
    ("q=+++", ["'q'", "required"]),
    ("q=" + "x" * 1001, ["'q'", "1000", "1001"]),
    ("q=deploy&limit=0", ["'limit'", "between 1 and 100"]),
    ("q=deploy&limit=101", ["'limit'", "between 1 and 100"]),
    ("q=deploy&limit=ten", ["'limit'", "integer"]),
])
def test_history_search_with_a_bad_query_is_a_400_and_changes_nothing(client, runtime, query,
                                                                       words):
    add_message(runtime, "user", "deploy it")
    assert_json_error(client.get(f"/api/messages/search?{query}"), 400, *words)
    assert runtime.conversation.count() == 1
    assert runtime.inbox.read() == []


def test_history_search_refuses_other_methods(client):
    assert_json_error(client.post("/api/messages/search?q=x"), 405)


# --- tasks --------------------------------------------------------------------------------------


def make_tasks(runtime):
    queued, running, done = runtime.tasks.add([
        Task(prompt="queued work", title="Q"), Task(prompt="running work", role="planner"),
        Task(prompt="done work"),
    ])
    runtime.tasks.start(running.id, "owner-1", "celery-1", lambda _owner: True)
    runtime.tasks.start(done.id, "owner-2", "celery-2", lambda _owner: True)
    runtime.tasks.complete(Result(id=done.id, status="done", result={"text": "all good"}),
                                )
    runtime.runs.add_run(done.id, {"role": "worker", "status": "stopped",
                                    "messages": [{"role": "user", "content": "done work"}]})
    return queued, running, done


def test_tasks_are_listed_by_scope_and_role(client, runtime):
    queued, running, done = make_tasks(runtime)
    ids = lambda q: [t["id"] for t in client.get(f"/api/tasks{q}").get_json()["tasks"]]  # noqa: E731
    assert ids("?scope=queue") == [queued.id]
    assert ids("?scope=running") == [running.id]
    assert ids("?scope=triggers") == []
    assert set(ids("")) == {queued.id, running.id, done.id}
    assert ids("?role=planner") == [running.id]
    summary = client.get("/api/tasks?scope=queue").get_json()["tasks"][0]
    assert summary["status"] == "queued" and summary["title"] == "Q" and summary["priority"] == 5


@pytest.mark.parametrize(("query", "words"), [
    ("scope=everything", ["'scope'", "queue, running, triggers, all"]),
    ("role=teller", ["'role'"]),
])
def test_tasks_with_a_bad_scope_or_role_is_a_400(client, query, words):
    assert_json_error(client.get(f"/api/tasks?{query}"), 400, *words)


def test_task_detail_has_the_task_its_result_history_and_transcript(client, runtime):
    _queued, _running, done = make_tasks(runtime)
    body = client.get(f"/api/tasks/{done.id}").get_json()
    assert body["task"]["prompt"] == "done work" and body["task"]["status"] == "done"
    assert body["result"]["result"] == {"text": "all good"}
    assert [e["type"] for e in body["events"]][-2:] == ["task_started", "task_done"]
    assert body["runs"][0]["messages"][0]["content"] == "done work"


def test_task_detail_of_an_unknown_or_odd_id_is_a_404(client):
    assert_json_error(client.get("/api/tasks/task_missing"), 404, "task_missing")
    assert_json_error(client.get("/api/tasks/%3Cscript%3E"), 404)


def test_cancel_of_a_queued_task_succeeds_and_of_a_finished_one_says_why(client, runtime):
    queued, _running, done = make_tasks(runtime)
    body = client.post(f"/api/tasks/{queued.id}/cancel").get_json()
    assert body["success"] is True
    assert runtime.tasks.get(queued.id).status == "canceled"
    body = client.post(f"/api/tasks/{done.id}/cancel").get_json()
    assert body["success"] is False and "already finished" in body["message"]


def test_cancel_of_an_unknown_task_or_with_get_is_an_error(client, runtime):
    assert_json_error(client.post("/api/tasks/task_missing/cancel"), 404, "task_missing")
    queued, *_ = make_tasks(runtime)
    assert_json_error(client.get(f"/api/tasks/{queued.id}/cancel"), 405)
    assert runtime.tasks.get(queued.id).status == "queued"


# --- question -----------------------------------------------------------------------------------


def test_question_is_null_then_the_pending_one(client, runtime):
    assert client.get("/api/question").get_json() == {"question": None}
    runtime.conversation.ask(PendingQuestion(question="Staging?", options=["yes", "no"],
                                               timeout=60))
    question = client.get("/api/question").get_json()["question"]
    assert question["question"] == "Staging?" and question["options"] == ["yes", "no"]
    assert question["expiresAt"]


def test_answer_resolves_the_question_and_queues_it_for_the_teller(client, runtime):
    runtime.conversation.ask(PendingQuestion(question="Staging?", options=["yes", "no"]))
    response = client.post("/api/question/answer", json={"answer": "yes"})
    assert response.status_code == 200
    assert runtime.conversation.question() is None
    assert runtime.inbox.read()[-1].answer == "yes"
    assert runtime.conversation.recent(1)[0].text == "yes"
    # answering again: nothing is pending any more
    assert_json_error(client.post("/api/question/answer", json={"answer": "no"}), 409, "pending")


def test_an_answer_posted_to_the_api_wakes_the_teller_with_the_users_answer(stack, llm):
    from agent_helpers import script_deploy_question, user_prompt
    from llm_server import tool_call, tool_calls
    from processes import wait_for

    from mimikit.web import create_app

    api = create_app(stack.settings).test_client()
    script_deploy_question(llm)
    assert api.post("/api/input", json={"text": "deploy it"}).status_code == 202
    pending = wait_for(lambda: api.get("/api/question").get_json()["question"], timeout=30,
                       message="the question to be pending")
    assert pending["options"] == ["staging", "production"]
    llm.script("teller", tool_calls([("delegate", {"prompt": "Deploy the app to staging"}),
                                     ("reply", {"text": "Deploying to staging."})]))
    llm.script("planner", tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "ok"}))
    tellers_before = len(llm.requests_for("teller"))
    assert api.post("/api/question/answer", json={"answer": "staging"}).status_code == 200
    # the plan, the look for an answer given already, the plan with the person's answer
    wait_for(lambda: len(llm.requests_for("planner")) == 3, timeout=30, message="re-delegation")
    answered = user_prompt(llm.requests_for("teller")[tellers_before])
    assert "), from the user: staging" in answered
    assert "staging" in user_prompt(llm.requests_for("planner")[-1])
    assert api.get("/api/question").get_json() == {"question": None}


@pytest.mark.parametrize(("body", "words"), [
    ({"answer": 7}, ["'answer'"]),
    ({"answer": "x" * 4001}, ["'answer'", "4000"]),
    ({"text": "yes"}, ["'answer'"]),
])
def test_answer_with_a_bad_body_is_a_400_and_leaves_the_question(client, runtime, body, words):
    runtime.conversation.ask(PendingQuestion(question="Staging?"))
    assert_json_error(client.post("/api/question/answer", json=body), 400, *words)
    assert runtime.conversation.question() is not None


# --- memory -------------------------------------------------------------------------------------


def test_memory_search_finds_a_memory_file(client, runtime):
    memory = runtime.settings.state_dir / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "2026-01-28-deploy.md").write_text("The deploy used Cloudflare Workers.\n",
                                                 encoding="utf-8")
    (memory / "2026-01-20-lunch.md").write_text("Lunch with Alice was great.\n", encoding="utf-8")
    hits = client.get("/api/memory/search?q=cloudflare+deploy&limit=3").get_json()["hits"]
    assert hits and hits[0]["source"].endswith("deploy.md") and hits[0]["score"] > 0
    assert set(hits[0]) >= {"source", "content", "score"}


@pytest.mark.parametrize(("query", "words"), [
    ("", ["'q'", "required"]),
    ("q=" + "x" * 1001, ["'q'", "1000"]),
    ("q=deploy&limit=many", ["'limit'"]),
    ("q=deploy&after=someday", ["'after'"]),
])
def test_memory_search_with_a_bad_query_is_a_400(client, query, words):
    assert_json_error(client.get(f"/api/memory/search?{query}"), 400, *words)


def test_a_500_says_internal_error_and_a_log_id_but_not_the_exception(client, runtime, caplog):
    task_id = "task-broken"
    runtime.redis.set(runtime.keys.task(task_id), '{"id": "task-broken", "prompt": "sk-SECRET')
    response = client.get(f"/api/tasks/{task_id}")
    body = assert_json_error(response, 500, "internal error")
    assert "SECRET" not in response.get_data(as_text=True)
    assert "ValidationError" not in body["error"] and body["logId"] in body["error"]
    assert any(body["logId"] in record.getMessage() for record in caplog.records)
