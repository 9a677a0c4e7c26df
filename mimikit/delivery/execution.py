"""One delivery of a task: claim it, keep its heartbeat, run its body, record its result.

Every Celery delivery goes through ``execute``: a delivery of a task that already finished, or
that another live process is running, does nothing; a canceled task stops at its next check.
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
from mimikit.exceptions import MimikitError
from mimikit.models import Result, Task, utcnow
from mimikit.store.identity import owner_alive, owner_token
from mimikit.store.outage import when_back
from mimikit.store.state import StartDecision, StateStore
from mimikit.workspace.procgroup import kill_live_process_groups

log = logging.getLogger("mimikit.execution")


class TaskCanceled(MimikitError):
    """Raised inside a task body when its task was canceled while it ran."""


class TaskTimedOut(MimikitError):
    """Raised inside a task body when its task ran past its timeout."""


@dataclass
class RunControl:
    """What a running body may consult: cancellation and the deadline."""

    task: Task
    state: StateStore
    deadline: float
    cancel_event: threading.Event = field(default_factory=threading.Event)
    superseded: threading.Event = field(default_factory=threading.Event)
    on_cancel: list[Callable[[], None]] = field(default_factory=list)
    notify_teller: bool = True
    # Decides ``notify_teller`` from the result, once, before the result is written.
    report: Callable[[Task, Result], bool] | None = None
    commit_hooks: list[Callable[[Any, Task], None]] = field(default_factory=list)
    after_hooks: list[Callable[[Task, Result], object]] = field(default_factory=list)

    def check(self) -> None:
        """Raise if the task was canceled or ran past its deadline (call at each step)."""
        if self.superseded.is_set():
            raise TaskCanceled(f"task {self.task.id} is now run by another delivery")
        if self.cancel_event.is_set() or self.state.cancel_requested(self.task.id):
            self.cancel_event.set()
            raise TaskCanceled(f"task {self.task.id} was canceled")
        if time.monotonic() > self.deadline:
            raise TaskTimedOut(f"task {self.task.id} timed out after {self.timeout:.0f} s")

    @property
    def timeout(self) -> float:
        return self.task.timeout or 0.0

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)


def execute(state: StateStore, task_id: str, celery_id: str | None, default_timeout: float,
            body: Callable[[RunControl], Result]) -> StartDecision:
    """Run one delivery of ``task_id`` through ``body`` and record its result.

    Redis going away does not lose the delivery: its start and its result are written once
    Redis is back, and a body that Redis interrupted is run again by a new delivery.
    """
    owner = owner_token(celery_id)
    decision = when_back(lambda: state.start_task(task_id, owner, celery_id, owner_alive),
                         f"starting {task_id}")
    if decision.outcome != "started" or decision.task is None:
        log.info("delivery of %s ignored: %s %s", task_id, decision.outcome, decision.detail)
        return decision
    task = decision.task
    logs.bind(taskId=task.id, traceId=task.traceId)
    timeout = task.timeout or default_timeout
    control = RunControl(task=task, state=state, deadline=time.monotonic() + timeout)
    control.task.timeout = timeout
    stop = threading.Event()
    beat = threading.Thread(target=_keep_heartbeat, args=(state, control, owner, stop),
                            name=f"heartbeat-{task_id}", daemon=True)
    beat.start()
    try:
        result = _run_body(body, control)
    except RedisError as error:
        cause = str(error)
        when_back(lambda: _run_again(state, task, cause), f"re-queueing {task_id}")
        return decision
    finally:
        stop.set()
        beat.join(timeout=5)
    finished = when_back(lambda: _record(state, control, result), f"recording {task_id}")
    if finished is not None:
        for hook in control.after_hooks:
            hook(finished, result)
    return decision


def _record(state: StateStore, control: RunControl, result: Result) -> Task | None:
    """Write what a finished body came to; the finished task when its result was written."""
    task = control.task
    if control.superseded.is_set():
        log.warning("delivery of %s stopped: another delivery holds it now", task.id)
        return None
    if control.cancel_event.is_set():
        state.finish_canceled(task.id)
        return None
    if result.status == "failed" and _retry_later(state, task, result):
        return None
    if control.report is not None:
        control.notify_teller = control.report(task, result)
    return state.complete_task(result, notify_teller=control.notify_teller,
                               also=lambda pipe, done: _run_hooks(control, pipe, done))


def _run_again(state: StateStore, task: Task, cause: str) -> Task | None:
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
        pipe.delete(state.keys.heartbeat(task.id))
        pipe.log(state.keys, "task_retry_scheduled", taskId=task.id, traceId=task.traceId,
                 attempts=after.attempts, reason=reason)

    return state.update_task(task.id, change, note)


def _retry_later(state: StateStore, task: Task, result: Result) -> bool:
    """Defer a failed task for another attempt when its retry policy allows one."""
    if not may_retry(task):
        return False
    until = next_attempt_at(task, utcnow())
    deferred = state.set_status(task.id, "deferred", reason=result.error, deferUntil=until)
    return deferred is not None


def _run_hooks(control: RunControl, pipe: Any, task: Task) -> None:
    for hook in control.commit_hooks:
        hook(pipe, task)


def _run_body(body: Callable[[RunControl], Result], control: RunControl) -> Result:
    task = control.task
    try:
        return body(control)
    except TaskCanceled:
        if not control.superseded.is_set():
            control.cancel_event.set()
        return Result(id=task.id, status="failed", error="canceled", attempts=task.attempts)
    except SoftTimeLimitExceeded:
        # Celery's revoke(terminate, SIGUSR1) or its soft time limit: stop child processes,
        # then tell a cancel from a timeout by what the state store says.
        kill_live_process_groups()
        if control.state.cancel_requested(task.id):
            control.cancel_event.set()
            return Result(id=task.id, status="failed", error="canceled", attempts=task.attempts)
        return Result(id=task.id, status="failed", attempts=task.attempts,
                      error=f"timed out after {control.timeout:.0f} s")
    except TaskTimedOut as error:
        return Result(id=task.id, status="failed", error=str(error), attempts=task.attempts)
    except MimikitError as error:
        log.warning("task %s failed: %s", task.id, error)
        return Result(id=task.id, status="failed", error=str(error), attempts=task.attempts)
    except RedisError:
        raise  # the state store is away: the heartbeat lapses and recovery re-runs the task
    except Exception as error:  # a bug must fail the task with its reason, not strand it
        log.exception("task %s crashed", task.id)
        return Result(id=task.id, status="failed", attempts=task.attempts,
                      error=f"internal error: {type(error).__name__}: {error}")


def _keep_heartbeat(state: StateStore, control: RunControl, owner: str,
                    stop: threading.Event) -> None:
    """Renew the heartbeat; on cancel, past the deadline, or when another delivery took the
    task over (our heartbeat lapsed), run the cancel hooks."""
    interval = min(max(state.heartbeat_seconds / 3, 0.2), 1.0)
    fired = False
    while not stop.wait(interval):
        try:
            ours = state.beat(control.task.id, owner)
            canceled = state.cancel_requested(control.task.id)
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
            for hook in control.on_cancel:
                hook()
