"""Steering triggers: edit, run now, pause and resume over the API, the Teller's tools and the
CLI, each checked as the Planner's tools are; spent conditional triggers retire themselves."""

from __future__ import annotations

import json

import pytest
from processes import run_mimikit
from scheduling_helpers import add_trigger, fired

from mimikit.agents.common import registry
from mimikit.lifecycle.event import Completion
from mimikit.lifecycle.pipeline import finish
from mimikit.models import IntervalSchedule, Result, Task
from mimikit.scheduling import entries
from mimikit.tools.context import ToolContext


@pytest.fixture
def client(runtime):
    from mimikit.web import create_app

    return create_app(runtime.settings).test_client()


def recurring(runtime, interval: float = 3600) -> Task:
    return add_trigger(runtime, type="recurring", title="digest",
                       schedule=IntervalSchedule(interval=interval))


def test_patch_changes_a_recurring_trigger_to_a_cron_and_says_its_next_runs(runtime, client):
    trigger = recurring(runtime)
    reply = client.patch(f"/api/tasks/{trigger.id}", json={"cron": "0 9 * * 1-5",
                                                           "prompt": "the morning digest"})
    assert reply.status_code == 200, reply.get_json()
    body = reply.get_json()
    assert len(body["nextRuns"]) == 3 and all("T09:00" in r for r in body["nextRuns"])
    stored = runtime.tasks.require(trigger.id)
    assert stored.prompt == "the morning digest"
    assert (stored.schedule.cron, stored.schedule.interval) == ("0 9 * * 1-5", None)
    assert stored.schedule.nextRunAt is not None and entries.entry_exists(trigger.id)
    assert any(e["type"] == "trigger_edited" for e in runtime.tasks.log_of(trigger.id))


@pytest.mark.parametrize(("body", "says"), [
    ({"cron": "every monday"}, "five fields"),
    ({"runAt": "2030-01-01T09:00:00"}, "cannot apply to a recurring trigger"),
    ({"interval": 60, "cron": "* * * * *"}, "either interval or cron"),
    ({"interval": "often"}, "is not a duration"),
    ({"colour": "red"}, "colour"),
    ({}, "nothing to change"),
])
def test_a_bad_edit_is_a_400_naming_the_problem_and_changes_nothing(runtime, client, body, says):
    trigger = recurring(runtime)
    before = runtime.redis.get(runtime.keys.task(trigger.id))
    reply = client.patch(f"/api/tasks/{trigger.id}", json=body)
    assert reply.status_code == 400 and says in reply.get_json()["error"]
    assert runtime.redis.get(runtime.keys.task(trigger.id)) == before


def test_a_condition_edit_is_checked_and_indexed_anew(runtime, client):
    a, b = runtime.tasks.add([Task(prompt="A"), Task(prompt="B")])
    trigger = add_trigger(runtime, type="conditional",
                          condition={"type": "task_done", "params": {"taskId": a.id}})
    outside = {"condition": {"type": "file_changed", "params": {"path": "../x"}}}
    assert client.patch(f"/api/tasks/{trigger.id}", json=outside).status_code == 400
    on_b = {"condition": {"type": "task_done", "params": {"taskId": b.id}}}
    assert client.patch(f"/api/tasks/{trigger.id}", json=on_b).status_code == 200
    assert not runtime.redis.sismember(runtime.keys.dependents(a.id), trigger.id)
    assert runtime.redis.sismember(runtime.keys.dependents(b.id), trigger.id)


def test_run_now_fires_once_even_a_paused_trigger(runtime, client):
    trigger = recurring(runtime)
    assert client.post(f"/api/tasks/{trigger.id}/pause").get_json()["success"]
    reply = client.post(f"/api/tasks/{trigger.id}/run")
    assert reply.status_code == 202
    assert [t.id for t in fired(runtime, trigger.id)] == [reply.get_json()["taskId"]]
    oneshot = runtime.tasks.add([Task(prompt="once")])[0]
    assert client.post(f"/api/tasks/{oneshot.id}/run").status_code == 409
    assert client.post("/api/tasks/task-none/run").status_code == 404


