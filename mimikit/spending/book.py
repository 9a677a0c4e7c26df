"""The book of what LLM calls spent: tokens, calls and cost per trace, task, trigger and day.

A trace is one user message and everything it caused (Teller, Planner, Workers); a trigger's
entry sums all its firings; a day is a calendar day in ``MIMIKIT_TIMEZONE``. Every call is
added to each of its scopes in one pipeline, so all workers add to the same totals.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mimikit.models import Usage, utcnow
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime

SCOPES = ("trace", "task", "trigger", "day")
LISTED_SCOPES = ("trace", "trigger", "day")
KEEP_DAYS = {"trace": 90, "task": 90, "trigger": 400, "day": 400}
TOKEN_FIELDS = ("promptTokens", "completionTokens", "totalTokens", "calls")


@dataclass(frozen=True)
class Spender:
    """Who spends: a run of ``role`` on ``model``, for these scopes."""

    role: str
    model: str
    trace: str | None = None
    task: str | None = None
    trigger: str | None = None

    def scopes(self, runtime: Runtime, now: datetime | None = None) -> dict[str, str]:
        """``{scope: id}`` of each scope this spender adds to (the day always)."""
        day = (now or utcnow()).astimezone(runtime.settings.tz).date().isoformat()
        found = {"trace": self.trace, "task": self.task, "trigger": self.trigger, "day": day}
        return {scope: ident for scope, ident in found.items() if ident}


# Adds one call to each scope's hash KEYS[i] and sets its time to live ARGV[5 + i] (i from 1).
# ARGV: prompt, completion and total tokens, cost ('' when the model has no price), '1' when the
# tokens were counted here (the server sent none). lastCall is the last call's cost: what the
# next call reserves at least.
_ADD_CALL = """
for i, key in ipairs(KEYS) do
  redis.call('HINCRBY', key, 'promptTokens', ARGV[1])
  redis.call('HINCRBY', key, 'completionTokens', ARGV[2])
  redis.call('HINCRBY', key, 'totalTokens', ARGV[3])
  redis.call('HINCRBY', key, 'calls', 1)
  if ARGV[4] == '' then
    redis.call('HINCRBY', key, 'unpricedTokens', ARGV[3])
  else
    redis.call('HINCRBYFLOAT', key, 'cost', ARGV[4])
    redis.call('HSET', key, 'lastCall', ARGV[4])
  end
  if ARGV[5] == '1' then redis.call('HINCRBY', key, 'estimatedCalls', 1) end
  redis.call('EXPIRE', key, ARGV[5 + i])
end
"""


def record(runtime: Runtime, spender: Spender, usage: Usage, cost: float | None,
           pipe: Any = None) -> None:
    """Add one call's ``usage`` (and ``cost``, when the model has a price) to every scope."""
    target = pipe or runtime.redis.pipeline(transaction=False)
    now = utcnow()
    counts = {"promptTokens": usage.promptTokens, "completionTokens": usage.completionTokens,
              "totalTokens": usage.totalTokens, "calls": 1}
    scopes = spender.scopes(runtime, now)
    keys = [runtime.keys.usage(scope, ident) for scope, ident in scopes.items()]
    target.eval(_ADD_CALL, len(keys), *keys, usage.promptTokens, usage.completionTokens,
                usage.totalTokens, "" if cost is None else repr(cost),
                "1" if usage.estimated else "0",
                *(KEEP_DAYS[scope] * 86400 for scope in scopes))
    for scope, ident in scopes.items():
        if scope in LISTED_SCOPES:
            target.zadd(runtime.keys.usage_index(scope), {ident: now.timestamp()})
    _by_model(runtime, target, spender, counts, cost)
    if pipe is None:
        target.execute()


def _by_model(runtime: Runtime, pipe: Any, spender: Spender, counts: dict[str, int],
              cost: float | None) -> None:
    prefix = f"{spender.role}|{spender.model}|"
    for name, value in counts.items():
        pipe.hincrby(runtime.keys.usage_by_model, prefix + name, value)
    if cost is not None:
        pipe.hincrbyfloat(runtime.keys.usage_by_model, prefix + "cost", cost)


def totals(runtime: Runtime, scope: str, ident: str) -> dict[str, Any]:
    """What ``scope`` ``ident`` spent: tokens, calls, cost (None when nothing was priced)."""
    return _totals(runtime.redis.hgetall(runtime.keys.usage(scope, ident)))


def _totals(raw: dict[Any, Any]) -> dict[str, Any]:
    fields = {as_text(k): as_text(v) for k, v in raw.items()}
    found: dict[str, Any] = {name: int(fields.get(name, 0)) for name in TOKEN_FIELDS}
    found["cost"] = round(float(fields["cost"]), 6) if "cost" in fields else None
    found["unpricedTokens"] = int(fields.get("unpricedTokens", 0))
    estimated = int(fields.get("estimatedCalls", 0))
    if estimated:  # some calls were counted here: the server sent no token counts
        found.update(estimated=True, estimatedCalls=estimated)
    return found


def listing(runtime: Runtime, scope: str, limit: int, before: float | None = None
            ) -> list[dict[str, Any]]:
    """The newest ``limit`` entries of ``scope`` (by last spending, before ``before``)."""
    high = f"({before}" if before is not None else "+inf"
    index = runtime.redis.zrevrangebyscore(runtime.keys.usage_index(scope), high, "-inf",
                                           start=0, num=limit, withscores=True)
    pipe = runtime.redis.pipeline(transaction=False)
    for ident, _score in index:
        pipe.hgetall(runtime.keys.usage(scope, as_text(ident)))
    rows = []
    for (ident, score), raw in zip(index, pipe.execute(), strict=True):
        if raw:  # an entry past its keep time leaves its index entry behind for a while
            rows.append({"id": as_text(ident), "lastAt": datetime.fromtimestamp(
                score, utcnow().tzinfo).isoformat(), **_totals(raw)})
    return rows


def by_model(runtime: Runtime) -> list[dict[str, Any]]:
    """Tokens, calls and cost per role and model since the instance began (for metrics)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, value in runtime.redis.hgetall(runtime.keys.usage_by_model).items():
        role, model, name = as_text(key).split("|", 2)
        row = rows.setdefault((role, model), {"role": role, "model": model})
        row[name] = float(as_text(value))
    return list(rows.values())
