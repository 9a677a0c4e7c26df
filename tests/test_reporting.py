"""The chat hears what the person needs: final results, failures, questions; not every firing."""

from __future__ import annotations

import time

from llm_server import tool_call
from processes import wait_for
from scheduling_helpers import fired

from mimikit.lifecycle.submit import submit
from mimikit.models import IntervalSchedule, Task


def done_with(text: str):
    return tool_call("submit_result", status="done", resultType="text", result={"text": text})


def recurring(runtime, **fields) -> Task:
    return submit(runtime, [Task(type="recurring", prompt="check the disk", title="disk check",
                                 schedule=IntervalSchedule(interval=0.5), **fields)])[0]


def finished(runtime, trigger_id: str) -> list[Task]:
    return [t for t in fired(runtime, trigger_id) if t.finished]


def test_ten_routine_firings_cost_no_teller_call_and_no_chat_message(stack, procs, llm):
    llm.default("worker", done_with("disk at 40%"))
    llm.default("teller", tool_call("reply", text="noted"))
    trigger = recurring(stack)
    procs.beat()
    wait_for(lambda: len(finished(stack, trigger.id)) >= 10, timeout=60, message="10 runs")
    time.sleep(1.0)  # a report, had one been queued, would have arrived by now
    assert llm.requests_for("teller") == []
    assert stack.conversation.between(None, None) == []
    assert all(t.status == "done" for t in finished(stack, trigger.id))


def test_a_failed_routine_run_is_reported(stack, procs, llm):
    llm.script("worker", tool_call("submit_result", status="failed", resultType="text",
                                   error="disk unreadable"))
    llm.default("worker", done_with("disk at 40%"))
    llm.default("teller", tool_call("reply", text="The disk check failed."))
    trigger = recurring(stack)
    procs.beat()
    wait_for(lambda: len(finished(stack, trigger.id)) >= 4, timeout=60, message="4 runs")
    texts = [m.text for m in stack.conversation.between(None, None)]
    assert texts.count("Task failed: disk check — disk unreadable") == 1
    assert texts.count("The disk check failed.") == 1 and len(llm.requests_for("teller")) == 1


def test_on_change_reports_only_when_the_result_changes(stack, procs, llm):
    answers = iter(["40%", "40%", "41%", "41%", "41%"])
    llm.default("worker", lambda _body: done_with(f"disk at {next(answers, '41%')}"))
    llm.default("teller", tool_call("reply", text="noted"))
    trigger = recurring(stack, notify="on_change")
    procs.beat()
    wait_for(lambda: len(finished(stack, trigger.id)) >= 5, timeout=60, message="5 runs")
    time.sleep(1.0)
    completed = [m.text for m in stack.conversation.between(None, None)
                 if m.text.startswith("Task completed")]
    assert len(completed) == 2  # the first result, and the change to 41%
