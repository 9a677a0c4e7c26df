"""The batched ``llm_eval``: every pending semantic condition judged in ONE LLM run.

Beat sends ``mimikit.llm_eval_batch`` every ``LLM_EVAL_INTERVAL`` at the system priority (ahead of
every worker task). It collects the ``llm_eval`` atoms of triggers whose condition is undecided
without them, that are not cooling down and not already under evaluation; with none it returns
without calling the LLM. Verdicts go to the supervisor, which fires the satisfied triggers; the
Teller is never woken by them.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

from mimikit import conditions, lease, triggers
from mimikit.execution import RunControl, execute, owner_alive, owner_token
from mimikit.keys import as_text
from mimikit.models import Result, Task, utcnow
from mimikit.prompts import build_system_prompt
from mimikit.runtime import Runtime

log = logging.getLogger("mimikit.llm_eval")
_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)


def pending_conditions(runtime: Runtime) -> list[dict[str, str]]:
    """The ``llm_eval`` atoms to judge now: ``[{id, prompt, triggerId}]``."""
    redis, keys = runtime.redis, runtime.keys
    ids = sorted(as_text(i) for i in redis.smembers(keys.llm_triggers))
    if not ids:
        return []
    now = utcnow()
    busy = {as_text(k): float(v) for k, v in redis.hgetall(keys.evaluating).items()}
    found: list[dict[str, str]] = []
    for trigger in runtime.state.tasks_by_id(ids):
        if trigger.finished or trigger.condition is None:
            redis.srem(keys.llm_triggers, trigger.id)
            continue
        if busy.get(trigger.id, 0) > now.timestamp():
            continue
        if triggers.cooling_until(trigger, now) is not None:
            continue
        evaluation = conditions.evaluate(trigger.condition, conditions.Context(runtime, trigger))
        if evaluation.value is True:  # decided without the LLM (e.g. a cooldown just ended)
            triggers.evaluate_and_fire(runtime, trigger.id, cause="llm_eval batch", trigger=trigger)
        elif evaluation.value is None:
            found += [{"id": f"{trigger.id}:{path}", "prompt": prompt, "triggerId": trigger.id}
                      for path, prompt in evaluation.pending]
    return found


def render(conditions_: list[dict[str, str]]) -> str:
    """The user message of a batch: the conditions as a JSON list of ``{id, prompt}``."""
    listed = [{"id": c["id"], "prompt": c["prompt"]} for c in conditions_]
    return ("Judge each of these conditions, then call submit_verdicts once.\n\n```json\n"
            + json.dumps(listed, ensure_ascii=False, indent=1) + "\n```")


def parse(prompt: str) -> list[dict[str, str]]:
    """The conditions listed in a batch task's prompt (the inverse of ``render``)."""
    match = _BLOCK.search(prompt)
    if not match:
        raise ValueError("the llm_eval task prompt has no ```json condition list")
    items: list[dict[str, str]] = json.loads(match.group(1))
    for item in items:
        item["triggerId"] = item["id"].rsplit(":", 1)[0]
    return items


def run_batch(runtime: Runtime, celery_id: str | None, task_id: str | None = None
              ) -> dict[str, Any]:
    """Collect and judge the pending conditions (or re-run batch ``task_id``).

    One batch at a time: a batch still running when the next interval comes makes that one
    skip, so no condition is collected twice.
    """
    key, owner = runtime.keys.meta("llm_eval_batch"), owner_token(celery_id)
    seconds = runtime.settings.timeout_for("worker") + 60
    if not lease.acquire(runtime.redis, key, owner, seconds, owner_alive):
        return {"conditions": 0, "skipped": "another batch is running"}
    try:
        return _run_batch(runtime, celery_id, task_id)
    finally:
        lease.release(runtime.redis, key, owner)


def _run_batch(runtime: Runtime, celery_id: str | None, task_id: str | None) -> dict[str, Any]:
    if task_id is None:
        found = pending_conditions(runtime)
        if not found:
            return {"conditions": 0}
        task = Task(role="llm_eval", prompt=render(found), priority=10,
                    title=f"llm_eval batch of {len(found)} conditions")
        runtime.state.add_tasks([task], note="llm_eval batch")
        task_id = task.id
    else:
        found = parse(runtime.state.require_task(task_id).prompt)
    trigger_ids = sorted({c["triggerId"] for c in found})
    timeout = runtime.settings.timeout_for("worker")
    until = time.time() + timeout + 60
    if trigger_ids:
        runtime.redis.hset(runtime.keys.evaluating, mapping=dict.fromkeys(trigger_ids, until))
    try:
        decision = execute(runtime.state, task_id, celery_id, timeout,
                           lambda control: _judge(runtime, control, found))
    finally:
        if trigger_ids:
            runtime.redis.hdel(runtime.keys.evaluating, *trigger_ids)
    fired = _fire_satisfied(runtime, trigger_ids) if decision.outcome == "started" else []
    return {"conditions": len(found), "taskId": task_id, "outcome": decision.outcome,
            "fired": fired}


def _judge(runtime: Runtime, control: RunControl, found: list[dict[str, str]]) -> Result:
    from mimikit.agents.common import run_role
    from mimikit.tools.context import ToolContext
    from mimikit.workspace import Workspace

    task, settings = control.task, runtime.settings
    control.notify_teller = False  # verdicts are the supervisor's, never the Teller's
    ctx = ToolContext(runtime=runtime, role="llm_eval", trace_id=task.traceId, task=task,
                      workspace=Workspace(settings.work_dir, private=(settings.state_dir,)))
    record = run_role(runtime, ctx, build_system_prompt("llm_eval"), task.prompt,
                      control.remaining(), on_step=lambda _record: control.check(),
                      owners=(task.id,))
    if record.status != "stopped" or not isinstance(record.stopValue, dict):
        error = record.error or "the evaluation ended without calling submit_verdicts"
        return Result(id=task.id, status="failed", error=error, attempts=task.attempts)
    verdicts = record.stopValue["verdicts"]
    store_verdicts(runtime, verdicts)
    satisfied = sum(1 for v in verdicts if v["satisfied"])
    text = f"{satisfied} of {len(verdicts)} conditions satisfied"
    return Result(id=task.id, status="done", result={"text": text}, attempts=task.attempts)


def store_verdicts(runtime: Runtime, verdicts: list[dict[str, Any]]) -> None:
    """Keep each verdict (with its time) where the conditions' ``llm_eval`` atoms read it."""
    at = utcnow().isoformat()
    mapping = {v["id"]: json.dumps({"satisfied": bool(v["satisfied"]), "at": at,
                                    "reason": v.get("reason")}) for v in verdicts}
    if mapping:
        runtime.redis.hset(runtime.keys.verdicts, mapping=mapping)
    runtime.state.log("llm_eval_verdicts", count=len(mapping),
                      satisfied=sum(1 for v in verdicts if v["satisfied"]))


def _fire_satisfied(runtime: Runtime, trigger_ids: list[str]) -> list[str]:
    return [tid for tid in trigger_ids
            if triggers.evaluate_and_fire(runtime, tid, cause="llm_eval verdict")]
