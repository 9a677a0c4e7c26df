"""Conditions and conditional triggers: atoms, short-circuit, chains, cooldown, file watching."""

from __future__ import annotations

import os
import time
from pathlib import Path

from scheduling_helpers import add_trigger, fired

from mimikit.models import Result, Task, utcnow
from mimikit.scheduling import conditions, llm_eval, triggers
from mimikit.scheduling.cron import Cron
from mimikit.supervisor import tick as supervisor

DONE = {"status": "done", "resultType": "text", "result": {"text": "ok"}}


def finish(runtime, task: Task, status: str = "done") -> Result:
    """Complete ``task`` as a worker would, then route its result."""
    runtime.tasks.start(task.id, "test:1:x", None, lambda _o: True)
    if status == "done":
        result = Result(id=task.id, status="done", result={"text": "ok"})
    else:
        result = Result(id=task.id, status="failed", error="broken")
    runtime.tasks.complete(result)
    if task.triggerId:  # as the worker does: a fired task's result is its trigger's result
        runtime.redis.set(runtime.keys.result(task.triggerId), result.model_dump_json())
    triggers.on_result(runtime, runtime.tasks.require(task.id), result)
    return result


def oneshot(runtime, prompt: str = "step") -> Task:
    task = Task(prompt=prompt)
    runtime.tasks.add([task])
    return task


def on_done(task_id: str) -> dict:
    return {"type": "task_done", "params": {"taskId": task_id}}


def test_chain_a_b_c_runs_each_step_once_per_completion(runtime):
    a = oneshot(runtime, "A")
    b = add_trigger(runtime, type="conditional", condition=on_done(a.id), cooldown=0)
    c = add_trigger(runtime, type="conditional", condition=on_done(b.id), cooldown=0)
    assert fired(runtime, b.id) == [] and fired(runtime, c.id) == []
    finish(runtime, a)
    assert len(fired(runtime, b.id)) == 1 and fired(runtime, c.id) == []
    finish(runtime, fired(runtime, b.id)[0])
    assert len(fired(runtime, c.id)) == 1
    # The same completion routed again (a redelivery) fires nothing new.
    triggers.on_result(runtime, a, runtime.tasks.result(a.id))
    assert len(fired(runtime, b.id)) == 1
    finish(runtime, fired(runtime, c.id)[0])
    assert len(fired(runtime, b.id)) == 1 and len(fired(runtime, c.id)) == 1


def test_task_failed_branch_fires_only_when_the_task_fails(runtime):
    a, a2 = oneshot(runtime, "A"), oneshot(runtime, "A2")
    on_fail = {"type": "task_failed", "params": {"taskId": a.id}}
    done_branch = add_trigger(runtime, type="conditional", condition=on_done(a.id))
    fail_branch = add_trigger(runtime, type="conditional", condition=on_fail)
    other = add_trigger(runtime, type="conditional",
                        condition={"type": "task_failed", "params": {"taskId": a2.id}})
    finish(runtime, a, "failed")
    assert fired(runtime, done_branch.id) == []
    assert len(fired(runtime, fail_branch.id)) == 1
    finish(runtime, a2, "done")
    assert fired(runtime, other.id) == []


def test_true_deterministic_part_short_circuits_llm_eval(runtime):
    Path(runtime.settings.work_dir, "ready.flag").write_text("x")
    a = oneshot(runtime)
    condition = {"type": "or", "conditions": [
        {"type": "llm_eval", "params": {"prompt": "is the release blocked?"}},
        {"type": "and", "conditions": [
            {"type": "file_exists", "params": {"path": "ready.flag"}}, on_done(a.id)]}]}
    trigger = add_trigger(runtime, type="conditional", condition=condition, cooldown=3600)
    assert [c["triggerId"] for c in llm_eval.pending_conditions(runtime)] == [trigger.id]
    finish(runtime, a)
    assert len(fired(runtime, trigger.id)) == 1
    assert llm_eval.pending_conditions(runtime) == []  # cooling down, nothing to ask
    assert runtime.redis.hlen(runtime.keys.verdicts) == 0