def test_pause_and_resume_move_the_beat_entry(runtime, client):
    trigger = recurring(runtime)
    assert client.post(f"/api/tasks/{trigger.id}/pause").get_json() == {
        "success": True, "message": "paused"}
    assert not entries.entry_exists(trigger.id)
    listed = client.get("/api/tasks?scope=triggers").get_json()["tasks"]
    assert listed[0]["status"] == "paused" and listed[0]["pausedReason"] == "paused by the user"
    again = client.post(f"/api/tasks/{trigger.id}/pause").get_json()
    assert again["success"] is False and "already paused" in again["message"]
    assert client.post(f"/api/tasks/{trigger.id}/resume").get_json()["success"]
    assert entries.entry_exists(trigger.id)


def test_the_teller_edits_and_pauses_triggers_with_the_same_checks(runtime):
    trigger = recurring(runtime)
    ctx = ToolContext(runtime=runtime, role="teller", trace_id="t")
    def manage(**args):
        return registry().call("teller", "manage_trigger",
                               json.dumps({"taskId": trigger.id, **args}), ctx)

    bad = manage(action="edit", changes={"cron": "61 * * * *"})
    assert not bad.ok and "invalid" in bad.content
    unknown = manage(action="edit", changes={"every": "2h"})
    assert not unknown.ok and "changes" in unknown.content and "every" in unknown.content
    good = manage(action="edit", changes={"interval": "2h"})
    assert good.ok and runtime.tasks.require(trigger.id).schedule.interval == 7200
    paused = manage(action="pause")
    assert paused.ok and runtime.tasks.require(trigger.id).paused


def test_the_cli_steers_a_trigger(runtime):
    trigger = recurring(runtime)
    assert run_mimikit("task", "pause", trigger.id).returncode == 0
    assert runtime.tasks.require(trigger.id).paused
    edited = run_mimikit("task", "edit", trigger.id, "--cron", "@daily")
    assert edited.returncode == 0 and "next run" in edited.stdout
    refused = run_mimikit("task", "edit", trigger.id, "--cron", "every day")
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert "five fields" in refused.stderr
    ran = run_mimikit("task", "run", trigger.id)
    assert ran.returncode == 0 and ran.stdout.startswith("running now as task-")
    assert run_mimikit("task", "resume", trigger.id).returncode == 0


def _complete(runtime, task: Task, status: str = "done") -> None:
    runtime.tasks.start(task.id, "h:1:x", None, lambda _h: True)
    if status == "done":
        result = Result(id=task.id, status="done", result={"text": "ok"})
    else:
        result = Result(id=task.id, status="failed", error="broken")
    finish(runtime, Completion(task=task, result=result, quiet=True))


def test_a_chain_step_that_ran_and_a_branch_that_cannot_run_retire(runtime):
    a = runtime.tasks.add([Task(prompt="A")])[0]
    b = add_trigger(runtime, type="conditional", title="B",
                    condition={"type": "task_done", "params": {"taskId": a.id}})
    on_failure = add_trigger(runtime, type="conditional", title="if A fails",
                             condition={"type": "task_failed", "params": {"taskId": a.id}})
    c = add_trigger(runtime, type="conditional", title="C",
                    condition={"type": "task_done", "params": {"taskId": b.id}})
    _complete(runtime, a)
    assert len(fired(runtime, b.id)) == 1
    statuses = {t.id: t.status for t in runtime.tasks.by_id([b.id, on_failure.id, c.id])}
    # B fired and did its work; the failure branch never ran: canceled, with the reason
    assert statuses == {b.id: "done", on_failure.id: "canceled", c.id: "queued"}
    assert "upstream A finished done" in runtime.tasks.require(on_failure.id).error
    _complete(runtime, fired(runtime, b.id)[0])  # B's run finishes: C fires, then retires
    assert len(fired(runtime, c.id)) == 1
    assert runtime.tasks.require(c.id).status == "done"
    assert runtime.triggers.all() == []
