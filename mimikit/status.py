"""The status report of ``GET /api/status`` and ``mimikit status``: Redis, workers, queues, the
Teller and its inbox (what waits, what is tried again, what gave up and why), beat, the LLM,
the Worker's shell sandbox, the MCP servers and the pending question."""

from __future__ import annotations

import json
from typing import Any

from redis.exceptions import RedisError

from mimikit.config import DEFAULT_LLM_BASE_URL, Settings, hide_password
from mimikit.conversation.failed import listing as failed_listing
from mimikit.conversation.gate import teller_state
from mimikit.conversation.outage import outage
from mimikit.conversation.tries import MAX_TRIES, item_tries
from mimikit.delivery.dispatch import queue_depths
from mimikit.delivery.workers import workers
from mimikit.llm.profile_store import RedisProfiles
from mimikit.llm.warming import READING_KEY
from mimikit.mcp.catalog import overview
from mimikit.roles import CHAT_ROLES
from mimikit.scheduling.liveness import liveness
from mimikit.spending.budget import budget_state
from mimikit.store.runtime import Runtime
from mimikit.workspace.sandbox import sandbox_report


def status(runtime: Runtime) -> dict[str, Any]:
    """The whole report; ``ok`` is False (with the reason) when Redis does not answer."""
    settings = runtime.settings
    llm = llm_report(settings)
    report: dict[str, Any] = {"ok": False, "redis": {"ok": False, "url": safe_url(settings)},
                              "workers": [], "queues": {}, "teller": {"state": "unknown"},
                              "llm": llm, "sandbox": sandbox_report(settings),
                              "mcp": overview(settings), "pendingQuestion": None}
    try:
        runtime.redis.ping()
    except RedisError as error:
        report["redis"]["error"] = f"{error}; start Redis or run `mimikit up`"
        return report
    failing = outage(runtime)
    if failing:
        llm.update(error=failing["error"], failingSince=failing["since"])
    waiting = runtime.tasks.waiting_for_model()
    if waiting:
        llm["waitingTasks"] = waiting
    profile = llm_profile(runtime)
    if profile:
        llm["profile"] = profile
    reading = runtime.redis.get(runtime.keys.meta(READING_KEY))
    if reading:  # a message now waits for it: ``agents.warmup.warm_server_prompts``
        llm["readingPrompts"] = json.loads(reading)
    report.update(ok=True, workers=workers(runtime), **conversation_state(runtime))
    report["redis"]["ok"] = True
    report["beat"] = beat_state(runtime)
    report["usage"] = budget_state(runtime)
    report["llmEval"] = last_batch(runtime)
    report["mcp"] = overview(settings, runtime)
    return report


def conversation_state(runtime: Runtime) -> dict[str, Any]:
    """The parts of the report that change with each message: the Teller, its queue and
    inbox, the pending question."""
    question = runtime.conversation.question()
    return {"queues": queue_depths(runtime), "teller": teller_state(runtime),
            "pendingQuestion": question.dump() if question else None,
            "inbox": inbox_state(runtime)}


def inbox_state(runtime: Runtime) -> dict[str, Any]:
    """The Teller's inbox: items waiting, how many of them wait to be tried again after a
    failed pass, and those that gave up (with the reason) until tried again or dismissed."""
    waiting = runtime.inbox.peek()
    tried = item_tries(runtime).of([item.id for item in waiting])
    return {"waiting": len(waiting), "retrying": len(tried), "maxTries": MAX_TRIES,
            "failed": failed_listing(runtime)}


def last_batch(runtime: Runtime) -> dict[str, Any] | None:
    """How the latest ``llm_eval`` batch ended (``{taskId, status, error, at}``), if any ran."""
    raw = runtime.redis.get(runtime.keys.meta("llm_eval_last"))
    return json.loads(raw) if raw else None


def llm_profile(runtime: Runtime) -> dict[str, Any]:
    """What the server does for each role's model, as learned (``llm.profile``), with the path
    the role's requests take: ``{role: {path, server, line, ...}}``; empty before any is known."""
    settings = runtime.settings
    url = (settings.llm_base_url or DEFAULT_LLM_BASE_URL).rstrip("/")
    keeper = RedisProfiles(runtime.redis, runtime.keys.llm_profiles)
    shown: dict[str, Any] = {}
    for role in CHAT_ROLES:
        profile = keeper.load(url, settings.model_for(role))
        if profile is not None:
            shown[role] = {"path": profile.path, "line": profile.line(),
                           **profile.model_dump(mode="json", exclude={"learned"})}
    return shown


def llm_report(settings: Settings) -> dict[str, Any]:
    """Whether an LLM is configured, and each role's model."""
    llm: dict[str, Any] = {
        "configured": settings.llm_configured, "model": settings.model_for("teller"),
        "models": {role: settings.model_for(role) for role in CHAT_ROLES}}
    if settings.llm_base_url:
        llm["baseUrl"] = settings.llm_base_url
    if not settings.llm_configured:
        llm["error"] = "no LLM is configured: set MIMIKIT_LLM_BASE_URL or MIMIKIT_LLM_API_KEY"
    return llm


def beat_state(runtime: Runtime) -> dict[str, Any]:
    """Whether a beat holds the RedBeat lock and ticked lately, and the last supervisor tick."""
    last_tick = runtime.redis.get(runtime.keys.meta("last_tick"))
    return {**liveness(runtime), "lastTick": last_tick.decode() if last_tick else None}


def safe_url(settings: Settings) -> str:
    """The Redis URL with any credentials hidden."""
    return hide_password(settings.redis_url)
