"""``mimikit doctor``: checks that an instance can do its work, each with what to fix.

Redis answers and persists its data, every queue has a live worker, one beat holds the
scheduler lock, the LLM answers with the configured models, the state and work dirs are usable,
the clocks of this host, Redis and the workers' hosts agree, the Worker's shell commands run
in a sandbox, and each configured MCP server starts and lists its tools.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from redis.exceptions import RedisError, ResponseError

from mimikit.config import Settings, secret_text
from mimikit.delivery.dispatch import queue_depths
from mimikit.delivery.queues import QUEUES
from mimikit.delivery.workers import WORKER_TTL_SECONDS, worker_keys, workers
from mimikit.exceptions import LLMUnavailable
from mimikit.llm.client import LLMClient
from mimikit.llm.probe import probe
from mimikit.llm.profile_store import RedisProfiles
from mimikit.mcp.catalog import remember
from mimikit.models import utcnow
from mimikit.roles import CHAT_ROLES, ROLES
from mimikit.scheduling.liveness import LIVENESS_SECONDS, liveness
from mimikit.status import safe_url
from mimikit.store.runtime import Runtime
from mimikit.workspace.sandbox import sandbox_report

Status = Literal["ok", "warn", "fail", "skip"]
CLOCK_SKEW_LIMIT_SECONDS = 2.0  # beyond this, schedules fire off time and liveness misjudges
LLM_CHECK_TIMEOUT_SECONDS = 10.0
LLM_PROBE_TIMEOUT_SECONDS = 120.0  # a small local model takes a while for its first answer
MODEL_ROLES = tuple(ROLES)
NTP_FIX = "sync the clocks with NTP (e.g. `timedatectl set-ntp true`, or chrony)"


@dataclass(frozen=True)
class Check:
    """One check's outcome: ``fix`` says what to do when it is not ``ok``."""

    name: str
    status: Status
    detail: str
    fix: str | None = None

    def dump(self) -> dict[str, Any]:
        return asdict(self)


def run_checks(runtime: Runtime) -> list[Check]:
    """Every check, in the order they are shown; those that need Redis are skipped without it."""
    redis = check_redis(runtime)
    if redis.status == "ok":
        needs_redis = [check_persistence(runtime), *check_queues(runtime), check_beat(runtime),
                       check_clocks(runtime)]
    else:
        needs_redis = [Check(name, "skip", "needs Redis") for name in (
            "persistence", *(f"queue {q}" for q in QUEUES), "beat", "clocks")]
    settings = runtime.settings
    llm = check_llm(settings)
    keeper = RedisProfiles(runtime.redis, runtime.keys.llm_profiles) \
        if redis.status == "ok" else None
    return [redis, *needs_redis, llm, check_llm_server(settings, llm, keeper),
            check_directory("state dir", settings.state_dir, "MIMIKIT_STATE_DIR"),
            check_directory("work dir", settings.work_dir, "MIMIKIT_WORK_DIR"),
            check_sandbox(settings, workers(runtime) if redis.status == "ok" else []),
            *check_mcp(runtime, redis.status == "ok")]


def healthy(checks: list[Check]) -> bool:
    """True when no check failed (a skipped check follows a failed one; a warning passes)."""
    return all(check.status != "fail" for check in checks)


def format_check(check: Check) -> str:
    """One line: ``ok    redis           redis://... answers`` plus ``; fix: ...``."""
    mark = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "skip": "skip"}[check.status]
    fix = f"; fix: {check.fix}" if check.fix and check.status != "ok" else ""
    return f"{mark:<5} {check.name:<17} {check.detail}{fix}"


# --- Redis --------------------------------------------------------------------------------------


def check_redis(runtime: Runtime) -> Check:
    url = safe_url(runtime.settings)
    try:
        version = runtime.redis.info("server").get("redis_version", "?")
    except RedisError as error:
        return Check("redis", "fail", f"cannot reach {url}: {error}",
                     "start Redis, set MIMIKIT_REDIS_URL, or run `mimikit up` (it starts an "
                     "embedded Redis)")
    return Check("redis", "ok", f"{url} answers (Redis {version})")


