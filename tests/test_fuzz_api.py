"""Hostile input: every /api endpoint fuzzed (bodies, query strings, path ids, headers), and
condition trees too deep or too large.

Each fuzzed request runs against the real Flask app on the real Redis. It must never answer a
5xx or an HTML page, and a request it rejects (4xx) must leave every Redis key exactly as it
was (compared key by key with DUMP before and after).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from mimikit.models import Message, PendingQuestion, Task

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
TOKEN = "fuzz-token"

# --- strategies ---------------------------------------------------------------------------------

any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | any_text
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)
field_names = st.sampled_from(["text", "answer", "limit", "q", "extra", ""]) | any_text
bodies = (
    st.dictionaries(field_names, json_values, max_size=3)
    | st.fixed_dictionaries({"text": json_values})
    | st.fixed_dictionaries({"text": any_text}) | st.fixed_dictionaries({"answer": any_text})
    | st.fixed_dictionaries({"answer": json_values})
    | json_values
)
latin1 = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=60)
numbers = st.integers(min_value=-(10**30), max_value=10**30).map(str) | st.sampled_from(
    ["nan", "1e309", "-0", "٣", "0x10", " 5", "5 ", "+5", "1_000"])
times = (st.datetimes() | st.datetimes(timezones=st.timezones())).map(
    lambda moment: moment.isoformat())
odd_times = st.sampled_from(["0001-01-01T00:00:00", "0001-01-01T00:00:00+14:00",
                             "9999-12-31T23:59:59-14:00", "2024-01-01", "2024-02-30T00:00:00",
                             "2024-01-01T00:00:00Z", "24:00", "yesterday", "-1"])
PARAMS = {  # each query parameter an endpoint reads, with values of its kind and of any kind
    "limit": numbers, "before": times | odd_times, "after": times | odd_times,
    "scope": st.sampled_from(["queue", "running", "triggers", "all", "finished", "ALL"]),
    "role": st.sampled_from(["planner", "worker", "llm_eval", "teller", "", "None"]),
    "q": st.text(max_size=1200) | st.sampled_from(["-", "[", "*", "\\", "\x00", "的 the"]),
    "lastEventId": st.sampled_from(["0-0", "1-", "$", "+", "18446744073709551616-0"]),
    "by": st.sampled_from(["trace", "trigger", "day", "task", ""]),
    "format": st.sampled_from(["json", "markdown", "md", ""]),
    "token": latin1,
}
queries = st.fixed_dictionaries(
    {}, optional={name: values | any_text for name, values in PARAMS.items()}).flatmap(
    lambda known: st.dictionaries(any_text, any_text, max_size=2).map(
        lambda extra: {**extra, **known}))
header_names = st.sampled_from(["Authorization", "Last-Event-ID", "Origin", "Content-Type",
                                "Accept", "X-Anything"])
headers = st.dictionaries(header_names, latin1 | st.just(f"Bearer {TOKEN}"), max_size=3)
KNOWN = "<the seeded task>"
path_ids = any_text.filter(bool) | st.just(KNOWN) | st.sampled_from(
    ["..", "../..", "%2e%2e", "task-" + "0" * 5000, "*", "\x00", "a/b", "?x=1", "#frag"])
ENDPOINTS = [
    ("GET", "/api/status"), ("POST", "/api/input"), ("GET", "/api/messages"),
    ("GET", "/api/messages/export"), ("GET", "/api/events"), ("GET", "/api/tasks"),
    ("GET", "/api/tasks/{id}"), ("POST", "/api/tasks/{id}/cancel"), ("GET", "/api/question"),
    ("POST", "/api/question/answer"), ("GET", "/api/memory/search"),
    ("GET", "/api/messages/search"), ("GET", "/api/usage"), ("GET", "/metrics"),
    ("POST", "/api/tasks/{id}/pause"), ("POST", "/api/tasks/{id}/resume"),
    ("POST", "/api/tasks/{id}/run"), ("PATCH", "/api/tasks/{id}"),
]


# --- the checked request ------------------------------------------------------------------------


def snapshot(redis: Any) -> dict[bytes, bytes]:
    """Every key of the database with its serialized value."""
    keys = sorted(redis.keys("*"))
    pipe = redis.pipeline(transaction=False)
    for key in keys:
        pipe.dump(key)
    return dict(zip(keys, pipe.execute(), strict=True))


class Checked:
    """Sends requests through the Flask test client and checks each answer."""

    def __init__(self, client: Any, redis: Any) -> None:
        self.client = client
        self.redis = redis
        self.statuses: Counter[int] = Counter()
        self.rejected_unchanged = 0

    def __call__(self, method: str, path: str, **options: Any) -> Any:
        before = snapshot(self.redis)
        response = self.client.open(path, method=method, buffered=False, **options)
        try:
            status = response.status_code
            head = _head(response)
        finally:
            response.close()  # an event stream gives back its slot
        self.statuses[status] += 1
        where = f"{method} {path[:200]!r} {options!r:.300}"
        assert status < 500, f"{where} -> {status}: {head[:500]!r}"
        if path.startswith("/api") and status >= 400:
            assert response.mimetype == "application/json", f"{where} -> {head[:200]!r}"
            assert json.loads(head)["error"], where
        if status >= 400:
            assert snapshot(self.redis) == before, f"{where} was rejected ({status}) but " \
                                                   "changed Redis"
            self.rejected_unchanged += 1
        return status


def _head(response: Any) -> bytes:
    """The body, or only its first chunk for an event stream (which never ends)."""
    if response.mimetype == "text/event-stream":
        return next(iter(response.response), b"")
    return response.get_data()


@pytest.fixture
def seeded(runtime):
    """The instance with a message, a task, a trigger and a pending question in it."""
    runtime.conversation.append(Message(role="user", text="hello"), to_inbox=True)
    task = runtime.tasks.add([Task(prompt="some work")])[0]
    runtime.tasks.add([Task(type="conditional", prompt="then",
                          condition={"type": "task_done", "params": {"taskId": task.id}})])
    runtime.conversation.ask(PendingQuestion(question="which one?", options=["a", "b"]))
    return runtime, task


@pytest.fixture
def checked(seeded, figures):
    from mimikit.web import create_app

    runtime, _task = seeded
    check = Checked(create_app(runtime.settings).test_client(), runtime.redis)
    began = time.monotonic()
    yield check
    figures.record("api fuzz", requests=sum(check.statuses.values()),
                   rejected_and_unchanged=check.rejected_unchanged,
                   statuses=dict(sorted(check.statuses.items())),
                   seconds=round(time.monotonic() - began, 1))


def _quote(text: str, safe: str = "") -> str:
    """Percent-encoded UTF-8, lone surrogates included (as a hostile client would send)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe=safe)


