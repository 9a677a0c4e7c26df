"""A running task shows each step as it happens; a stopped run keeps what it did."""

from __future__ import annotations

import json

from llm_server import delay, tool_call
from processes import wait_for

from mimikit.lifecycle.cancel import cancel_task
from mimikit.lifecycle.submit import submit
from mimikit.models import Task
from mimikit.tasks.listing import detail


def _run_events(runtime, task_id: str) -> list[dict]:
    return [json.loads(data)["step"] for _id, event, data in runtime.events.read("0-0", 1)
            if event == "run" and json.loads(data)["taskId"] == task_id]


def test_each_step_is_visible_and_published_before_the_task_ends(stack, llm):
    llm.script("worker", delay(0.8, tool_call("list_files")),
               delay(0.8, tool_call("write_file", path="notes.md", content="hello")),
               delay(2.0, tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "wrote notes"})))
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="write notes")])[0]
    live = wait_for(lambda: len(detail(stack, task.id)["live"]) >= 4 and detail(stack, task.id),
                    timeout=30, message="four live steps while the task runs")
    assert stack.tasks.require(task.id).status == "running"
    kinds = [(s["kind"], s.get("name")) for s in live["live"]]
    assert kinds[:4] == [("llm", None), ("tool", "list_files"), ("llm", None),
                         ("tool", "write_file")]
    assert live["live"][0]["usage"]["totalTokens"] > 0 and live["live"][3]["ok"] is True
    assert [s["kind"] for s in _run_events(stack, task.id)][:4] == ["llm", "tool", "llm", "tool"]
    wait_for(lambda: stack.tasks.require(task.id).status == "done", timeout=30,
             message="the task to finish")
    finished = detail(stack, task.id)
    assert finished["live"] == [] and finished["runs"][0]["status"] == "stopped"


def test_a_canceled_run_keeps_its_transcript_up_to_the_cancel(stack, llm):
    llm.script("worker", tool_call("list_files"),
               tool_call("shell", command="sleep 30", timeout=60))
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="wait a while")])[0]
    wait_for(lambda: len(stack.runs.live_steps(task.id)) >= 3, timeout=30,
             message="the shell step to start")
    ok, _message = cancel_task(stack, task.id, stop_running=True)
    assert ok
    wait_for(lambda: stack.tasks.require(task.id).status == "canceled", timeout=20,
             message="the cancel to land")
    runs = wait_for(lambda: stack.runs.of(task.id), timeout=10, message="the kept run")
    assert runs[0]["status"] == "canceled"
    assert [c["name"] for c in runs[0]["toolCalls"]][:1] == ["list_files"]
    assert stack.runs.live_steps(task.id) == []
