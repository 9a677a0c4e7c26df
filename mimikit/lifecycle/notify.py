"""Step: the person hears of a finished task when they should, once.

What reaches the chat: failures, questions, cancels (the Teller hears of those the Planner
or the Teller made from them, not as a notice), the results of a plan that delegated
nothing, and the last step of a chain; an intermediate step (another trigger waits on it) and a
routine run of recurring work stay in the task panel and cost no Teller call. A task's (or its
trigger's) ``notify`` says otherwise: ``always``, ``on_change`` (its result differs from the
previous firing's), ``on_failure`` (the default of recurring work) or ``never``. A role's
``report`` decides first (the ``llm_eval`` verdicts are never reported; a Planner's plan
reports through its delegations). What the person hears is queued for the Teller in the
transaction that records the outcome, so it is told even if the process dies right after; the
line in the chat names the dependents that will not run because of it.
"""

from __future__ import annotations

import hashlib
import json

from mimikit.conversation.gate import wake
from mimikit.lifecycle.actions import with_actions
from mimikit.lifecycle.event import REPORTED_CANCELS, Completion
from mimikit.models import Result, Task, utcnow
from mimikit.roles import role
from mimikit.store.inbox import NoticeItem, ResultItem
from mimikit.store.runtime import Runtime
from mimikit.store.writepipe import WritePipe

DEFAULT_NOTIFY = {"recurring": "on_failure", "scheduled": "always", "conditional": "final"}


def before(runtime: Runtime, completion: Completion) -> None:
    completion.tell = _worth_telling(runtime, completion)


def within(runtime: Runtime, completion: Completion, pipe: WritePipe) -> None:
    if not completion.tell:
        return
    task = completion.task
    if completion.result is None:
        if completion.canceled not in REPORTED_CANCELS:
            runtime.inbox.queue_push(pipe, NoticeItem(
                text=f"task {task.id} was {completion.canceled}", taskId=task.id,
                traceId=task.traceId))
        return
    runtime.inbox.queue_push(pipe, ResultItem(taskId=task.id, role=task.role,
                                              status=completion.status, traceId=task.traceId))


def after(runtime: Runtime, completion: Completion) -> None:
    if completion.task.role == "llm_eval":
        _note_batch(runtime, completion)
    if not completion.tell:
        return
    line = _chat_line(runtime, completion)
    if line:
        runtime.conversation.system(line, taskId=completion.task.id,
                                    traceId=completion.task.traceId)
    wake(runtime)


def _worth_telling(runtime: Runtime, completion: Completion) -> bool:
    if completion.quiet:
        return False
    if completion.canceled is not None:
        return True
    task, result = completion.task, completion.result
    assert result is not None
    report = role(task.role).report
    if report == "never":
        return False
    if report == "plan":
        return not (completion.status == "done" and completion.delivery.staged)
    return worth_reporting(runtime, task, result)


def worth_reporting(runtime: Runtime, task: Task, result: Result) -> bool:
    """Whether the person should hear of ``result`` by its task's (or trigger's) policy."""
    trigger = runtime.tasks.get(task.triggerId) if task.triggerId else None
    owner = trigger or task  # a fired task follows its trigger's choice, a oneshot its own
    policy = owner.notify or DEFAULT_NOTIFY.get(owner.type, "final")
    if policy == "never":
        return False
    if result.status != "done":
        return True  # failures and questions always
    if policy == "final":
        return not _awaited(runtime, task)
    if policy == "on_change":
        return _changed(runtime, task.triggerId or task.id, result)
    return policy == "always"


def _awaited(runtime: Runtime, task: Task) -> bool:
    """True when a trigger waits on this task (or on the trigger that fired it)."""
    pipe = runtime.redis.pipeline(transaction=False)
    for ref in (task.id, task.triggerId):
        if ref:
            pipe.scard(runtime.keys.dependents(ref))
    return any(pipe.execute())


def _changed(runtime: Runtime, trigger_id: str, result: Result) -> bool:
    """True when this result differs from the trigger's previous one (the first one counts)."""
    body = json.dumps(result.result, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(body.encode()).hexdigest()
    previous = runtime.redis.getset(runtime.keys.meta(f"lastresult:{trigger_id}"), digest)
    return previous is None or previous.decode() != digest


def _chat_line(runtime: Runtime, completion: Completion) -> str | None:
    """The system message of a finished task (a Planner's results reach the chat through the
    Teller, but for its failures); a failed Worker's says what its run did (a small model
    reports failing at what it did)."""
    task, status = completion.task, completion.status
    if status == "canceled":
        return f"Task canceled: {completion.label} ({task.id})"
    if status == "failed":
        assert completion.result is not None
        text = f"Task failed: {completion.label} — {completion.result.error}"
        if task.role == "worker":
            text = with_actions(runtime, task.id, text)
    elif role(task.role).report == "policy":
        text = f"Task completed: {completion.label}"
    else:
        return None
    if completion.retired:
        names = ", ".join(t.title or t.prompt[:60] for t in completion.retired)
        text += f". Not run, since it waited on this: {names}"
    return text


def _note_batch(runtime: Runtime, completion: Completion) -> None:
    """Keep how the latest ``llm_eval`` batch ended, for ``mimikit status`` and the page."""
    result = completion.result
    note = {"taskId": completion.task.id, "status": completion.status,
            "error": result.error if result else completion.canceled,
            "at": utcnow().isoformat()}
    runtime.redis.set(runtime.keys.meta("llm_eval_last"), json.dumps(note))
