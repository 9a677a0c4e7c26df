"""The tool registry: schemas per role, permission checks, and errors turned into text."""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from mimikit.exceptions import NotFound, ToolError
from mimikit.llm.registry import Registry, StopRun, Tool, render
from mimikit.models import Condition


class ReplyArgs(BaseModel):
    text: str = Field(min_length=1, description="the reply")


class TellerDelegateArgs(BaseModel):
    prompt: str
    timeout: float | None = None


class PlannerDelegateArgs(BaseModel):
    prompt: str
    title: str | None = Field(None, max_length=200)
    type: Literal["oneshot", "conditional"] = "oneshot"
    condition: Condition | None = None
    priority: int = Field(5, ge=0, le=10)


class AskArgs(BaseModel):
    question: str
    options: list[str] | None = None


class CancelArgs(BaseModel):
    taskId: str


class Ctx:
    def __init__(self) -> None:
        self.replies: list[str] = []


class Abort(Exception):
    """A caller's own cancellation signal."""


def make_registry() -> Registry:
    registry = Registry(propagate=(Abort,))

    @registry.tool("reply", roles={"teller"})
    def reply(ctx: Ctx, args: ReplyArgs) -> None:
        """Send text to the user."""
        ctx.replies.append(args.text)

    @registry.tool("delegate", roles={"teller"}, description="hand work to the Planner")
    def teller_delegate(ctx: Ctx, args: TellerDelegateArgs) -> dict[str, str]:
        return {"taskId": "task-1"}

    @registry.tool("delegate", roles={"planner"}, description="create a worker task")
    def planner_delegate(ctx: Ctx, args: PlannerDelegateArgs) -> dict[str, Any]:
        return {"taskId": "task-2", "priority": args.priority}

    @registry.tool("ask_user", roles={"teller"})
    def ask_user(ctx: Ctx, args: AskArgs) -> StopRun:
        """Ask the user and end the run."""
        return StopRun({"question": args.question})

    @registry.tool("cancel_task", roles={"teller", "planner"})
    def cancel_task(ctx: Ctx, args: CancelArgs) -> dict[str, bool]:
        """Cancel a queued task."""
        if args.taskId == "boom":
            raise RuntimeError("disk on fire")
        if args.taskId == "abort":
            raise Abort()
        if args.taskId.startswith("task-"):
            raise NotFound(f"no task {args.taskId!r}; list_tasks shows the ids")
        raise ToolError(f"{args.taskId!r} is not a task id; ids look like task-1a2b")

    return registry


def test_each_role_is_offered_only_its_tools_in_openai_shape() -> None:
    registry = make_registry()

    teller = registry.schemas_for("teller")
    planner = registry.schemas_for("planner")

    assert [s["function"]["name"] for s in teller] == ["ask_user", "cancel_task", "delegate", "reply"]
    assert [s["function"]["name"] for s in planner] == ["cancel_task", "delegate"]
    assert registry.schemas_for("worker") == []
    reply = teller[-1]
    assert reply["type"] == "function"
    assert reply["function"]["description"] == "Send text to the user."
    assert reply["function"]["parameters"] == {
        "type": "object",
        # compact: the bounds (minLength ...) are checked when a call comes in, not sent
        "properties": {"text": {"type": "string", "description": "the reply"}},
        "required": ["text"],
    }


def test_same_name_has_different_arguments_per_role() -> None:
    registry = make_registry()

    def props(role: str) -> set[str]:
        [schema] = [s for s in registry.schemas_for(role) if s["function"]["name"] == "delegate"]
        return set(schema["function"]["parameters"]["properties"])

    assert props("teller") == {"prompt", "timeout"}
    assert props("planner") == {"prompt", "title", "type", "condition", "priority"}


def test_schema_drops_title_noise_but_keeps_a_property_named_title() -> None:
    [schema] = [s for s in make_registry().schemas_for("planner") if s["function"]["name"] == "delegate"]
    text = json.dumps(schema)

    assert '"title": {' in text  # the property
    assert '"title": "' not in text  # pydantic's titles
    assert "discriminator" not in text and "oneOf" not in text  # OpenAPI-only keywords


