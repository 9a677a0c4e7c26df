"""No message blocks the next: each inbox item has bounded tries, then gives up with one
system message that says why, and can be tried again or dismissed (page, CLI, API); an LLM
outage uses no try.

Real processes: redis-server, Celery workers and beat, the real Teller; the scripted LLM
answers empty whenever the unanswerable message is anywhere in a request.
"""

from __future__ import annotations

import json
import time
from typing import Any

from agent_helpers import history, post_input, wait_history
from llm_server import error, text, tool_call
from processes import run_mimikit, wait_for

from mimikit.conversation.tries import MAX_TRIES, max_calls

BAD = "Please fix this table: |¤|¤| 7f3e-unreadable"
GOOD = "are you there?"


def _mentions(body: dict[str, Any], words: str) -> bool:
    return any(words in (message.get("content") or "") for message in body["messages"])


def chokes_on(words: str, reply: str = "Yes, I am here.") -> Any:
    """A model that answers empty whenever ``words`` are in the request, else ``reply``."""
    return lambda body: text("") if _mentions(body, words) else tool_call("reply", text=reply)


def asked_about(llm: Any, words: str) -> int:
    return sum(_mentions(body, words) for body in llm.requests_for("teller"))


def notes(runtime: Any) -> list[Any]:
    """The system messages that say an item gave up."""
    return [m for m in runtime.conversation.between(None, None) if m.failedItem]


def failed_records(runtime: Any) -> list[dict[str, Any]]:
    from mimikit.conversation.failed import listing

    return listing(runtime, include_dismissed=True)


def api(runtime: Any) -> Any:
    from mimikit.web import create_app

    return create_app(runtime.settings).test_client()


def test_an_unanswerable_message_gives_up_once_and_the_next_message_is_answered(
        stack, llm, procs, figures):
    llm.default("teller", chokes_on(BAD))
    procs.beat()  # the supervisor would wake the Teller again for anything left
    began = time.monotonic()
    bad = post_input(stack, BAD)
    time.sleep(0.2)  # the next message arrives while the first one's pass runs
    post_input(stack, GOOD)
    wait_history(stack, lambda h: ("assistant", "Yes, I am here.") in h, timeout=60,
                 message="the normal message answered")
    answered_s = time.monotonic() - began
    note = wait_for(lambda: notes(stack), timeout=30, message="the note that it gave up")[0]
    gave_up_asks = asked_about(llm, BAD)
    time.sleep(4)  # ticks go by: nothing asks about it again
    assert asked_about(llm, BAD) == gave_up_asks <= max_calls(stack) == 12
    assert len(notes(stack)) == 1 and note.traceId == bad.id
    assert "could not be answered" in note.text and "the model gave no usable answer" in note.text
    assert stack.inbox.read() == []
    (record,) = failed_records(stack)
    assert (record["messageId"], record["state"], record["tries"]) == (bad.id, "failed", MAX_TRIES)
    assert record["calls"] == gave_up_asks  # every request about it was a failed pass's answer
    assert not any("kept" in t for r, t in history(stack) if r == "system")
    figures.record("one unanswerable message, then a normal one", normal_answered_s=round(
        answered_s, 1), requests_about_the_bad_one=gave_up_asks, after_giving_up=0)


def test_an_item_that_failed_waits_behind_new_ones_and_never_enters_their_context(stack, llm):
    llm.default("teller", chokes_on(BAD, reply="Hello!"))
    post_input(stack, BAD)
    wait_for(lambda: stack.redis.hlen(stack.keys.inbox_tries), message="the first failed pass")
    post_input(stack, "hello")
    wait_history(stack, lambda h: ("assistant", "Hello!") in h, message="the new one answered")
    answered = [body for body in llm.requests_for("teller") if not _mentions(body, BAD)]
    assert answered and all("hello" in json.dumps(body["messages"]) for body in answered)
    wait_for(lambda: notes(stack), message="the first one to give up")
    post_input(stack, "and now?")
    wait_history(stack, lambda h: h.count(("assistant", "Hello!")) == 2, message="a third")
    last = llm.requests_for("teller")[-1]
    assert not _mentions(last, BAD) and "could not be answered" not in json.dumps(last)