def test_undecided_composite_asks_only_for_its_llm_atom(runtime):
    a = oneshot(runtime)
    condition = {"type": "and", "conditions": [
        {"type": "llm_eval", "params": {"prompt": "tests pass?"}}, on_done(a.id)]}
    trigger = add_trigger(runtime, type="conditional", condition=condition)
    ctx = conditions.Context(runtime, trigger)
    assert conditions.evaluate(trigger.condition, ctx).value is False  # A not done: decided
    assert llm_eval.pending_conditions(runtime) == []
    finish(runtime, a)
    assert fired(runtime, trigger.id) == []
    assert llm_eval.pending_conditions(runtime) == [
        {"id": f"{trigger.id}:c.0", "prompt": "tests pass?", "triggerId": trigger.id}]
    llm_eval.store_verdicts(runtime, [{"id": f"{trigger.id}:c.0", "satisfied": True}])
    assert triggers.evaluate_and_fire(runtime, trigger.id, cause="verdict")
    assert len(fired(runtime, trigger.id)) == 1


def test_file_changed_glob_baseline_change_and_no_refire(runtime):
    src = Path(runtime.settings.work_dir, "src", "deep")
    src.mkdir(parents=True)
    (src / "a.ts").write_text("one")
    trigger = add_trigger(runtime, type="conditional",
                          condition={"type": "file_changed", "params": {"path": "src/**/*.ts"}})
    assert supervisor.fire_watched(runtime, utcnow()) == []  # the baseline does not fire
    (src / "notes.md").write_text("not matched")
    assert supervisor.fire_watched(runtime, utcnow()) == []
    _touch(src / "a.ts")
    assert supervisor.fire_watched(runtime, utcnow()) == [trigger.id]
    assert supervisor.fire_watched(runtime, utcnow()) == []
    (src / "b.ts").write_text("new file")
    assert supervisor.fire_watched(runtime, utcnow()) == [trigger.id]
    assert len(fired(runtime, trigger.id)) == 2


def test_file_exists_fires_once_when_the_file_appears(runtime):
    trigger = add_trigger(runtime, type="conditional",
                          condition={"type": "file_exists", "params": {"path": ".deploy"}})
    assert supervisor.fire_watched(runtime, utcnow()) == []
    Path(runtime.settings.work_dir, ".deploy").write_text("go")
    assert supervisor.fire_watched(runtime, utcnow()) == [trigger.id]
    assert supervisor.fire_watched(runtime, utcnow()) == []
    assert len(fired(runtime, trigger.id)) == 1


def test_cooldown_holds_a_firing_back_until_it_ends(runtime):
    path = Path(runtime.settings.work_dir, "watched.txt")
    path.write_text("v1")
    trigger = add_trigger(runtime, type="conditional", cooldown=1.5,
                          condition={"type": "file_changed", "params": {"path": "watched.txt"}})
    _touch(path)
    assert supervisor.fire_watched(runtime, utcnow()) == [trigger.id]
    _touch(path)
    assert supervisor.fire_watched(runtime, utcnow()) == []  # cooling down
    time.sleep(1.6)
    assert supervisor.fire_watched(runtime, utcnow()) == [trigger.id]
    assert len(fired(runtime, trigger.id)) == 2


def test_unschedule_removes_every_index_of_a_trigger(runtime):
    a = oneshot(runtime)
    condition = {"type": "or", "conditions": [
        on_done(a.id), {"type": "file_exists", "params": {"path": "x"}},
        {"type": "llm_eval", "params": {"prompt": "p"}}]}
    trigger = add_trigger(runtime, type="conditional", condition=condition)
    keys = runtime.keys
    assert runtime.redis.sismember(keys.dependents(a.id), trigger.id)
    runtime.tasks.request_cancel(trigger.id)
    triggers.unschedule(runtime, trigger)
    assert not runtime.redis.sismember(keys.dependents(a.id), trigger.id)
    assert not runtime.redis.sismember(keys.file_triggers, trigger.id)
    assert not runtime.redis.sismember(keys.llm_triggers, trigger.id)
    finish(runtime, a)
    assert fired(runtime, trigger.id) == []


def test_cron_times_are_computed_in_utc_minutes():
    from datetime import UTC, datetime

    cron = Cron.parse("*/15 9 * * 1")  # Mondays 09:00, 09:15, ...
    sunday = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert cron.next_after(sunday) == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    monday_late = datetime(2026, 3, 2, 9, 50, tzinfo=UTC)
    assert cron.latest_in(sunday, monday_late) == datetime(2026, 3, 2, 9, 45, tzinfo=UTC)
    for bad in ("* * *", "61 * * * *", "* * 31 2 *"):
        try:
            Cron.parse(bad)
        except ValueError as error:
            assert repr(bad) in str(error)
        else:
            raise AssertionError(f"{bad!r} was accepted")


