"""What every agent run needs: the LLM client, the run record kept in the state store."""

from __future__ import annotations

import logging
import os
import time
from functools import cache
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from mimikit.delivery.execution import TaskCanceled, TaskTimedOut
from mimikit.llm.client import LLMClient
from mimikit.llm.loop import RunRecord, run_agent
from mimikit.llm.registry import Registry
from mimikit.store.runtime import Runtime
from mimikit.tools import eval_tools, planner_tools, task_tools, teller_tools, worker_tools
from mimikit.tools.context import MeteredClient, ToolContext

log = logging.getLogger("mimikit.agents")


_clients: dict[tuple[Any, ...], LLMClient] = {}


@cache
def registry() -> Registry:
    """The process-wide registry with every role's tools (the seeds' permission matrix)."""
    built = Registry(propagate=(TaskCanceled, TaskTimedOut, SoftTimeLimitExceeded))
    for module in (task_tools, teller_tools, planner_tools, worker_tools, eval_tools):
        module.register(built)
    return built


def client_for(runtime: Runtime) -> LLMClient:
    """The process's LLM client for these settings (building one costs ~30 ms of TLS setup)."""
    settings = runtime.settings
    key = (os.getpid(), settings.llm_base_url, settings.llm_api_key, settings.llm_timeout,
           settings.llm_retries)
    client = _clients.get(key)
    if client is None:
        client = _clients[key] = LLMClient.from_settings(settings)
    return client


def run_role(runtime: Runtime, ctx: ToolContext, system_prompt: str, user_prompt: str,
             timeout: float, on_step: Any = None, owners: tuple[str, ...] = ()) -> RunRecord:
    """Run one agent of ``ctx.role`` and keep its transcript under each of ``owners``."""
    settings = runtime.settings
    record = run_agent(
        MeteredClient(client_for(runtime), ctx), settings.model_for(ctx.role), ctx.role,
        system_prompt, user_prompt, registry(), ctx, settings.max_steps,
        deadline=time.monotonic() + timeout, on_step=on_step,
        text_ends_run=ctx.role == "teller",  # the others finish with submit_result/_verdicts
    )
    record.traceId = ctx.trace_id
    keep_run(runtime, record, owners)
    return record


def keep_run(runtime: Runtime, record: RunRecord, owners: tuple[str, ...]) -> None:
    body = record.model_dump(mode="json", exclude_none=True)
    for owner in owners:
        if owner:
            runtime.state.add_run(owner, body)
    runtime.state.log("run_finished", runId=record.id, role=record.role, status=record.status,
                      traceId=record.traceId, steps=record.steps,
                      tokens=record.usage.totalTokens, durationMs=record.durationMs,
                      taskId=owners[0] if owners and owners[0].startswith("task-") else None)