def check_persistence(runtime: Runtime) -> Check:
    """AOF on is ok; RDB snapshots only is a warning; nothing is a failure."""
    try:
        config = {**runtime.redis.config_get("appendonly"), **runtime.redis.config_get("save"),
                  **runtime.redis.config_get("appendfsync")}
    except ResponseError as error:
        return Check("persistence", "warn",
                     f"cannot read the persistence settings: CONFIG GET is refused ({error}), "
                     "as on many managed Redis services",
                     "check in your provider's settings that AOF (or at least RDB) is on")
    aof, save = _text(config.get("appendonly")), _text(config.get("save"))
    turn_on = "turn AOF on: `redis-cli CONFIG SET appendonly yes`, and `appendonly yes` in " \
              "redis.conf"
    if aof == "yes":
        return Check("persistence", "ok", f"AOF on (appendfsync "
                     f"{_text(config.get('appendfsync'))})" + (f", RDB save {save}" if save else ""))
    if save:
        return Check("persistence", "warn", f"RDB snapshots only (save {save}): a crash loses "
                     "the tasks and messages written since the last snapshot", turn_on)
    return Check("persistence", "fail", "neither AOF nor RDB is on: a Redis restart loses every "
                 "task, trigger and message", turn_on)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def check_queues(runtime: Runtime) -> list[Check]:
    """One check per queue: at least one live worker consumes it."""
    live, depths = workers(runtime), queue_depths(runtime)
    checks = []
    for queue in QUEUES:
        names = [w["name"] for w in live if queue in w.get("queues", [])]
        waiting = f"{depths.get(queue, 0)} waiting"
        if names:
            checks.append(Check(f"queue {queue}", "ok", f"{', '.join(names)} ({waiting})"))
        else:
            checks.append(Check(f"queue {queue}", "fail", f"no live worker consumes it ({waiting})",
                                f"start one: `mimikit worker --queues {queue}` (or `mimikit up`)"))
    return checks


def check_beat(runtime: Runtime) -> Check:
    beat = liveness(runtime)
    if beat["alive"]:
        return Check("beat", "ok", f"{beat['owner']} holds the scheduler lock "
                     f"(seen {_age(beat['at']):.0f} s ago)")
    start = "start exactly one `mimikit beat` (schedules, triggers and the supervisor tick need it)"
    if beat["owner"] is None:
        return Check("beat", "fail", "no beat holds the scheduler lock", start)
    return Check("beat", "fail", f"{beat['owner']} held the scheduler lock but was last seen "
                 f"{_age(beat['at']):.0f} s ago (alive means within {LIVENESS_SECONDS} s)",
                 "restart `mimikit beat` and read its log")


def _age(at: str) -> float:
    return (utcnow() - datetime.fromisoformat(at)).total_seconds()


# --- clocks -------------------------------------------------------------------------------------


def check_clocks(runtime: Runtime) -> Check:
    """This host against Redis ``TIME``, and each worker host against Redis.

    A worker stamps its entry ``seenAt`` with its own clock each time it refreshes it with a
    TTL of ``WORKER_TTL_SECONDS``; the TTL left tells when, by Redis' clock, that happened.
    """
    skews = _worker_skews(runtime)
    skews["this host"] = _local_skew(runtime)
    name, worst = max(skews.items(), key=lambda item: abs(item[1]))
    if abs(worst) > CLOCK_SKEW_LIMIT_SECONDS:
        side = "ahead of" if worst > 0 else "behind"
        return Check("clocks", "fail", f"{name} is {abs(worst):.1f} s {side} Redis (limit "
                     f"{CLOCK_SKEW_LIMIT_SECONDS:g} s)", NTP_FIX)
    hosts = len(skews) - 1
    return Check("clocks", "ok", f"this host and {hosts} worker host{'s' * (hosts != 1)} are "
                 f"within {abs(worst):.2f} s of Redis")