def test_schema_refs_all_resolve_inside_the_parameters() -> None:
    [schema] = [s for s in make_registry().schemas_for("planner") if s["function"]["name"] == "delegate"]
    parameters = schema["function"]["parameters"]
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            refs.extend(v for k, v in node.items() if k == "$ref")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(parameters)
    assert refs, "the recursive Condition needs $defs"
    for ref in refs:
        assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in parameters["$defs"]


def test_valid_call_runs_the_handler_and_returns_json() -> None:
    registry, ctx = make_registry(), Ctx()

    outcome = registry.call("planner", "delegate", '{"prompt": "build", "priority": 9}', ctx)

    assert outcome.ok and not outcome.stop
    assert json.loads(outcome.content) == {"taskId": "task-2", "priority": 9}
    assert outcome.value == {"taskId": "task-2", "priority": 9}


def test_handler_returning_none_reads_ok_and_empty_arguments_mean_no_arguments() -> None:
    registry, ctx = make_registry(), Ctx()

    outcome = registry.call("teller", "reply", '{"text": "hi"}', ctx)
    missing = registry.call("teller", "reply", "", ctx)

    assert outcome.content == '{"ok": true}' and ctx.replies == ["hi"]
    assert not missing.ok and "text: Field required" in missing.content


def test_unknown_tool_lists_the_available_ones() -> None:
    outcome = make_registry().call("planner", "fly", "{}", Ctx())

    assert not outcome.ok
    assert outcome.content == "error: unknown tool 'fly'; available: cancel_task, delegate"


def test_tool_of_another_role_is_refused_by_name() -> None:
    outcome = make_registry().call("planner", "reply", '{"text": "hi"}', Ctx())

    assert not outcome.ok
    assert "tool 'reply' is not available to the Planner; available: cancel_task, delegate" in (
        outcome.content
    )


def test_invalid_json_says_where_it_broke() -> None:
    outcome = make_registry().call("teller", "reply", '{"text": "hi" "oops"}', Ctx())

    assert not outcome.ok
    assert "arguments of 'reply' are not valid JSON" in outcome.content
    assert "line 1 column 15" in outcome.content


def test_arguments_that_are_not_an_object_are_refused() -> None:
    outcome = make_registry().call("teller", "reply", '["hi"]', Ctx())

    assert "must be a JSON object, not list" in outcome.content


def test_validation_errors_name_each_field_and_the_value() -> None:
    args = '{"prompt": "x", "priority": 11, "type": "weekly"}'
    outcome = make_registry().call("planner", "delegate", args, Ctx())

    assert not outcome.ok
    assert "invalid arguments for 'delegate'" in outcome.content
    assert "priority: Input should be less than or equal to 10 (got 11)" in outcome.content
    assert "type: Input should be 'oneshot' or 'conditional' (got \"weekly\")" in outcome.content


@pytest.mark.parametrize("text", ["the reply", "The reply.", "reply"])
def test_a_value_copied_from_its_fields_description_is_refused_by_name(text: str) -> None:
    ctx = Ctx()
    outcome = make_registry().call("teller", "reply", json.dumps({"text": text}), ctx)

    assert not outcome.ok and not ctx.replies
    assert f"'text' ({text!r}) holds its own description, not a value" in outcome.content


def test_a_value_that_only_mentions_its_description_is_taken() -> None:
    ctx = Ctx()
    outcome = make_registry().call("teller", "reply", '{"text": "Here is the reply you asked for"}',
                                   ctx)

    assert outcome.ok and ctx.replies == ["Here is the reply you asked for"]


@pytest.mark.parametrize("left_out", [None, "null", "None", " "])
def test_an_optional_field_sent_as_null_or_its_text_takes_its_default(left_out: Any) -> None:
    from mimikit.tools.teller_tools import AskUserArgs

    args = AskUserArgs.model_validate({"question": "Which?", "timeout": left_out,
                                       "default": left_out})
    assert (args.timeout, args.default) == (3600, None)


