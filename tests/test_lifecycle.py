"""What happens when a task ends, on the real stack: chains whose upstream failed, the
failure's error in a handler's prompt, needs_input shown as such, failed Planner and llm_eval
runs made visible, the start-up line, the backlog, and a kind of condition atom added."""

from __future__ import annotations

import json
import time

from agent_helpers import history, post_input, user_prompt, wait_history
from llm_server import error, tool_call, tool_calls
from processes import wait_for
from scheduling_helpers import add_trigger, fired

from mimikit.lifecycle.submit import submit
from mimikit.models import Task
from mimikit.summaries import task_summary


def _failing_worker(body):
    if "B: " in user_prompt(body) or "C: " in user_prompt(body):
        raise AssertionError("a step whose upstream failed must never run")
    return tool_call("submit_result", status="failed", resultType="text",
                     error="the disk is full")


def test_a_failed_upstream_retires_its_chain_as_canceled_and_the_person_hears_once(stack, llm):
    llm.default("worker", _failing_worker)
    llm.default("teller", tool_call("reply", text="A failed; B and C will not run."))
    a = submit(stack, [Task(prompt="A: write the report", title="A: report")])[0]
    b = add_trigger(stack, type="conditional", title="B: mail it", prompt="mail the report",
                    condition={"type": "task_done", "params": {"taskId": a.id}})
    c = add_trigger(stack, type="conditional", title="C: archive", prompt="archive the mail",
                    condition={"type": "task_done", "params": {"taskId": b.id}})
    wait_history(stack, lambda h: ("assistant", "A failed; B and C will not run.") in h,
                 timeout=40, message="the Teller's report of the chain")
    retired = {t.id: t for t in stack.tasks.by_id([b.id, c.id])}
    assert [retired[b.id].status, retired[c.id].status] == ["canceled", "canceled"]
    assert retired[b.id].error.startswith("upstream A: report failed: the disk is full")
    assert "upstream B: mail it was canceled" in retired[c.id].error
    assert fired(stack, b.id) == [] and fired(stack, c.id) == []
    failures = [t for r, t in history(stack) if r == "system" and "A: report" in t]
    assert failures == ["Task failed: A: report — the disk is full. Not run, since it waited "
                        "on this: B: mail it, C: archive"]
    assert not any("Task canceled" in t for _r, t in history(stack))
    teller = [user_prompt(body) for body in llm.requests_for("teller")]
    assert len(teller) == 1 and "not run, since they waited on it: B: mail it, C: archive" in teller[0]
    shown = task_summary(retired[b.id])  # what the task panel and the API show
    assert shown["status"] == "canceled" and shown["reason"].startswith("upstream A: report")


def test_a_failure_handler_gets_the_upstream_error_in_its_prompt(stack, llm):
    llm.script("worker", tool_call("submit_result", status="failed", resultType="text",
                                   error="tests failed: 3 of 40"))
    llm.default("worker", tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "opened an issue"}))
    llm.default("teller", tool_call("reply", text="noted"))
    a = submit(stack, [Task(prompt="run the tests", title="tests")])[0]
    handler = add_trigger(stack, type="conditional", title="on failure", prompt="file an issue",
                          condition={"type": "task_failed", "params": {"taskId": a.id}})
    wait_for(lambda: len(fired(stack, handler.id)) == 1 and fired(stack, handler.id)[0].finished,
             timeout=40, message="the failure handler to run")
    prompts = [user_prompt(body) for body in llm.requests_for("worker")]
    handler_prompt = next(p for p in prompts if "file an issue" in p)
    assert "error: tests failed: 3 of 40" in handler_prompt


def test_a_planner_that_needs_input_shows_as_needs_input(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "Deploy the app"}),
                                     ("reply", {"text": "Planning."})]))
    llm.script("planner", tool_call("submit_result", status="needs_input", resultType="text",
                                    result={"text": "two targets"},
                                    question="staging or production?"))
    llm.default("teller", tool_call("ask_user", question="Staging or production?"))
    post_input(stack, "deploy")
    wait_for(stack.conversation.question, timeout=30, message="the question")
    planner = next(t for t in stack.tasks.with_status("done") if t.role == "planner")
    assert task_summary(planner)["status"] == "needs_input"  # finished, for every rule


def test_a_failed_planner_run_leaves_a_line_in_the_chat(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "Plan the migration"}),
                                     ("reply", {"text": "Planning."})]))
    llm.default("planner", error(400, {"error": {"message": "context length exceeded"}}))
    llm.default("teller", tool_call("reply", text="The plan failed."))
    post_input(stack, "migrate")
    found = wait_history(stack, lambda h: any(t.startswith("Task failed: Plan the migration")
                                              for _r, t in h), timeout=30,
                         message="the Planner's failure in the chat")
    line = next(t for _r, t in found if t.startswith("Task failed"))
    assert "context length exceeded" in line