def _touch(path: Path) -> None:
    stamp = time.time() + 5
    os.utime(path, (stamp, stamp))
    path.write_text(path.read_text() + ".")


def test_overlapping_runs_of_a_recurring_predecessor_each_fire_the_next_step(runtime):
    from scheduling_helpers import add_trigger, fired

    from mimikit.models import IntervalSchedule, Result, Task

    a = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=3600))
    b = add_trigger(runtime, type="conditional",
                    condition={"type": "task_done", "params": {"taskId": a.id}})
    runs = runtime.tasks.add([Task(prompt="run 1", triggerId=a.id),
                                    Task(prompt="run 2", triggerId=a.id)])
    results = []
    for run in runs:  # both finish before either result is routed
        runtime.tasks.start(run.id, f"h:{run.id}", None, lambda _h: True)
        result = Result(id=run.id, status="done", result={"text": run.prompt})
        runtime.tasks.complete(result)
        results.append(result)
    for run, result in zip(runs, results, strict=True):
        triggers.on_result(runtime, runtime.tasks.require(run.id), result)
    assert len(fired(runtime, b.id)) == 2


def test_file_changed_inside_and_counts_changes_since_install(runtime):
    watched = Path(runtime.settings.work_dir, "watched.txt")
    watched.write_text("v1")
    a = oneshot(runtime, "A")
    trigger = add_trigger(runtime, type="conditional", condition={"type": "and", "conditions": [
        on_done(a.id), {"type": "file_changed", "params": {"path": "watched.txt"}}]})
    _touch(watched)  # changed after install, while task_done(A) still short-circuits the and
    assert fired(runtime, trigger.id) == []
    finish(runtime, a)
    assert len(fired(runtime, trigger.id)) == 1


def test_file_exists_inside_and_means_the_file_exists_now(runtime):
    from mimikit.models import IntervalSchedule

    Path(runtime.settings.work_dir, ".deploy").write_text("go")
    recurring = add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=3600))
    deploy = add_trigger(runtime, type="conditional", condition={"type": "and", "conditions": [
        on_done(recurring.id), {"type": "file_exists", "params": {"path": ".deploy"}}]})
    for n in (1, 2):  # two runs of the recurring step, the file unchanged between them
        run = Task(prompt=f"run {n}", triggerId=recurring.id)
        runtime.tasks.add([run])
        finish(runtime, run)
        assert len(fired(runtime, deploy.id)) == n


def test_a_trigger_whose_glob_leaves_the_work_dir_does_not_stop_the_tick(runtime):
    from datetime import timedelta

    from mimikit.models import PendingQuestion
    from mimikit.supervisor.tick import tick

    # Stored as an older version accepted it: an absolute glob outside the work dir.
    bad = add_trigger(runtime, type="conditional", title="watch etc",
                      condition={"type": "file_changed", "params": {"path": "/etc/*.conf"}})
    Path(runtime.settings.work_dir, "ok.txt").write_text("v1")
    good = add_trigger(runtime, type="conditional",
                       condition={"type": "file_changed", "params": {"path": "ok.txt"}})
    runtime.conversation.ask(PendingQuestion(question="Deploy?", default="no", timeout=1,
                                               createdAt=utcnow() - timedelta(seconds=5)))
    assert runtime.tasks.require(bad.id).status == "queued"  # one failure: kept for now
    _touch(Path(runtime.settings.work_dir, "ok.txt"))
    done = tick(runtime)  # its restore (the sweep) and its file check fail too: three in a row
    assert done["expired"] is True and runtime.conversation.question() is None
    assert len(fired(runtime, good.id)) == 1
    failed = runtime.tasks.require(bad.id)
    assert failed.status == "failed" and "outside the work directory" in failed.error
    assert not runtime.redis.sismember(runtime.keys.file_triggers, bad.id)
    assert any(m.text.startswith("Trigger failed: watch etc") and m.taskId == bad.id
               for m in runtime.conversation.recent(10))