def test_a_pass_that_mixed_a_bad_and_a_good_message_answers_the_good_one_alone(stack, llm):
    from mimikit.conversation.gate import wake
    from mimikit.models import Message

    llm.default("teller", chokes_on(BAD, reply="Here."))
    for words in (BAD, GOOD):  # both wait before the Teller looks: its first pass has both
        message = Message(role="user", text=words)
        message.traceId = message.id
        stack.conversation.append(message, to_inbox=True)
    wake(stack)
    wait_history(stack, lambda h: ("assistant", "Here.") in h, message="the good one answered")
    wait_for(lambda: notes(stack), message="the bad one to give up")
    first = llm.requests_for("teller")[0]
    assert _mentions(first, BAD) and _mentions(first, GOOD)
    (record,) = failed_records(stack)
    assert record["preview"] == BAD
    wait_for(lambda: stack.inbox.read() == [], message="the good one acknowledged")
    assert asked_about(llm, BAD) <= max_calls(stack)


def test_a_failed_message_tried_again_from_the_api_is_answered_once_the_model_can(stack, llm):
    llm.default("teller", chokes_on(BAD))
    post_input(stack, BAD)
    note = wait_for(lambda: notes(stack), message="it gives up")[0]
    client = api(stack)
    shown = client.get("/api/inbox/failed").get_json()
    assert [item["id"] for item in shown["failed"]] == [note.failedItem]
    assert (shown["maxTries"], shown["maxCalls"]) == (MAX_TRIES, max_calls(stack))
    bad_query = client.get("/api/inbox/failed?state=gone")
    assert bad_query.status_code == 400 and "'state' must be failed" in bad_query.get_json()["error"]
    usage = client.get("/api/usage").get_json()["inbox"]
    (row,) = usage["items"]
    assert row["state"] == "failed" and 0 < row["calls"] <= usage["maxCalls"] == 12
    llm.default("teller", tool_call("reply", text="Here is your table."))
    reply = client.post(f"/api/inbox/failed/{note.failedItem}/retry")
    assert reply.status_code == 200 and reply.get_json()["state"] == "retried"
    wait_history(stack, lambda h: ("assistant", "Here is your table.") in h,
                 message="the retried message answered")
    wait_for(lambda: stack.inbox.read() == [], message="it is acknowledged")
    assert client.get("/api/inbox/failed?state=all").get_json()["failed"] == []
    missing = client.post(f"/api/inbox/failed/{note.failedItem}/retry")
    assert missing.status_code == 404 and "mimikit failed list" in missing.get_json()["error"]


def test_a_failed_message_is_dismissed_from_the_cli_and_stays_out_of_the_context(stack, llm):
    llm.default("teller", chokes_on(BAD, reply="Sure."))
    post_input(stack, BAD)
    item_id = wait_for(lambda: notes(stack), message="it gives up")[0].failedItem
    status = run_mimikit("status")
    assert f"gave up: {item_id} input" in status.stdout, status.stdout
    listed = run_mimikit("failed", "list", "--json")
    assert [i["id"] for i in json.loads(listed.stdout)["failed"]] == [item_id], listed.stderr
    done = run_mimikit("failed", "dismiss", item_id)
    assert done.returncode == 0 and "dismissed" in done.stdout, done.stderr
    assert json.loads(run_mimikit("failed", "list", "--json").stdout)["failed"] == []
    again = api(stack).post(f"/api/inbox/failed/{item_id}/dismiss")
    assert again.status_code == 409 and "retry" in again.get_json()["error"]
    unknown = run_mimikit("failed", "retry", "in-nosuch")
    assert unknown.returncode == 1 and "no failed item with id 'in-nosuch'" in unknown.stderr
    post_input(stack, "next one")
    wait_history(stack, lambda h: ("assistant", "Sure.") in h, message="the next message")
    assert not _mentions(llm.requests_for("teller")[-1], BAD)
    (record,) = failed_records(stack)
    assert record["state"] == "dismissed" and record["dismissedAt"]