def test_a_plan_that_delegated_wakes_no_teller_for_itself(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "count the files"}),
                                     ("reply", {"text": "Counting."})]))
    llm.script("planner", tool_call("delegate", prompt="count files in .", title="count"),
               tool_call("submit_result", status="done", resultType="text",
                         result={"text": "delegated"}))
    llm.default("worker", tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "3 files"}))
    llm.default("teller", tool_call("reply", text="There are 3 files."))
    post_input(stack, "how many files?")
    wait_history(stack, lambda h: ("assistant", "There are 3 files.") in h, timeout=40,
                 message="the report")
    time.sleep(1.0)
    # the first pass answered the input; the second reported the Worker; none for the plan
    teller = [user_prompt(body) for body in llm.requests_for("teller")]
    assert len(teller) == 2 and "(worker: count)" in teller[1]
    assert not any("(planner:" in prompt for prompt in teller)


def test_a_failed_llm_eval_batch_shows_in_status_and_the_task_panel(stack, llm):
    from mimikit.agents.llm_eval import run_batch
    from mimikit.status import status

    add_trigger(stack, type="conditional", prompt="celebrate",
                condition={"type": "llm_eval", "params": {"prompt": "the build is green"}})
    llm.default("default", error(400, {"error": {"message": "model not loaded"}}))
    outcome = run_batch(stack, "batch-1")
    assert outcome["outcome"] == "started"
    batch = status(stack)["llmEval"]
    assert batch["status"] == "failed" and "model not loaded" in batch["error"]
    assert task_summary(stack.tasks.require(batch["taskId"]))["status"] == "failed"
    assert not any("llm_eval" in t for _r, t in history(stack))  # not a chat matter


def test_an_instance_starting_with_state_says_what_it_recovered(runtime):
    from mimikit.supervisor.recovery import recover_on_startup

    assert recover_on_startup(runtime)["requeued"] == 0
    assert history(runtime) == []  # a new instance has nothing to say
    post_input(runtime, "hello")
    submit(runtime, [Task(prompt="left in the queue")])
    done = recover_on_startup(runtime)
    assert done["requeued"] == 1
    line = history(runtime)[-1]
    assert line[0] == "system" and line[1].startswith("Mimikit ")
    assert "started. Recovered: 1 queued task(s) sent again" in line[1]


def test_the_backlog_is_listed_injected_into_the_teller_and_served(stack, llm):
    from mimikit.web import create_app

    llm.script("teller", tool_calls([("update_backlog", {"action": "add", "item": "buy milk"}),
                                     ("update_backlog", {"action": "list"}),
                                     ("reply", {"text": "Added."})]))
    post_input(stack, "remember to buy milk")
    wait_history(stack, lambda h: ("assistant", "Added.") in h, message="the reply")
    calls = stack.runs.of("teller")[-1]["toolCalls"]
    listed = json.loads(next(c["content"] for c in calls if '"list"' in c["arguments"]))
    assert listed == {"backlog": [{"item": "buy milk", "done": False}]}
    llm.script("teller", tool_call("reply", text="ok"))
    post_input(stack, "anything else?")
    wait_history(stack, lambda h: ("assistant", "ok") in h, message="the second reply")
    context = user_prompt(llm.requests_for("teller")[-1])  # the first user message
    assert "## Backlog\n- [ ] buy milk" in context
    client = create_app(stack.settings).test_client()
    assert client.get("/api/backlog").get_json() == {"items": [{"item": "buy milk",
                                                                "done": False}]}


def test_a_new_kind_of_condition_atom_is_one_module_registered(runtime):
    """A kind of atom registered at run time is validated, offered to the Planner, indexed and
    evaluated like the built-in ones."""
    from pydantic import Field

    from mimikit.agents.common import registry
    from mimikit.atoms import ATOMS, register
    from mimikit.atoms.base import AtomKind, Evaluation, Params
    from mimikit.exceptions import InvalidValue
    from mimikit.tools.context import ToolContext

    class Flag(Params):
        name: str = Field(min_length=1)

    def evaluate(params, path, reader):
        raised = bool(reader.runtime.redis.exists(f"flag:{params.name}"))
        return Evaluation(raised, [f"flag:{params.name}={raised}"])

    def check(params, checker):
        if not params.name.isidentifier():
            raise InvalidValue(f"flag name {params.name!r} must be an identifier")
        return params

    register(AtomKind(name="flag_raised", params=Flag, watch="tick", evaluate=evaluate,
                      check=check))
    try:
        tools = registry()
        tools._schemas.clear()  # schemas are built once per role; this kind came later
        schema = json.dumps(tools.schemas_for("planner"))
        assert '"flag_raised"' in schema
        ctx = ToolContext(runtime=runtime, role="planner", trace_id="t1")
        refused = tools.call("planner", "schedule", json.dumps(
            {"prompt": "wave", "type": "conditional",
             "condition": {"type": "flag_raised", "params": {"name": "not an id"}}}), ctx)
        assert not refused.ok and "must be an identifier" in refused.content
        made = tools.call("planner", "schedule", json.dumps(
            {"prompt": "wave", "type": "conditional",
             "condition": {"type": "flag_raised", "params": {"name": "green"}}}), ctx)
        assert made.ok, made.content
        trigger = submit(runtime, list(ctx.staged))[0]
        assert trigger.id in runtime.triggers.watching("tick")
        from mimikit.models import utcnow
        from mimikit.supervisor.tick import fire_watched

        assert fire_watched(runtime, utcnow()) == []
        runtime.redis.set("flag:green", "1")
        assert fire_watched(runtime, utcnow()) == [trigger.id]
    finally:
        ATOMS.pop("flag_raised", None)
        registry()._schemas.clear()
