"""The spending of one run: every call checked against the budgets, then booked.

``Meter`` is the chat client of an agent loop (``chat``), and books any other model work the
same way (``spend``: a ``codex exec`` run reports its tokens when it ends).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from mimikit.llm.completion import ChatClient, Completion, TextField
from mimikit.llm.profile import ServerProfile
from mimikit.models import Usage
from mimikit.prices import PER_TOKENS, Price
from mimikit.spending import book, budget
from mimikit.store.runtime import Runtime

LATENCY_BUCKETS_SECONDS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
T = TypeVar("T")


class Meter:
    """Wraps a chat client for one run of ``spender`` within ``caps``."""

    def __init__(self, runtime: Runtime, client: ChatClient, spender: book.Spender,
                 caps: budget.Caps, on_usage: Callable[[Usage], None] | None = None,
                 later: Callable[[Callable[[Any], None]], None] | None = None,
                 on_answer: Callable[[list[dict[str, Any]], bool, Usage], None] | None = None,
                 ) -> None:
        """``later``: where the booking of a call may wait to commit with the run's next
        journal entry (``RunJournal.later``); without it a call is booked at once.
        ``on_answer``: told each chat call's messages, whether tools were offered beside them
        (not where its answer is held to a schema), and what the server counted."""
        self.runtime, self.client, self.spender, self.caps = runtime, client, spender, caps
        self.on_usage, self.later, self.on_answer = on_usage, later, on_answer
        self.price = runtime.settings.price_table.get(spender.model)
        self.last_answer_tokens = 0
        self.last_cost = 0.0

    def profile(self, model: str) -> ServerProfile:
        """What the server does for ``model`` (``llm.profile``)."""
        return self.client.profile(model)

    def chat(self, model: str, messages: list[dict[str, Any]],
             tools: list[dict[str, Any]] | None = None, deadline: float | None = None, *,
             max_tokens: int | None = None, tool_choice: Any = None,
             schema: dict[str, Any] | None = None, text_field: TextField | None = None,
             retries: int | None = None) -> Completion:
        """One call, if the budgets allow it (else ``BudgetExceeded``), booked when it ends.

        Raises:
            BudgetExceeded: The call could take a capped scope past its budget.
        """
        def call() -> tuple[Completion, Usage]:
            completion = self.client.chat(model, messages, tools, deadline=deadline,
                                          max_tokens=max_tokens, tool_choice=tool_choice,
                                          schema=schema, text_field=text_field,
                                          retries=retries)
            if self.on_answer is not None:
                self.on_answer(messages, bool(tools) and schema is None, completion.usage)
            return completion, completion.usage

        return self.spend(messages, call)

    def spend(self, messages: list[dict[str, Any]], work: Callable[[], tuple[T, Usage]]) -> T:
        """Run ``work`` (model work that answers ``messages`` and says what it used) if the
        budgets allow it, and book what it used.

        Raises:
            BudgetExceeded: The work could take a capped scope past its budget.
        """
        hold = self._reserve(messages)
        began = time.monotonic()
        try:
            value, usage = work()
        except BaseException as error:
            self._give_back(hold, error, time.monotonic() - began)
            raise
        self._book(usage, hold, time.monotonic() - began)
        return value

    def _reserve(self, messages: list[dict[str, Any]]) -> budget.Hold:
        if self.price is None or not self.caps.limits:
            return budget.NO_HOLD  # no price: the cost is unknown, so no cap can apply
        amount = budget.estimate(messages, self.price, self.last_answer_tokens, self.last_cost)
        return budget.reserve(self.runtime, self.spender, self.caps, amount)

    def _book(self, usage: Usage, hold: budget.Hold, seconds: float) -> None:
        cost = cost_of(usage, self.price)

        def write(pipe: Any) -> None:
            budget.settle(pipe, hold)
            book.record(self.runtime, self.spender, usage, cost, pipe)
            _latency(self.runtime, pipe, self.spender, seconds, "ok")

        if self.later is not None:
            self.later(write)
        else:
            pipe = self.runtime.redis.pipeline(transaction=True)
            write(pipe)
            pipe.execute()
        self.last_answer_tokens = usage.completionTokens
        self.last_cost = cost or 0.0
        if self.on_usage is not None:
            self.on_usage(usage)

    def _give_back(self, hold: budget.Hold, error: BaseException, seconds: float) -> None:
        pipe = self.runtime.redis.pipeline(transaction=True)
        budget.settle(pipe, hold)
        _latency(self.runtime, pipe, self.spender, seconds, type(error).__name__)
        pipe.execute()


def _latency(runtime: Runtime, pipe: Any, spender: book.Spender, seconds: float,
             outcome: str) -> None:
    """Count the call in the latency histogram and by outcome (for ``/metrics``): one field
    for the smallest bucket the call fits in (``latency_buckets`` makes them cumulative)."""
    prefix = f"{spender.role}|{spender.model}|"
    key = runtime.keys.usage_by_model
    pipe.hincrbyfloat(key, prefix + "latencySeconds", seconds)
    pipe.hincrby(key, prefix + f"outcome:{outcome}", 1)
    bound = next((b for b in LATENCY_BUCKETS_SECONDS if seconds <= b), None)
    if bound is not None:
        pipe.hincrby(key, prefix + f"bucket:{bound}", 1)


def latency_buckets(row: dict[str, Any]) -> list[tuple[str, float]]:
    """The cumulative histogram buckets of one role and model's counters: each bound counts
    the calls in it and every smaller bucket (``le:`` fields, written cumulative by earlier
    versions, are added as they are)."""
    buckets, below = [], 0.0
    for bound in LATENCY_BUCKETS_SECONDS:
        below += row.get(f"bucket:{bound}", 0)
        buckets.append((str(bound), below + row.get(f"le:{bound}", 0)))
    return buckets


def cost_of(usage: Usage, price: Price | None) -> float | None:
    """What ``usage`` cost at ``price`` (None: the model has no price)."""
    if price is None:
        return None
    return (usage.promptTokens * price.input + usage.completionTokens * price.output) / PER_TOKENS