def test_a_zero_where_the_field_must_be_above_zero_is_left_out() -> None:
    from pydantic import ValidationError

    from mimikit.tools.planner_tools import ScheduleArgs

    args = ScheduleArgs.model_validate({"prompt": "drink water", "at": "09:00", "interval": 0,
                                        "timeout": 0.0})
    assert (args.type, args.cron, args.interval, args.timeout) == ("recurring", "0 9 * * *",
                                                                   None, None)
    with pytest.raises(ValidationError, match="greater than 0"):
        ScheduleArgs.model_validate({"prompt": "drink water", "interval": -5})
    # where zero is a value the field may hold, it stays
    assert ScheduleArgs.model_validate({"prompt": "x", "interval": 60, "priority": 0}).priority == 0


def test_a_required_field_sent_as_the_text_null_is_still_refused() -> None:
    from pydantic import ValidationError

    from mimikit.tools.teller_tools import AskUserArgs

    with pytest.raises(ValidationError, match="question"):
        AskUserArgs.model_validate({"question": None})


def test_tool_error_and_not_found_become_their_message() -> None:
    registry = make_registry()

    tool_error = registry.call("teller", "cancel_task", '{"taskId": "xyz"}', Ctx())
    not_found = registry.call("teller", "cancel_task", '{"taskId": "task-9"}', Ctx())

    assert tool_error.content == "error: 'xyz' is not a task id; ids look like task-1a2b"
    assert not_found.content == "error: no task 'task-9'; list_tasks shows the ids"


def test_unexpected_exception_is_named_and_logged_with_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="mimikit.tools"):
        outcome = make_registry().call("teller", "cancel_task", '{"taskId": "boom"}', Ctx())

    assert not outcome.ok
    assert outcome.content == "error: tool 'cancel_task' failed: RuntimeError: disk on fire"
    [entry] = caplog.records
    assert entry.name == "mimikit.tools" and entry.exc_info is not None


def test_propagated_exception_types_pass_through() -> None:
    with pytest.raises(Abort):
        make_registry().call("teller", "cancel_task", '{"taskId": "abort"}', Ctx())


def test_stop_run_marks_the_outcome_as_stopping_with_its_value() -> None:
    outcome = make_registry().call("teller", "ask_user", '{"question": "which env?"}', Ctx())

    assert outcome.ok and outcome.stop
    assert outcome.value == {"question": "which env?"}
    assert json.loads(outcome.content) == {"question": "which env?"}


def test_register_refuses_unknown_roles_and_duplicates() -> None:
    registry = make_registry()

    def handler(ctx: Any, args: ReplyArgs) -> None:
        return None

    with pytest.raises(ValueError, match="unknown roles \\['boss'\\]"):
        registry.register(Tool("x", "d", ReplyArgs, frozenset({"boss"}), handler))
    with pytest.raises(ValueError, match="'reply' is already registered for the teller"):
        registry.register(Tool("reply", "d", ReplyArgs, frozenset({"teller"}), handler))


def test_decorator_needs_a_pydantic_args_annotation() -> None:
    registry = Registry()

    with pytest.raises(TypeError, match="pydantic BaseModel annotation"):

        @registry.tool("bad", roles={"worker"})
        def bad(ctx: Any, args: dict) -> None:
            return None


def test_render_keeps_strings_and_encodes_the_rest() -> None:
    assert render("line1\nline2") == "line1\nline2"
    assert render({"a": "中文"}) == '{"a": "中文"}'
    assert render(ReplyArgs(text="x")) == '{"text": "x"}'


def test_an_optional_number_over_its_most_is_brought_to_it_with_a_note() -> None:
    outcome = make_registry().call("planner", "delegate", '{"prompt": "x", "priority": 100}',
                                   Ctx())

    note, result = outcome.content.split("\n", 1)
    assert outcome.ok and json.loads(result) == {"taskId": "task-2", "priority": 10}
    assert note == "note: priority 100 is over its most, 10; 10 was used"


@pytest.mark.parametrize("args", [
    '{"prompt": "x", "priority": -1}',  # under its least: what was meant is unknown
    '{"prompt": "x", "priority": 100, "type": "weekly"}',  # and something else is wrong
])
def test_a_number_out_of_bounds_otherwise_refuses_the_call(args: str) -> None:
    outcome = make_registry().call("planner", "delegate", args, Ctx())

    assert not outcome.ok and outcome.content.startswith("error: invalid arguments")
    assert "priority: Input should be" in outcome.content
