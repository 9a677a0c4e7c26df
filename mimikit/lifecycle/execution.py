"""One delivery of a task: claim it, keep its heartbeat, run its body, hand its end on.

Every Celery delivery of a Planner, Worker or ``llm_eval`` task goes through ``execute``: a
delivery of a task that already finished routes its stored result once more (a crash may have
come between the record and the routing) and does nothing else; one that another live process
is running does nothing; a canceled task stops at its next check. How the body ended goes
through the completion pipeline (``pipeline.finish``), or back to the queue when its retry
policy allows another attempt.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from redis.exceptions import RedisError

from mimikit import logs
from mimikit.delivery.retry import may_retry, next_attempt_at
from mimikit.exceptions import MimikitError, TaskCanceled, TaskTimedOut
from mimikit.lifecycle.event import Completion, Delivery
from mimikit.lifecycle.pipeline import finish
from mimikit.lifecycle.routing import route_again
from mimikit.models import Result, Task, utcnow
from mimikit.spending.budget import BudgetExceeded
from mimikit.store.identity import owner_alive, owner_token
from mimikit.store.outage import when_back
from mimikit.store.runtime import Runtime
from mimikit.store.tasks import StartDecision
from mimikit.workspace.procgroup import kill_live_process_groups

log = logging.getLogger("mimikit.execution")


@dataclass
class RunControl:
    """What a running body may consult: cancellation and the deadline; and where it puts what
    its delivery produced besides the result (``delivery``)."""

    task: Task
    runtime: Runtime
    deadline: float
    delivery: Delivery = field(default_factory=Delivery)
    cancel_event: threading.Event = field(default_factory=threading.Event)
    superseded: threading.Event = field(default_factory=threading.Event)
    stoppers: list[Callable[[], None]] = field(default_factory=list)

    def check(self) -> None:
        """Raise if the task was canceled or ran past its deadline (call at each step)."""
        if self.superseded.is_set():
            raise TaskCanceled(f"task {self.task.id} is now run by another delivery")
        if self.cancel_event.is_set() or self.runtime.tasks.cancel_requested(self.task.id):
            self.cancel_event.set()
            raise TaskCanceled(f"task {self.task.id} was canceled")
        if time.monotonic() > self.deadline:
            raise TaskTimedOut(f"task {self.task.id} timed out after {self.timeout:.0f} s")

    def on_stop(self, stop: Callable[[], None]) -> None:
        """Call ``stop`` (once) when the run must stop at once: canceled, past its deadline, or
        taken over by another delivery (e.g. kill the shell command it waits for)."""
        self.stoppers.append(stop)

    @property
    def timeout(self) -> float:
        return self.task.timeout or 0.0

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)


def execute(runtime: Runtime, task_id: str, celery_id: str | None, default_timeout: float,
            body: Callable[[RunControl], Result]) -> StartDecision:
    """Run one delivery of ``task_id`` through ``body`` and hand on how it ended.

    Redis going away does not lose the delivery: its start and its end are written once
    Redis is back, and a body that Redis interrupted is run again by a new delivery.
    """
    owner = owner_token(celery_id)
    decision = when_back(lambda: runtime.tasks.start(task_id, owner, celery_id, owner_alive),
                         f"starting {task_id}")
    if decision.outcome != "started" or decision.task is None:
        _not_started(runtime, decision, celery_id)
        return decision
    task = decision.task
    logs.bind(taskId=task.id, traceId=task.traceId)
    task.timeout = task.timeout or default_timeout
    control = RunControl(task=task, runtime=runtime, deadline=time.monotonic() + task.timeout,
                         delivery=Delivery(celery_id=celery_id))
    stop = threading.Event()
    beat = threading.Thread(target=_keep_heartbeat, args=(runtime, control, owner, stop),
                            name=f"heartbeat-{task_id}", daemon=True)
    beat.start()
    try:
        result = _run_body(body, control)
    except RedisError as error:
        cause = str(error)
        when_back(lambda: _run_again(runtime, task, cause), f"re-queueing {task_id}")
        return decision
    finally:
        stop.set()
        beat.join(timeout=5)
    when_back(lambda: _settle(runtime, control, result), f"recording {task_id}")
    return decision


def _not_started(runtime: Runtime, decision: StartDecision, celery_id: str | None) -> None:
    log.info("delivery of %s ignored: %s %s", getattr(decision.task, "id", "?"), decision.outcome,
             decision.detail)
    task = decision.task
    if task is None:
        return
    if decision.outcome == "finished" and decision.detail in ("done", "failed"):
        route_again(runtime, task)
    elif decision.outcome == "canceled":  # canceled while no delivery ran it
        reason = runtime.tasks.cancel_reason(task.id) or "canceled"
        finish(runtime, Completion(task=task, canceled=reason,
                                   delivery=Delivery(celery_id=celery_id)))


def _settle(runtime: Runtime, control: RunControl, result: Result) -> None:
    """Hand on how the body ended: another attempt, or the completion pipeline."""
    task = control.task
    if control.superseded.is_set():
        log.warning("delivery of %s stopped: another delivery holds it now", task.id)
        return
    if control.cancel_event.is_set():
        reason = runtime.tasks.cancel_reason(task.id) or "canceled while running"
        finish(runtime, Completion(task=task, canceled=reason, delivery=control.delivery))
        return
    if result.status == "failed" and _retry_later(runtime, task, result):
        return
    finish(runtime, Completion(task=task, result=result, delivery=control.delivery))


def _run_again(runtime: Runtime, task: Task, cause: str) -> Task | None:
    """Redis went away while the body ran: run the task again, this attempt not counted.

    The task is deferred until now, so the next supervisor tick sends it again; nothing
    happens when it finished or another delivery took it over meanwhile.
    """
    reason = f"interrupted while Redis was unreachable ({cause}); it runs again"
    log.warning("task %s %s", task.id, reason)

    def change(current: Task) -> Task | None:
        if current.status != "running" or current.celeryId != task.celeryId:
            return None
        current.status, current.deferUntil, current.error = "deferred", utcnow(), reason
        current.attempts = max(current.attempts - 1, 0)
        return current

    def note(pipe: Any, before: Task, after: Task) -> None:
        pipe.delete(runtime.keys.heartbeat(task.id))
        pipe.log(runtime.keys, "task_retry_scheduled", taskId=task.id, traceId=task.traceId,
                 attempts=after.attempts, reason=reason)

    return runtime.tasks.update(task.id, change, note)


def _retry_later(runtime: Runtime, task: Task, result: Result) -> bool:
    """Defer a failed task for another attempt when its retry policy allows one."""
    if not may_retry(task):
        return False
    until = next_attempt_at(task, utcnow())

    def fresh_start(pipe: Any, _task: Task) -> None:
        pipe.delete(runtime.keys.journal(task.id))  # the next attempt does not replay this one

    deferred = runtime.tasks.set_status(task.id, "deferred", reason=result.error,
                                        deferUntil=until, also=fresh_start)
    return deferred is not None


def _run_body(body: Callable[[RunControl], Result], control: RunControl) -> Result:
    task = control.task
    try:
        return body(control)
    except TaskCanceled:
        if not control.superseded.is_set():
            control.cancel_event.set()
        return _failed(task, "canceled")
    except SoftTimeLimitExceeded:
        # Celery's revoke(terminate, SIGUSR1) or its soft time limit: stop child processes,
        # then tell a cancel from a timeout by what the store says.
        kill_live_process_groups()
        if control.runtime.tasks.cancel_requested(task.id):
            control.cancel_event.set()
            return _failed(task, "canceled")
        return _failed(task, f"timed out after {control.timeout:.0f} s")
    except BudgetExceeded as error:
        control.delivery.budget_scope, control.delivery.budget_ident = error.scope, error.ident
        return _failed(task, str(error))
    except MimikitError as error:
        log.warning("task %s failed: %s", task.id, error)
        return _failed(task, str(error))
    except RedisError:
        raise  # the store is away: the heartbeat lapses and recovery re-runs the task
    except Exception as error:  # a bug must fail the task with its reason, not strand it
        log.exception("task %s crashed", task.id)
        return _failed(task, f"internal error: {type(error).__name__}: {error}")


def _failed(task: Task, error: str) -> Result:
    return Result(id=task.id, status="failed", error=error, attempts=task.attempts,
                  traceId=task.traceId)


def _keep_heartbeat(runtime: Runtime, control: RunControl, owner: str,
                    stop: threading.Event) -> None:
    """Renew the heartbeat; on cancel, past the deadline, or when another delivery took the
    task over (our heartbeat lapsed), stop what the run waits for."""
    interval = min(max(runtime.tasks.heartbeat_seconds / 3, 0.2), 1.0)
    fired = False
    while not stop.wait(interval):
        try:
            ours = runtime.tasks.beat(control.task.id, owner)
            canceled = runtime.tasks.cancel_requested(control.task.id)
        except RedisError as error:  # Redis briefly unreachable: keep running, try again
            log.warning("heartbeat of %s failed: %s", control.task.id, error)
            continue
        late = time.monotonic() > control.deadline
        if not ours:
            control.superseded.set()
        if (canceled or late or not ours) and not fired:
            if canceled:
                control.cancel_event.set()
            fired = True
            for stop_now in control.stoppers:
                stop_now()