def test_an_llm_outage_uses_no_try_and_the_kept_messages_are_answered_together(
        stack, llm, procs):
    back = [time.monotonic() + 3600]
    llm.default("teller", lambda body: error(503) if time.monotonic() < back[0]
                else tool_call("reply", text="Back: both answered."))
    post_input(stack, "first")
    post_input(stack, "second")
    wait_history(stack, lambda h: any("messages are kept" in t for r, t in h if r == "system"),
                 message="the outage notice")
    assert stack.redis.hlen(stack.keys.inbox_tries) == 0  # an outage is not the items' fault
    back[0] = time.monotonic() + 2
    procs.beat()
    wait_history(stack, lambda h: ("assistant", "Back: both answered.") in h, timeout=40,
                 message="the kept messages answered")
    last = llm.requests_for("teller")[-1]
    assert _mentions(last, "first") and _mentions(last, "second")  # together, in one pass
    assert failed_records(stack) == [] and notes(stack) == []


def test_a_task_result_the_teller_cannot_report_gives_up_and_a_message_is_still_answered(
        stack, llm):
    from mimikit.lifecycle.submit import submit
    from mimikit.models import Task

    # "7": a number its run never showed: the Teller's model is asked to report the result
    llm.default("worker", tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "zq-result-nq: 7 rows"}))
    llm.default("teller", chokes_on("zq-result-nq", reply="Noted."))
    task = submit(stack, [Task(prompt="make the report", title="Weekly report")])[0]
    note = wait_for(lambda: notes(stack), timeout=40, message="the result gives up")[0]
    assert note.taskId == task.id and "could not be reported" in note.text
    assert "Weekly report" in note.text
    post_input(stack, GOOD)
    wait_history(stack, lambda h: ("assistant", "Noted.") in h, message="the message answered")
    (record,) = failed_records(stack)
    assert (record["kind"], record["taskId"]) == ("result", task.id)


def test_a_teller_killed_between_two_passes_and_a_redis_restart_lose_no_try(
        wired, procs, llm, redis_server, figures):
    runtime = wired
    llm.default("teller", chokes_on(BAD, reply="Still here."))
    agents = procs.worker(queues="teller,supervisor", concurrency=2, name="agents")
    post_input(runtime, BAD)
    wait_for(lambda: runtime.redis.hlen(runtime.keys.inbox_tries), message="a failed pass")
    procs.kill(agents)  # kill -9 while it waits to try the message again
    first_pass = asked_about(llm, BAD)
    redis_server.stop(kill=True)
    redis_server.start()  # from its AOF
    (entry,) = wait_for(lambda: list(_tries(runtime).values()), message="the count is back")
    assert (entry.tries, entry.calls) == (1, first_pass)
    procs.worker(queues="teller,supervisor", concurrency=2, name="agents")
    post_input(runtime, GOOD)
    wait_history(runtime, lambda h: ("assistant", "Still here.") in h, timeout=40,
                 message="the new message answered by the new Teller")
    (record,) = wait_for(lambda: failed_records(runtime), timeout=30, message="it gives up")
    figures.record("Teller kill -9 and Redis kill -9 between two passes",
                   requests_first_pass=first_pass, requests_in_all=asked_about(llm, BAD))
    assert (record["tries"], record["calls"]) == (MAX_TRIES, asked_about(llm, BAD))
    assert asked_about(llm, BAD) == MAX_TRIES * first_pass  # one more pass, not two
    assert len(notes(runtime)) == 1


def _tries(runtime: Any) -> dict[str, Any]:
    from mimikit.conversation.tries import item_tries

    return item_tries(runtime).all()
