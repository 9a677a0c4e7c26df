"""Every LLM call bounded, counted and cheap: max_tokens per role, a server that sends no usage
(counted here, marked estimated), one Teller however long a pass takes, and prompts whose
beginning stays the same from one request to the next (what a server caches)."""

from __future__ import annotations

import time

from agent_helpers import history, post_input, user_prompt, wait_history
from llm_server import delay, text, tool_call, tool_calls, without_usage
from processes import wait_for


def test_each_role_asks_for_at_most_its_max_tokens(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "count files"}),
                                     ("reply", {"text": "Counting."})]))
    llm.script("planner", tool_call("delegate", prompt="count the files", title="count"),
               tool_call("submit_result", status="done", resultType="text",
                         result={"text": "ok"}))
    llm.default("worker", tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "3"}))
    llm.default("teller", tool_call("reply", text="3 files."))
    post_input(stack, "count files")
    wait_history(stack, lambda h: ("assistant", "3 files.") in h, timeout=40, message="report")
    settings = stack.settings
    assert {body["max_tokens"] for body in llm.requests_for("teller")} == {1024}
    assert {body["max_tokens"] for body in llm.requests_for("planner")} == \
        {settings.max_tokens_for("planner")}
    assert {body["max_tokens"] for body in llm.requests_for("worker")} == {4096}


def test_a_server_that_sends_no_usage_is_counted_here_and_marked_estimated(stack, llm):
    from mimikit.spending import book
    from mimikit.web import create_app

    llm.script("teller", without_usage(tool_call("reply", text="Hello there, friend.")))
    message = post_input(stack, "hi")
    wait_history(stack, lambda h: ("assistant", "Hello there, friend.") in h, message="reply")
    spent = book.totals(stack, "trace", message.id)
    assert spent["totalTokens"] > 0 and spent["estimated"] is True
    usage = create_app(stack.settings).test_client().get("/api/usage?by=trace").get_json()
    row = next(r for r in usage["usage"] if r["id"] == message.id)
    assert row["estimated"] is True and row["totalTokens"] == spent["totalTokens"]
    reply = stack.conversation.recent(1)[0]
    assert reply.usage.estimated is True


def test_the_teller_prompt_begins_the_same_from_turn_to_turn(stack, llm):
    llm.script("teller", tool_call("reply", text="Hi!"), text(""),
               tool_call("reply", text="Fine."), text(""))
    post_input(stack, "hello")
    wait_history(stack, lambda h: ("assistant", "Hi!") in h, message="first reply")
    wait_for(lambda: llm.pending("teller") == 2, message="the first turn's end")
    post_input(stack, "how are you?")
    wait_history(stack, lambda h: ("assistant", "Fine.") in h, message="second reply")
    first, second = llm.requests_for("teller")[0], llm.requests_for("teller")[2]
    assert first["messages"][0] == second["messages"][0]  # the system message: static
    assert first["tools"] == second["tools"]
    assert "## History" in user_prompt(second) and "## History" not in \
        second["messages"][0]["content"]


def test_a_pass_keeps_the_teller_lease_by_renewing_it_and_stays_the_only_teller(stack, llm):
    """The lease is renewed while a pass runs (so a pass longer than the lease keeps it): its
    time left is topped up, a wake during the pass starts no second Teller, and the message is
    answered once."""
    from mimikit.conversation import gate

    llm.script("teller", delay(gate.RENEW_SECONDS * 2 + 3, tool_call("reply", text="Slow hello.")))
    llm.default("teller", text(""))
    post_input(stack, "hello")
    lock = stack.keys.teller_lock
    wait_for(lambda: stack.redis.exists(lock), message="the Teller runs")
    left, since = stack.redis.pttl(lock), time.monotonic()
    time.sleep(gate.RENEW_SECONDS * 2)
    waited_ms = (time.monotonic() - since) * 1000
    assert stack.redis.pttl(lock) > left - waited_ms + gate.RENEW_SECONDS * 1000 / 2  # renewed
    gate.wake(stack)
    wait_history(stack, lambda h: ("assistant", "Slow hello.") in h, timeout=30,
                 message="the slow reply")
    time.sleep(2)
    replies = [t for r, t in history(stack) if r == "assistant"]
    assert replies == ["Slow hello."]
    assert len(llm.requests_for("teller")) == 2  # the reply, and whether more follows it
