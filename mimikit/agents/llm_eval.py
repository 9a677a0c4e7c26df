"""The ``llm_eval`` judge: every pending semantic condition judged in ONE LLM run.

Beat sends ``mimikit.llm_eval_batch`` every ``LLM_EVAL_INTERVAL`` at the system priority (ahead of
every worker task). The batch collects the pending conditions (``scheduling.llm_eval``); with none
it returns without calling the LLM. The judge may read the work dir and answers with
``submit_verdicts``; the satisfied triggers fire, and the Teller is never woken by verdicts.
A batch whose LLM is away waits for it like any task (``lifecycle.waiting``); no other batch is
made meanwhile, so no condition is judged twice.
"""

from __future__ import annotations

import logging
from typing import Any

from mimikit.agents.common import run_role
from mimikit.agents.prompts import system_prompt
from mimikit.lifecycle.execution import RunControl, execute
from mimikit.lifecycle.submit import submit
from mimikit.models import Result, Task
from mimikit.scheduling.llm_eval import (
    fire_satisfied,
    holding,
    parse,
    pending_conditions,
    render,
    store_verdicts,
)
from mimikit.store import lease
from mimikit.store.identity import owner_alive, owner_token
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime
from mimikit.tools.context import ToolContext
from mimikit.workspace.local import Workspace
from mimikit.workspace.sandbox import sandbox_for
from mimikit.workspace.slots import slots_for

log = logging.getLogger("mimikit.llm_eval")


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
        if _batch_waiting_for_model(runtime):  # it judges its conditions once the LLM is back
            return {"conditions": 0, "skipped": "a batch waits for the model"}
        found = pending_conditions(runtime)
        if not found:
            return {"conditions": 0}
        task = Task(role="llm_eval", prompt=render(found), priority=10,
                    title=f"llm_eval batch of {len(found)} conditions")
        submit(runtime, [task], note="llm_eval batch", start_now=False)  # judged right here
        task_id = task.id
    else:
        found = parse(runtime.tasks.require(task_id).prompt)
    trigger_ids = sorted({c["triggerId"] for c in found})
    timeout = runtime.settings.timeout_for("worker")
    with holding(runtime, trigger_ids, timeout + 60):
        decision = execute(runtime, task_id, celery_id, timeout,
                           lambda control: _judge(runtime, control, found))
    fired = fire_satisfied(runtime, trigger_ids) if decision.outcome == "started" else []
    return {"conditions": len(found), "taskId": task_id, "outcome": decision.outcome,
            "fired": fired}


def _batch_waiting_for_model(runtime: Runtime) -> bool:
    ids = [as_text(i) for i in runtime.redis.zrange(runtime.keys.waiting_for_model, 0, -1)]
    return any(task.role == "llm_eval" for task in runtime.tasks.by_id(ids))


def _judge(runtime: Runtime, control: RunControl, found: list[dict[str, str]]) -> Result:
    task, settings = control.task, runtime.settings
    ctx = ToolContext(runtime=runtime, role="llm_eval", trace_id=task.traceId, task=task,
                      workspace=Workspace(settings.work_dir, private=(settings.state_dir,),
                                          sandbox=sandbox_for(settings), slots=slots_for(settings)))
    record = run_role(runtime, ctx, system_prompt("llm_eval"), task.prompt,
                      control.remaining(), on_step=control.step,
                      owners=(task.id,))
    if record.status != "stopped" or not isinstance(record.stopValue, dict):
        error = record.error or "the evaluation ended without calling submit_verdicts"
        return Result(id=task.id, status="failed", error=error, attempts=task.attempts)
    verdicts = record.stopValue["verdicts"]
    store_verdicts(runtime, verdicts)
    satisfied = sum(1 for v in verdicts if v["satisfied"])
    text = f"{satisfied} of {len(verdicts)} conditions satisfied"
    return Result(id=task.id, status="done", result={"text": text}, attempts=task.attempts)