def _local_skew(runtime: Runtime) -> float:
    before = time.time()
    seconds, microseconds = runtime.redis.time()
    after = time.time()
    return (before + after) / 2 - (seconds + microseconds / 1e6)


def _worker_skews(runtime: Runtime) -> dict[str, float]:
    """Seconds each worker host's clock is ahead of Redis (by host; entries without a
    ``seenAt`` stamp are left out)."""
    keys = worker_keys(runtime)
    pipe = runtime.redis.pipeline(transaction=False)
    pipe.time()
    for key in keys:
        pipe.get(key)
        pipe.pttl(key)
    (seconds, microseconds), *replies = pipe.execute()
    redis_now = seconds + microseconds / 1e6
    skews: dict[str, float] = {}
    for raw, ttl_ms in zip(replies[::2], replies[1::2], strict=True):
        entry = json.loads(raw) if raw else {}
        if not entry.get("seenAt") or ttl_ms < 0:
            continue
        refreshed_at = redis_now - (WORKER_TTL_SECONDS - ttl_ms / 1000)
        host = str(entry.get("name", "?")).split("@")[-1]
        skew = datetime.fromisoformat(entry["seenAt"]).timestamp() - refreshed_at
        if abs(skew) >= abs(skews.get(f"worker host {host}", 0.0)):
            skews[f"worker host {host}"] = skew
    return skews


# --- the LLM ------------------------------------------------------------------------------------


def check_llm_server(settings: Settings, llm: Check, keeper: Any = None) -> Check:
    """What the server does with tools and schemas for each role's model, found with a few
    small requests and kept (``llm.profile``), and the path each role's requests take."""
    if llm.status != "ok":
        return Check("llm server", "skip", "needs the LLM")
    client = LLMClient(settings.llm_base_url, secret_text(settings.llm_api_key),
                       timeout=LLM_PROBE_TIMEOUT_SECONDS, max_retries=0, keeper=keeper)
    lines = []
    try:
        for model in sorted({settings.model_for(role) for role in CHAT_ROLES}):
            profile = probe(client, model)
            roles = [role for role in CHAT_ROLES if settings.model_for(role) == model]
            lines.append(f"{'/'.join(roles)}: {profile.line()}")
    except LLMUnavailable as error:
        return Check("llm server", "warn", f"could not ask it a tool question: {error}",
                     "check that the server supports tool calls (llama-server needs --jinja)")
    return Check("llm server", "ok", "; ".join(lines))


def check_llm(settings: Settings) -> Check:
    """The endpoint answers and serves every model a role uses (listed, or else tried)."""
    client = LLMClient(settings.llm_base_url, secret_text(settings.llm_api_key),
                       timeout=min(settings.llm_timeout, LLM_CHECK_TIMEOUT_SECONDS),
                       max_retries=0)
    if not client.configured:
        return Check("llm", "fail", "no LLM is configured",
                     "set MIMIKIT_LLM_BASE_URL (any OpenAI-compatible server) or "
                     "MIMIKIT_LLM_API_KEY")
    wanted = {role: settings.model_for(role) for role in MODEL_ROLES}
    try:
        served = client.list_models()
        if served is None:
            return _try_each_model(client, wanted)
    except LLMUnavailable as error:
        return Check("llm", "fail", str(error),
                     f"start the LLM server or fix MIMIKIT_LLM_BASE_URL ({client.url}) and "
                     "MIMIKIT_LLM_API_KEY")
    missing = {role: model for role, model in wanted.items() if model not in served}
    if missing:
        return _missing_models(client, missing, served, settings)
    return Check("llm", "ok", f"{client.url} serves {', '.join(sorted(set(wanted.values())))}")


