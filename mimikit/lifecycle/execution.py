"""One delivery of a task: claim it, keep its heartbeat, run its body, hand its end on.

Every Celery delivery of a Planner, Worker or ``llm_eval`` task goes through ``execute``: a
delivery of a task that already finished routes its stored result once more (a crash may have
come between the record and the routing) and does nothing else; one that another live process
is running does nothing. How the body ended goes through the completion pipeline
(``pipeline.finish``), back to the queue when its retry policy allows another attempt, or to
the tasks waiting for the LLM (``waiting``) when the model stayed away. A task whose attempts
made the most LLM calls they may (``spent``) fails at once.

Stopping is cooperative, so it works on any Celery pool (threads, prefork, solo): the heartbeat
thread of the delivery notices a cancel, the deadline or a takeover, and calls the run's
stoppers, which kill that run's own shell and codex processes and cut its LLM request short
(``llm.abort``); the body then ends at its next check.
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
from mimikit.exceptions import LLMAway, LLMStopped, MimikitError, TaskCanceled, TaskTimedOut
from mimikit.lifecycle.event import Completion, Delivery
from mimikit.lifecycle.pipeline import finish
from mimikit.lifecycle.routing import route_again
from mimikit.lifecycle.spent import spent_reason
from mimikit.lifecycle.waiting import bring_forward, model_answered, wait_for_model
from mimikit.llm.abort import StopHandle, stoppable
from mimikit.models import Result, Task, utcnow
from mimikit.spending.budget import BudgetExceeded
from mimikit.store.identity import owner_alive, owner_token
from mimikit.store.outage import when_back
from mimikit.store.runtime import Runtime
from mimikit.store.tasks import StartDecision

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
    stopping: threading.Event = field(default_factory=threading.Event)  # set by ``stop_now``
    away: str | None = None  # why the LLM was away, when that ended the body
    answered: bool = False  # the LLM answered this run at least once
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self) -> None:
        """Raise if the task was canceled or ran past its deadline (call at each step)."""
        if self.superseded.is_set():
            raise TaskCanceled(f"task {self.task.id} is now run by another delivery")
        if self.cancel_event.is_set() or self.runtime.tasks.cancel_requested(self.task.id):
            self.cancel_event.set()
            raise TaskCanceled(f"task {self.task.id} was canceled")
        if time.monotonic() > self.deadline:
            raise TaskTimedOut(f"task {self.task.id} timed out after {self.timeout:.0f} s")

    def step(self, record: Any) -> None:
        """Before each LLM request of the run (``on_step``): the first one after an answer
        ends the task's wait for the model; then ``check``."""
        if record.steps and not self.answered:
            self.answered = True
            model_answered(self.runtime, self.task)
        self.check()

    def on_stop(self, stop: Callable[[], None]) -> None:
        """Call ``stop`` (once) when the run must stop at once: canceled, past its deadline, or
        taken over by another delivery (e.g. kill the shell command it waits for). Called at
        once when the run is stopping already."""
        with self._lock:
            self.stoppers.append(stop)
            now = self.stopping.is_set()
        if now:
            stop()

    def stop_now(self) -> None:
        """Call every stopper (the heartbeat thread does, once)."""
        with self._lock:
            self.stopping.set()
            stoppers = list(self.stoppers)
        for stop in stoppers:
            try:
                stop()
            except Exception:  # one failing stopper must not keep the others from running
                log.exception("stopping task %s", self.task.id)

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
    spent = when_back(lambda: spent_reason(runtime, task), f"reading what {task_id} spent")
    if spent is not None:  # its attempts made the most calls they may: not one more
        completion = Completion(task=task, result=_failed(task, spent),
                                delivery=Delivery(celery_id=celery_id))
        when_back(lambda: finish(runtime, completion), f"recording {task_id}")
        return decision
    task.timeout = task.timeout or default_timeout
    control = RunControl(task=task, runtime=runtime, deadline=time.monotonic() + task.timeout,
                         delivery=Delivery(celery_id=celery_id))
    requests = StopHandle()
    control.on_stop(requests.stop)
    stop = threading.Event()
    beat = threading.Thread(target=_keep_heartbeat, args=(runtime, control, owner, stop),
                            name=f"heartbeat-{task_id}", daemon=True)
    beat.start()
    try:
        with stoppable(requests):
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
    if control.away is not None:
        wait_for_model(runtime, task, control.away)
        return
    if result.status != "failed" or control.answered:  # the model answers: no more waiting
        bring_forward(runtime)
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
    try:
        return body(control)
    except RedisError:
        raise  # the store is away: the heartbeat lapses and recovery re-runs the task
    except Exception as error:  # every early end is said in the result, a bug's too
        return _ended_early(control, error)


def _ended_early(control: RunControl, error: Exception) -> Result:
    """The result of a body that raised ``error`` (called while it is being handled)."""
    task = control.task
    stopped = _stop_reason(control, error)
    if stopped is not None:
        return _failed(task, stopped)
    if isinstance(error, BudgetExceeded):
        control.delivery.budget_scope, control.delivery.budget_ident = error.scope, error.ident
        return _failed(task, str(error))
    if isinstance(error, LLMAway):
        control.away = str(error)
        return _failed(task, f"waiting for the model: {error}")
    if isinstance(error, MimikitError):
        log.warning("task %s failed: %s", task.id, error)
        return _failed(task, str(error))
    log.exception("task %s crashed", task.id)
    return _failed(task, f"internal error: {type(error).__name__}: {error}")


def _stop_reason(control: RunControl, error: Exception) -> str | None:
    """``canceled`` or the timeout, when the body ended because its run was stopped: by a
    cancel or a takeover (whatever it raised then), past its deadline, or by Celery's soft
    time limit (a pool that has one)."""
    if isinstance(error, TaskTimedOut) and not control.cancel_event.is_set():
        return str(error)
    stop_error = isinstance(error, TaskCanceled | LLMStopped | SoftTimeLimitExceeded)
    if control.superseded.is_set() or control.cancel_event.is_set() or (
            stop_error and control.runtime.tasks.cancel_requested(control.task.id)):
        if not control.superseded.is_set():
            control.cancel_event.set()
        return "canceled"
    if stop_error:
        return f"timed out after {control.timeout:.0f} s"
    return None


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
            ours, canceled = runtime.tasks.beat(control.task.id, owner)
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
            control.stop_now()
