"""Budgets: the most a day, a task and a trigger may spend, counted atomically across workers.

Before each LLM call a run reserves what the call may cost (an estimate of its prompt and
answer, never less than its previous call cost) against every cap that applies; when any cap
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
from mimikit.memory.tokens import estimate_tokens
from mimikit.spending.book import Spender
from mimikit.spending.prices import PER_TOKENS, Price
from mimikit.store.runtime import Runtime

TELLER_RESERVE = 0.05  # the Teller may spend 5 % past the daily cap
ANSWER_TOKENS_GUESS = 256  # an answer's tokens before the run has seen one
_RESERVE = """
for i = 1, #KEYS do
  local cap = tonumber(ARGV[i + 1])
  if cap >= 0 then
    local spent = redis.call('HMGET', KEYS[i], 'cost', 'reserved')
    local used = (tonumber(spent[1]) or 0) + (tonumber(spent[2]) or 0)
    if used + tonumber(ARGV[1]) > cap then return {i, tostring(used)} end
  end
end
for i = 1, #KEYS do redis.call('HINCRBYFLOAT', KEYS[i], 'reserved', ARGV[1]) end
return {0, '0'}
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


def reserve(runtime: Runtime, spender: Spender, caps: Caps, amount: float) -> list[str]:
    """Reserve ``amount`` against every cap; returns the keys reserved on (to settle later).

    Raises:
        BudgetExceeded: A cap would be exceeded; nothing is reserved.
    """
    scopes = spender.scopes(runtime)
    capped = [(scope, scopes[scope], cap) for scope, cap in caps.limits.items()
              if scope in scopes]
    if not capped:
        return []
    keys = [runtime.keys.usage(scope, ident) for scope, ident, _cap in capped]
    refused, used = runtime.redis.eval(_RESERVE, len(keys), *keys, amount,
                                       *(cap for _s, _i, cap in capped))
    if int(refused):
        scope, ident, cap = capped[int(refused) - 1]
        raise BudgetExceeded(scope, ident, cap, float(used))
    return keys


def settle(pipe: Any, keys: list[str], amount: float) -> None:
    """Give back a reservation (its real cost is recorded in the book beside it)."""
    for key in keys:
        pipe.hincrbyfloat(key, "reserved", -amount)
