"""Budgets: the most a day, a task and a trigger may spend, counted atomically across workers.

Before each LLM call a run reserves what the call may cost (an estimate of its prompt and
answer, never less than the last call booked in any of its capped scopes: a recurring trigger's
next run costs about what its last one did) against every cap that applies; when any cap
would be exceeded the call is not made and the run stops between steps with the reason. After
the call the reservation is replaced by what it really cost. Reserving and checking happen in
one Lua script, so two workers racing for the last of a budget cannot both get it. The Teller
may go past the daily cap by a small reserve, so the person still gets answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mimikit.exceptions import MimikitError
from mimikit.prices import PER_TOKENS, Price
from mimikit.spending.book import Spender
from mimikit.store.runtime import Runtime
from mimikit.tokens import estimate_tokens

TELLER_RESERVE = 0.05  # the Teller may spend 5 % past the daily cap
ANSWER_TOKENS_GUESS = 256  # an answer's tokens before the run has seen one
_RESERVE = """
local amount = tonumber(ARGV[1])
for i = 1, #KEYS do
  amount = math.max(amount, tonumber(redis.call('HGET', KEYS[i], 'lastCall') or '0') or 0)
end
for i = 1, #KEYS do
  local spent = redis.call('HMGET', KEYS[i], 'cost', 'reserved')
  local used = (tonumber(spent[1]) or 0) + (tonumber(spent[2]) or 0)
  if used + amount > tonumber(ARGV[i + 1]) then return {i, tostring(used)} end
end
for i = 1, #KEYS do redis.call('HINCRBYFLOAT', KEYS[i], 'reserved', amount) end
return {0, tostring(amount)}
"""


class BudgetExceeded(MimikitError):
    """Raised before an LLM call that would take a day, task or trigger past its budget."""

    def __init__(self, scope: str, ident: str, cap: float, spent: float) -> None:
        self.scope, self.ident, self.cap, self.spent = scope, ident, cap, spent
        what = {"day": f"the daily budget of {cap:g}", "task": f"the task budget of {cap:g}",
                "trigger": f"the budget of {cap:g} of trigger {ident}"}[scope]
        super().__init__(f"{what} is reached ({spent:.4f} spent or reserved); raise "
                         f"{_FIX[scope]} to spend more")


_FIX = {"day": "MIMIKIT_BUDGET_DAY", "task": "MIMIKIT_BUDGET_TASK",
        "trigger": "the trigger's budget"}


@dataclass
class Caps:
    """The caps that apply to one run: ``{scope: cap}``."""

    limits: dict[str, float]

    @classmethod
    def for_run(cls, runtime: Runtime, spender: Spender, trigger_budget: float | None) -> Caps:
        settings, limits = runtime.settings, {}
        if settings.budget_day is not None:
            reserve = 1 + TELLER_RESERVE if spender.role == "teller" else 1
            limits["day"] = settings.budget_day * reserve
        if settings.budget_task is not None and spender.task:
            limits["task"] = settings.budget_task
        if trigger_budget is not None and spender.trigger:
            limits["trigger"] = trigger_budget
        return cls(limits)


def estimate(messages: list[dict[str, Any]], price: Price, last_answer_tokens: int,
             last_cost: float) -> float:
    """What the next call may cost: its prompt as estimated, an answer as long as the last."""
    prompt = estimate_tokens(json.dumps(messages, ensure_ascii=False))
    answer = max(last_answer_tokens, ANSWER_TOKENS_GUESS)
    guess = (prompt * price.input + answer * price.output) / PER_TOKENS
    return max(guess, last_cost)


@dataclass(frozen=True)
class Hold:
    """A reservation: the keys it holds on and the amount (given back when settled)."""

    keys: list[str]
    amount: float


NO_HOLD = Hold([], 0.0)


def reserve(runtime: Runtime, spender: Spender, caps: Caps, amount: float) -> Hold:
    """Reserve at least ``amount`` against every cap that applies.

    Raises:
        BudgetExceeded: A cap would be exceeded; nothing is reserved.
    """
    scopes = spender.scopes(runtime)
    capped = [(scope, scopes[scope], cap) for scope, cap in caps.limits.items()
              if scope in scopes]
    if not capped:
        return NO_HOLD
    keys = [runtime.keys.usage(scope, ident) for scope, ident, _cap in capped]
    refused, value = runtime.redis.eval(_RESERVE, len(keys), *keys, amount,
                                        *(cap for _s, _i, cap in capped))
    if int(refused):
        scope, ident, cap = capped[int(refused) - 1]
        raise BudgetExceeded(scope, ident, cap, float(value))
    return Hold(keys, float(value))


def settle(pipe: Any, hold: Hold) -> None:
    """Give back a reservation (its real cost is recorded in the book beside it)."""
    for key in hold.keys:
        pipe.hincrbyfloat(key, "reserved", -hold.amount)


def budget_state(runtime: Runtime) -> dict[str, Any]:
    """Today's spending against the daily budget, and the per-task cap (for status)."""
    settings = runtime.settings
    day = Spender(role="status", model="").scopes(runtime)["day"]
    spent = runtime.redis.hget(runtime.keys.usage("day", day), "cost")
    state: dict[str, Any] = {"day": day, "spentToday": round(float(spent or 0), 6),
                             "dayCap": settings.budget_day, "taskCap": settings.budget_task,
                             "priced": sorted(settings.price_table)}
    if settings.budget_day is not None:
        state["dayLeft"] = round(max(settings.budget_day - state["spentToday"], 0.0), 6)
    return state