def _url(template: str, task_id: str, query: dict[str, str]) -> str:
    path = template.replace("{id}", _quote(task_id))
    query_string = urlencode(query, encoding="utf-8", errors="surrogatepass")
    return path + ("?" + query_string if query else "")


# --- fuzzing ------------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[f"{m} {p}" for m, p in ENDPOINTS])
@FUZZ
@given(query=queries, task_id=path_ids, body=bodies, header=headers)
def test_no_endpoint_answers_5xx_or_changes_state_when_rejecting(checked, seeded, endpoint,
                                                                  query, task_id, body, header):
    method, template = endpoint
    task_id = seeded[1].id if task_id == KNOWN else task_id
    data = json.dumps(body, ensure_ascii=True) if method in ("POST", "PATCH") else None
    options = {"headers": {"Content-Type": "application/json", **header}}
    checked(method, _url(template, task_id, query), data=data, **options)


POSTS = [endpoint for endpoint in ENDPOINTS if endpoint[0] in ("POST", "PATCH")]


@FUZZ
@given(endpoint=st.sampled_from(POSTS), raw=st.binary(max_size=300),
       content_type=st.sampled_from(["application/json", "text/plain", "",
                                     "application/json; charset=latin-1",
                                     "multipart/form-data; boundary=x"]))
def test_raw_bodies_of_any_bytes_are_refused_cleanly(checked, endpoint, raw, content_type):
    method, template = endpoint
    checked(method, _url(template, "x", {}), data=raw, headers={"Content-Type": content_type})


