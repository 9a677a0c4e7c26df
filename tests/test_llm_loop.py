"""The agent loop against the scripted server: tools run, results fed back, limits enforced."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import llm_fixtures
import pytest
from llm_server import ScriptedLLM, delay, raw_arguments, text, tool_call, tool_calls, with_usage
from pydantic import BaseModel, Field

from mimikit.exceptions import LLMUnavailable, ToolError
from mimikit.llm.client import LLMClient
from mimikit.llm.loop import RunOptions, run_agent
from mimikit.llm.record import RunRecord
from mimikit.llm.registry import Registry, StopRun

llm = llm_fixtures.llm  # the scripted server fixture

MODEL = "loop-model"


class ReplyArgs(BaseModel):
    text: str = Field(min_length=1)


class AddArgs(BaseModel):
    a: int
    b: int


class AskArgs(BaseModel):
    question: str


class Ctx:
    def __init__(self) -> None:
        self.replies: list[str] = []


def make_registry() -> Registry:
    registry = Registry()

    @registry.tool("reply", roles={"teller"})
    def reply(ctx: Ctx, args: ReplyArgs) -> None:
        """Send text to the user."""
        ctx.replies.append(args.text)

    @registry.tool("ask_user", roles={"teller"})
    def ask_user(ctx: Ctx, args: AskArgs) -> StopRun:
        """Ask the user; ends the run."""
        return StopRun({"question": args.question})

    @registry.tool("add", roles={"worker", "planner"})
    def add(ctx: Ctx, args: AddArgs) -> dict[str, int]:
        """Add two numbers."""
        if args.a < 0:
            raise ToolError(f"a={args.a} is negative; pass a number >= 0")
        return {"sum": args.a + args.b}

    return registry


def run(server: ScriptedLLM, role: str = "teller", on_step: Any = None, **options: Any
        ) -> tuple[RunRecord, Ctx]:
    client = LLMClient(server.url, None, timeout=5, max_retries=1, backoff_base=0.01)
    ctx = Ctx()
    record = run_agent(client, MODEL, role, "You are a test.", "hello", make_registry(), ctx,
                       RunOptions(**{"max_steps": 6, **options}), on_step=on_step)
    return record, ctx


def tool_message(request: dict[str, Any]) -> str:
    return request["messages"][-1]["content"]


def test_plain_text_answer_ends_the_run_as_done(llm: ScriptedLLM) -> None:
    llm.script(MODEL, text("just text"))

    record, _ = run(llm)

    assert record.status == "done" and record.finalText == "just text"
    assert record.steps == 1 and len(llm.requests) == 1
    assert record.error is None and record.stopValue is None


def test_tool_result_is_fed_back_in_the_next_request(llm: ScriptedLLM) -> None:
    llm.script(MODEL, tool_call("add", a=2, b=3), text("it is 5"))

    record, _ = run(llm, role="worker")

    second = llm.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "add"
    assert second[-1]["role"] == "tool"
    assert second[-1]["tool_call_id"] == second[-2]["tool_calls"][0]["id"]
    assert json.loads(second[-1]["content"]) == {"sum": 5}
    assert record.status == "done" and record.finalText == "it is 5"
    assert [(c.name, c.ok) for c in record.toolCalls] == [("add", True)]


def test_transcript_holds_system_user_assistant_and_tool_messages(llm: ScriptedLLM) -> None:
    llm.script(MODEL, tool_call("reply", text="hi"), text(""))

    record, ctx = run(llm)

    roles = [message["role"] for message in record.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert record.messages[0]["content"] == "You are a test."
    assert ctx.replies == ["hi"]
    assert record.status == "done" and record.finalText == ""


def test_each_role_is_offered_only_its_tools(llm: ScriptedLLM) -> None:
    llm.script(MODEL, text("a"), text("b"))

    run(llm, role="teller")
    run(llm, role="worker")

    def offered(request: dict[str, Any]) -> list[str]:
        return [tool["function"]["name"] for tool in request["tools"]]

    assert offered(llm.requests[0]) == ["ask_user", "reply"]
    assert offered(llm.requests[1]) == ["add"]


def test_role_without_tools_sends_no_tools_field(llm: ScriptedLLM) -> None:
    llm.script(MODEL, text("verdict"))

    run(llm, role="llm_eval")

    assert "tools" not in llm.requests[0]


@pytest.mark.parametrize(
    ("bad_call", "expected"),
    [
        (tool_call("reply", text="hi"), "tool 'reply' is not available to the Worker; available: add"),
        (tool_call("launch", target="moon"), "unknown tool 'launch'; available: add"),
        (raw_arguments("add", '{"a": 1, "b":'), "the arguments of 'add' are not valid JSON"),
        (tool_call("add", a="one", b=2), "a: Input should be a valid integer"),
        (tool_call("add", a=-1, b=2), "a=-1 is negative; pass a number >= 0"),
    ],
    ids=["other-role", "unknown", "bad-json", "invalid-field", "tool-error"],
)
def test_bad_call_gives_the_model_an_error_text_and_the_run_continues(
    llm: ScriptedLLM, bad_call: dict[str, Any], expected: str
) -> None:
    llm.script(MODEL, bad_call, tool_call("add", a=1, b=2), text("done"))

    record, _ = run(llm, role="worker")

    assert tool_message(llm.requests[1]).startswith("error: ")
    assert expected in tool_message(llm.requests[1])
    assert json.loads(tool_message(llm.requests[2])) == {"sum": 3}
    assert record.status == "done" and record.steps == 3
    assert [c.ok for c in record.toolCalls] == [False, True]


def test_step_limit_fails_with_a_readable_error(llm: ScriptedLLM) -> None:
    llm.default(MODEL, tool_call("launch"))

    record, _ = run(llm, role="worker", max_steps=3)

    assert record.status == "failed" and record.steps == 3
    assert len(llm.requests) == 3
    assert record.error == (
        "step limit of 3 reached without finishing; last error: "
        "error: unknown tool 'launch'; available: add"
    )


def test_stopping_tool_ends_the_run_with_its_value_and_skips_later_calls(
    llm: ScriptedLLM,
) -> None:
    llm.script(MODEL, tool_calls([("ask_user", {"question": "which env?"}),
                                  ("reply", {"text": "never sent"})]))

    record, ctx = run(llm)

    assert record.status == "stopped"
    assert record.stopValue == {"question": "which env?"}
    assert ctx.replies == []
    assert record.messages[-1]["content"] == "error: not run: the run ended at 'ask_user'"
    assert len(llm.requests) == 1


def test_usage_is_summed_across_steps(llm: ScriptedLLM) -> None:
    llm.script(MODEL, with_usage(tool_call("add", a=1, b=1), 100, 10),
               with_usage(text("2"), 130, 5))

    record, _ = run(llm, role="worker")

    assert (record.usage.promptTokens, record.usage.completionTokens) == (230, 15)
    assert record.usage.totalTokens == 245


def test_on_step_is_called_before_each_request_and_may_abort(llm: ScriptedLLM) -> None:
    class Canceled(Exception):
        pass

    seen: list[int] = []

    def on_step(record: RunRecord) -> None:
        seen.append(record.steps)
        if record.steps == 2:
            raise Canceled()

    llm.default(MODEL, tool_call("add", a=1, b=1))

    with pytest.raises(Canceled):
        run(llm, role="worker", on_step=on_step)

    assert seen == [0, 1, 2]
    assert len(llm.requests) == 2


def test_deadline_ends_the_run_as_timed_out(llm: ScriptedLLM) -> None:
    llm.default(MODEL, delay(0.2, tool_call("add", a=1, b=1)))

    began = time.monotonic()
    record, _ = run(llm, role="worker", max_steps=50, deadline=time.monotonic() + 0.5)

    assert record.status == "failed" and record.error == "timed out after 0.5 s"
    assert time.monotonic() - began < 2
    assert record.steps < 50


def test_deadline_inside_a_slow_request_is_a_timeout_not_an_outage(llm: ScriptedLLM) -> None:
    llm.default(MODEL, delay(2.0, text("too late")))

    record, _ = run(llm, deadline=time.monotonic() + 0.3)

    assert record.status == "failed" and record.error == "timed out after 0.3 s"


def test_unreachable_llm_propagates(llm: ScriptedLLM) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = LLMClient(f"http://127.0.0.1:{port}/v1", None, max_retries=0)

    with pytest.raises(LLMUnavailable, match=f"127.0.0.1:{port}"):
        run_agent(client, MODEL, "teller", "s", "u", make_registry(), Ctx(),
                  RunOptions(max_steps=3))


def test_run_record_dumps_as_camelcase_json(llm: ScriptedLLM) -> None:
    llm.script(MODEL, tool_call("add", a=1, b=1), text("2"))

    record, _ = run(llm, role="worker")
    data = json.loads(record.model_dump_json())

    assert {"id", "role", "model", "status", "messages", "toolCalls", "usage", "steps",
            "startedAt", "durationMs", "finalText"} <= set(data)
    assert data["toolCalls"][0]["durationMs"] >= 0
    assert data["usage"]["totalTokens"] > 0
    assert data["id"].startswith("run-")
    assert RunRecord.model_validate(data).toolCalls[0].name == "add"


class FinishArgs(BaseModel):
    answer: str


def finishing_registry() -> Registry:
    """``add`` plus a ``finish`` that ends the run, as submit_result does."""
    registry = make_registry()

    @registry.tool("finish", roles={"worker"}, alone=True)
    def finish(ctx: Ctx, args: FinishArgs) -> StopRun:
        """Finish with the answer."""
        return StopRun({"answer": args.answer})

    return registry


def run_worker(server: ScriptedLLM, max_steps: int = 6) -> RunRecord:
    client = LLMClient(server.url, None, timeout=5, max_retries=0)
    return run_agent(client, MODEL, "worker", "You are a test.", "hello", finishing_registry(),
                     Ctx(), RunOptions(max_steps, text_ends_run=False))


def test_a_plain_answer_where_a_tool_must_finish_is_corrected_and_the_run_goes_on(llm):
    llm.script(MODEL, text("The sum is 5."), tool_call("finish", answer="5"))
    record = run_worker(llm)
    assert record.status == "stopped" and record.stopValue == {"answer": "5"}
    correction = llm.requests[1]["messages"][-1]
    assert correction["role"] == "user" and "plain text" in correction["content"]
    assert "'finish'" in correction["content"]


def test_a_model_that_never_calls_the_finishing_tool_ends_at_the_step_limit(llm):
    llm.default(MODEL, text("Done, I think."))
    record = run_worker(llm, max_steps=3)
    assert record.status == "failed" and "step limit of 3" in record.error
    assert "plain text" in record.error and len(llm.requests) == 3


@pytest.mark.parametrize("written", [
    '{"name": "reply", "arguments": {"text": "hi"}}',
    'Sure.\n```json\n{"function": {"name": "reply", "arguments": "{\\"text\\": \\"hi\\"}"}}\n```',
    '<tool_call>{"name": "reply", "arguments": {"text": "hi"}}</tool_call>',
])
def test_a_tool_call_written_into_the_text_is_run_as_the_call(llm, written):
    llm.script(MODEL, text(written), text(""))
    record, ctx = run(llm)
    assert ctx.replies == ["hi"] and record.finalText == ""
    call = record.messages[2]["tool_calls"][0]["function"]  # a real call in the transcript
    assert call["name"] == "reply" and '"hi"' in call["arguments"]
    assert len(llm.requests) == 2 and llm.requests[1]["messages"][-1]["role"] == "tool"


def test_a_finishing_call_beside_other_calls_is_refused_and_the_others_run(llm):
    llm.script(MODEL, tool_calls([("add", {"a": 2, "b": 3}), ("finish", {"answer": "5"})]),
               tool_call("finish", answer="5"))
    record = run_worker(llm)
    assert record.status == "stopped" and record.stopValue == {"answer": "5"}
    first_results = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert first_results[0] == '{"sum": 5}'
    assert "'finish' ends the run: call it alone" in first_results[1]


def test_arguments_encoded_twice_are_read(llm):
    llm.script(MODEL, raw_arguments("add", json.dumps(json.dumps({"a": 1, "b": 2}))),
               tool_call("finish", answer="3"))
    record = run_worker(llm)
    assert record.toolCalls[0].ok and record.toolCalls[0].content == '{"sum": 3}'
