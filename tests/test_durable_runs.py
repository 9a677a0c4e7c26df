"""Runs journaled step by step and resumed after a crash: a Worker killed (``kill -9``) in the
middle of a multi-step run asks the model only for the steps it had not finished and runs no
shell command twice; a Teller killed mid-pass does not repeat what it did; a call interrupted
mid-way is reported to the model as such."""

from __future__ import annotations

import json
import time

import pytest
from agent_helpers import history, wait_history
from llm_server import delay, tool_call
from processes import wait_for

from mimikit.lifecycle.submit import submit
from mimikit.models import RetryPolicy, Task

STEPS = 3  # shell steps before the kill


def _worker_script(body):
    """Three shell steps that each append a line to steps.log, then a slow fourth answer
    (the kill comes while the model thinks), then the result."""
    done_steps = sum(1 for m in body["messages"] if m["role"] == "tool")
    if done_steps < STEPS:
        return tool_call("shell", command=f"echo step{done_steps + 1} >> steps.log")
    if done_steps == STEPS:
        return delay(6, tool_call("shell", command="echo step4 >> steps.log"))
    return tool_call("submit_result", status="done", resultType="text",
                     result={"text": "steps.log holds four steps"})


@pytest.mark.slow
def test_a_worker_killed_mid_run_resumes_without_repeating_steps(wired, procs, llm, figures):
    runtime = wired
    llm.default("worker", _worker_script)
    procs.worker(queues="teller,planner,supervisor", concurrency=2, name="agents")
    procs.beat()
    victim = procs.worker(queues="worker", concurrency=1, name="victim")
    task = submit(runtime, [Task(prompt="four steps", retry=RetryPolicy(maxAttempts=3))])[0]
    log = runtime.settings.work_dir / "steps.log"
    wait_for(lambda: len(llm.requests_for("worker")) == STEPS + 1, timeout=60,
             message="the fourth LLM call in flight")
    before = len(llm.requests_for("worker"))
    procs.kill(victim)
    killed = time.monotonic()
    procs.worker(queues="worker", concurrency=1, name="rescuer")
    wait_for(lambda: runtime.tasks.require(task.id).status == "done", timeout=90,
             message="the task to finish after the kill")
    resumed_in = time.monotonic() - killed
    after = len(llm.requests_for("worker")) - before
    lines = log.read_text().split()
    figures.record("kill -9 during the 4th of 5 LLM calls", llm_requests_after_kill=after,
                   ideal=2, shell_steps_run_twice=len(lines) - 4,
                   seconds_to_finish_after_kill=resumed_in)
    assert lines == ["step1", "step2", "step3", "step4"], lines  # none ran twice
    assert after == 2  # the fourth answer again, then the result
    runs = runtime.runs.of(task.id)
    assert runs[-1]["resumed"] == STEPS  # the answers replayed from the journal
    assert not runtime.redis.exists(runtime.keys.journal(task.id))  # gone once it ended


def test_a_call_that_started_and_never_finished_is_reported_as_interrupted(runtime, llm):
    """Replay of a journal whose last call started without a result: the model is told."""
    from mimikit.agents.common import registry
    from mimikit.llm.client import LLMClient
    from mimikit.llm.loop import RunOptions, run_agent
    from mimikit.store.journal import RunJournal
    from mimikit.tools.context import ToolContext
    from mimikit.workspace.local import Workspace

    journal = RunJournal(runtime.redis, runtime.keys, "task-x")
    journal.append({"kind": "answer", "step": 1, "content": None, "usage": {},
                    "calls": [{"id": "c1", "name": "shell", "arguments":
                               json.dumps({"command": "echo once >> once.log"})}]})
    journal.append({"kind": "start", "id": "c1"})
    llm.script("worker", tool_call("submit_result", status="done", resultType="text",
                                   result={"text": "checked"}))
    ctx = ToolContext(runtime=runtime, role="worker", trace_id="t",
                      workspace=Workspace(runtime.settings.work_dir))
    record = run_agent(LLMClient(llm.url, None), "worker", "worker", "s", "u", registry(), ctx,
                       RunOptions(max_steps=4, text_ends_run=False, journal=journal))
    assert record.status == "stopped" and record.resumed == 1
    told = llm.requests_for("worker")[0]["messages"][-1]
    assert told["role"] == "tool" and "interrupted" in told["content"]
    assert not (runtime.settings.work_dir / "once.log").exists()  # not run again


def test_a_reply_interrupted_mid_call_is_posted_once_when_the_pass_resumes(stack, llm):
    """The Teller's pass journal holds a reply call that started and never reported (its
    process died right after posting): the resumed pass runs it again, and the message it
    posts is the same message, not a second one; the model is not asked again."""
    from mimikit.agents.teller import journal
    from mimikit.conversation.gate import wake
    from mimikit.models import Message

    message = Message(role="user", text="hello", traceId="msg-hello")
    stack.conversation.append(message, to_inbox=True)  # waiting; no Teller woken yet
    items = stack.inbox.read()
    pass_journal = journal(stack)
    pass_journal.append({"kind": "pass", "items": [item.id for item in items]})
    pass_journal.append({"kind": "answer", "step": 1, "content": None, "usage": {},
                         "calls": [{"id": "c-9", "name": "reply",
                                    "arguments": json.dumps({"text": "Hello again!"})}]})
    pass_journal.append({"kind": "start", "id": "c-9"})
    wake(stack)
    wait_history(stack, lambda h: ("assistant", "Hello again!") in h, message="the reply")
    wait_for(lambda: stack.inbox.read() == [], message="the pass acknowledged")
    wake(stack)  # the same pass again finds nothing to redo
    time.sleep(1.0)
    assert [t for r, t in history(stack) if r == "assistant"] == ["Hello again!"]
    # the journal answered for the model: it is asked only whether more follows the reply
    assert all(body["messages"][-1]["role"] == "tool" for body in llm.requests_for("teller"))
    assert pass_journal.entries() == []


def test_what_a_step_records_commits_with_its_next_journal_entry(runtime):
    """A step's other writes (its usage, the step shown live) wait for the journal entry that
    follows it, and commit in its transaction; what is left commits when the run ends."""
    from mimikit.store.journal import RunJournal

    journal = RunJournal(runtime.redis, runtime.keys, "task-y")
    journal.later(lambda pipe: pipe.set("probe:usage", "booked"))
    assert runtime.redis.get("probe:usage") is None  # not before the entry
    journal.append({"kind": "start", "id": "c1"})
    assert runtime.redis.get("probe:usage") == b"booked"
    journal.later(lambda pipe: pipe.set("probe:step", "shown"))
    journal.flush()
    assert runtime.redis.get("probe:step") == b"shown"
    journal.flush()  # nothing left: no write
    assert journal.entries() == [{"kind": "start", "id": "c1"}]
    assert RunJournal(runtime.redis, runtime.keys, "task-y").entries() == journal.entries()