def _try_each_model(client: LLMClient, wanted: dict[str, str]) -> Check:
    """For a server without a model listing: one tiny request per model."""
    for model in sorted(set(wanted.values())):
        try:
            client.chat(model, [{"role": "user", "content": "Answer with one word: ready?"}])
        except LLMUnavailable as error:
            roles = ", ".join(role for role, name in wanted.items() if name == model)
            return Check("llm", "fail", f"model {model!r} ({roles}) does not answer: {error}",
                         "set the model variables (MIMIKIT_MODEL, MIMIKIT_<ROLE>_MODEL) to "
                         "models the server has, or load the model there")
    return Check("llm", "ok", f"{client.url} answered a one-line request with each of "
                 f"{', '.join(sorted(set(wanted.values())))} (it lists no models)")


def _missing_models(client: LLMClient, missing: dict[str, str], served: list[str],
                    settings: Settings) -> Check:
    variables = sorted({f"MIMIKIT_{role.upper()}_MODEL" if getattr(settings, f"{role}_model",
                                                                   None) else "MIMIKIT_MODEL"
                        for role in missing})
    shown = ", ".join(served[:10]) + (f" and {len(served) - 10} more" if len(served) > 10 else "")
    used = ", ".join(f"{model!r} ({role})" for role, model in missing.items())
    return Check("llm", "fail", f"{client.url} does not serve {used}; it serves: {shown or 'none'}",
                 f"set {' and '.join(variables)} to a model it serves, or load the model there")


# --- directories --------------------------------------------------------------------------------


def check_directory(name: str, path: Path, variable: str) -> Check:
    """The directory exists and this user can create files in it."""
    where = f"{path} ({path.resolve()})" if not path.is_absolute() else str(path)
    fix = f"create it (`mkdir -p {path}`), make it writable for this user, or set {variable}"
    if not path.exists():
        parent = next((p for p in path.resolve().parents if p.exists()), Path("/"))
        if name == "state dir" and _writable(parent):
            return Check(name, "warn", f"{where} does not exist yet; it is created on first use",
                         f"nothing on one host; on several hosts mount the shared {name} there")
        return Check(name, "fail", f"{where} does not exist", fix)
    if not path.is_dir():
        return Check(name, "fail", f"{where} is not a directory", fix)
    if not _writable(path):
        return Check(name, "fail", f"cannot create files in {where}", fix)
    return Check(name, "ok", f"{where} is writable")


def _writable(directory: Path) -> bool:
    try:
        with tempfile.TemporaryFile(dir=directory):
            return True
    except OSError:
        return False


# --- the shell sandbox --------------------------------------------------------------------------


def check_sandbox(settings: Settings, live: list[dict[str, Any]]) -> Check:
    """The sandbox of this host's Worker shell commands; task workers (on any host) that said
    they run them without one are named."""
    report = sandbox_report(settings)
    state, detail, fix = report["state"], report["detail"], report.get("fix")
    bare = sorted(w["name"] for w in live if state != "off" and "worker" in w.get("queues", [])
                  and w.get("sandbox") == "none")
    if bare:
        detail += f"; task workers without one: {', '.join(bare)}"
        fix = fix or ("install bubblewrap on their hosts (`apt-get install bubblewrap`) or run "
                      "a kernel with Landlock there (Linux 5.13 or later), or set "
                      "MIMIKIT_SHELL_SANDBOX=off there to silence this")
    status: Status = "fail" if state == "fail" else "warn" if state == "warn" or bare else "ok"
    return Check("sandbox", status, detail, fix)


# --- MCP servers --------------------------------------------------------------------------------


def check_mcp(runtime: Runtime, redis_ok: bool) -> list[Check]:
    """Each configured MCP server started once, its tools listed (and kept for the Planner's
    view of it), or why it failed; one line when there are none or the config is bad."""
    from mimikit.mcp.checks import check_servers  # the SDK, loaded where servers start

    keep = (lambda server, listing: remember(runtime, server, listing)) if redis_ok else None
    return [Check(f"mcp {found.name}" if found.name else "mcp",
                  "ok" if found.ok else "fail", found.detail, found.fix)
            for found in check_servers(runtime.settings, keep)]