@FUZZ
@given(method=st.sampled_from(["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "GET", "POST"]),
       path=any_text.map(lambda p: "/api/" + _quote(p, safe="/")))
def test_unknown_paths_and_methods_are_json_4xx(checked, method, path):
    checked(method, path)


@settings(max_examples=30, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(endpoint=st.sampled_from(ENDPOINTS), given_token=st.none() | latin1)
def test_with_a_token_every_call_without_it_is_401_and_changes_nothing(seeded, endpoint,
                                                                       given_token):
    from mimikit.web import create_app

    runtime, task = seeded
    app = create_app(runtime.settings.model_copy(update={"api_token": SecretStr(TOKEN)}))
    check = Checked(app.test_client(), runtime.redis)
    method, template = endpoint
    header = {} if given_token is None else {"Authorization": f"Bearer {given_token}"}
    body = json.dumps({"text": "hi", "answer": "a"}) if method in ("POST", "PATCH") else None
    status = check(method, _url(template, task.id, {"q": "x"}), data=body,
                   headers={"Content-Type": "application/json", **header})
    if given_token != TOKEN:
        assert status == 401


# --- hand-picked hostile bodies -----------------------------------------------------------------


@pytest.mark.parametrize("raw", [
    b'{"text": "\\ud800"}',                      # a lone surrogate: not storable as UTF-8
    b'{"text": "ok", "text": "\\udfff"}',        # duplicate key, the last one wins
    b"[" * 100_000 + b"]" * 100_000,            # nesting past the JSON reader's depth
    b'{"text": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"text": "' + b"a" * 300_000 + b'"}',      # over the body limit
    b'{"text": NaN}', b'{"text": 1e999}', b"\xff\xfe{", b"",
], ids=["surrogate", "duplicate-key", "deep-array", "deep-field", "too-large", "nan", "inf",
        "bad-utf8", "empty"])
def test_hostile_input_bodies_are_refused_naming_the_problem(checked, raw):
    for path in ("/api/input", "/api/question/answer"):
        status = checked("POST", path, data=raw, headers={"Content-Type": "application/json"})
        assert status in (400, 413), (path, status)


def test_a_refused_input_names_the_field_and_stores_nothing(seeded):
    from mimikit.web import create_app

    runtime, _task = seeded
    client = create_app(runtime.settings).test_client()
    before = runtime.conversation.count()
    response = client.post("/api/input", data=b'{"text": "caf\\udce9"}',
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert "'text'" in error and "unicode string" in error, error
    assert runtime.conversation.count() == before


# --- condition trees ----------------------------------------------------------------------------


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "task_done", "params": {"taskId": "t"}}
    for _ in range(levels):
        node = {"type": "and", "conditions": [node]}
    return node


def _wide(nodes: int) -> dict[str, Any]:
    return {"type": "or", "conditions": [
        {"type": "task_done", "params": {"taskId": f"t{n}"}} for n in range(nodes - 1)]}


@pytest.mark.parametrize(("tree", "limit"), [
    (_deep(1_000), "limit of 32 levels"), (_deep(33), "limit of 32 levels"),
    (_wide(100_000), "limit of 1000 nodes"), (_wide(1_002), "limit of 1000 nodes"),
], ids=["1000-deep", "33-deep", "100000-nodes", "1001-nodes"])
def test_oversized_condition_trees_are_refused_at_validation_naming_the_limit(tree, limit,
                                                                              figures):
    from pydantic import ValidationError

    began = time.monotonic()
    with pytest.raises(ValidationError) as raised:
        Task(type="conditional", prompt="x", condition=tree)
    seconds = time.monotonic() - began
    figures.record("condition refused", limit=limit, seconds=round(seconds, 3))
    assert limit in str(raised.value)
    assert raised.value.errors()[0]["loc"] == ("condition",)
    assert seconds < 2


def test_condition_trees_at_the_limits_are_stored_and_read_back(runtime):
    deep = Task(type="conditional", prompt="deep", condition=_deep(31))  # 32 levels with the atom
    wide = Task(type="conditional", prompt="wide", condition=_wide(1_000))
    runtime.tasks.add([deep, wide])
    assert runtime.tasks.require(deep.id).condition == deep.condition
    assert len(runtime.tasks.require(wide.id).condition.conditions) == 999
    assert {t.id for t in runtime.triggers.all()} == {deep.id, wide.id}


def _deep_json(levels: int) -> str:
    atom = '{"type": "task_done", "params": {"taskId": "t"}}'
    return '{"type": "and", "conditions": [' * levels + atom + "]}" * levels


@pytest.mark.parametrize("arguments", [
    '{"prompt": "p", "type": "conditional", "condition": ' + _deep_json(300) + "}",
    '{"prompt": "p", "type": "conditional", "condition": ' + _deep_json(1_000) + "}",
    json.dumps({"prompt": "p", "type": "conditional", "condition": _wide(100_000)}),
    '{"prompt": "p", "condition": ' + "[" * 50_000 + "]" * 50_000 + "}",
], ids=["300-deep", "1000-deep", "100000-nodes", "deep-json"])
def test_a_planner_delegation_with_an_oversized_condition_is_a_tool_error(arguments):
    from mimikit.agents.common import registry

    began = time.monotonic()
    outcome = registry().call("planner", "delegate", arguments, ctx=None)
    assert not outcome.ok
    assert any(word in outcome.content for word in ("limit of 32 levels", "limit of 1000 nodes",
                                                    "nest too deeply")), outcome.content[:300]
    assert time.monotonic() - began < 5
