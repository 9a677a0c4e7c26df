"""``GET /metrics``: Prometheus text, read from the counters every process keeps in Redis.

Tokens, cost, calls and latency of LLM calls by role and model; task outcomes by role; trigger
firings; queue depths; live workers; today's spending and the daily budget.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flask import Blueprint, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from mimikit.delivery.dispatch import queue_depths
from mimikit.delivery.workers import workers
from mimikit.spending import book
from mimikit.spending.budget import budget_state
from mimikit.spending.meter import latency_buckets
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime
from mimikit.web.context import runtime

bp = Blueprint("metrics", __name__)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@bp.get("/metrics")
def metrics() -> Any:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MimikitCollector(runtime()))
    return Response(generate_latest(registry), content_type=CONTENT_TYPE)


class MimikitCollector:
    """Reads the instance's counters at each scrape."""

    def __init__(self, rt: Runtime) -> None:
        self.runtime = rt

    def collect(self) -> Iterator[Metric]:
        yield from _llm_metrics(book.by_model(self.runtime))
        yield from _counter_metrics(self.runtime)
        yield from _gauges(self.runtime)


def _llm_metrics(rows: list[dict[str, Any]]) -> Iterator[Metric]:
    labels = ["role", "model"]
    tokens = CounterMetricFamily("mimikit_llm_tokens", "LLM tokens", labels=[*labels, "kind"])
    cost = CounterMetricFamily("mimikit_llm_cost", "LLM cost (price table units)", labels=labels)
    calls = CounterMetricFamily("mimikit_llm_calls", "LLM calls by outcome",
                                labels=[*labels, "outcome"])
    latency = HistogramMetricFamily("mimikit_llm_latency_seconds", "LLM call latency",
                                    labels=labels)
    for row in rows:
        key = [row["role"], row["model"]]
        tokens.add_metric([*key, "prompt"], row.get("promptTokens", 0))
        tokens.add_metric([*key, "completion"], row.get("completionTokens", 0))
        cost.add_metric(key, row.get("cost", 0.0))
        outcomes = {name.split(":", 1)[1]: value for name, value in row.items()
                    if name.startswith("outcome:")}
        for outcome, count in outcomes.items():
            calls.add_metric([*key, outcome], count)
        count = sum(outcomes.values())
        latency.add_metric(key, [*latency_buckets(row), ("+Inf", count)],
                           row.get("latencySeconds", 0.0))
    yield from (tokens, cost, calls, latency)


def _counter_metrics(rt: Runtime) -> Iterator[Metric]:
    tasks = CounterMetricFamily("mimikit_tasks_finished", "Tasks finished by role and outcome",
                                labels=["role", "status"])
    firings = CounterMetricFamily("mimikit_trigger_firings", "Trigger firings by type",
                                  labels=["type", "outcome"])
    for field, value in rt.redis.hgetall(rt.keys.counters).items():
        family, first, second = as_text(field).split("|", 2)
        target = tasks if family == "tasks" else firings
        target.add_metric([first, second], int(value))
    yield from (tasks, firings)


def _gauges(rt: Runtime) -> Iterator[Metric]:
    depth = GaugeMetricFamily("mimikit_queue_depth", "Messages waiting per queue",
                              labels=["queue"])
    for queue, count in queue_depths(rt).items():
        depth.add_metric([queue], count)
    yield depth
    yield GaugeMetricFamily("mimikit_workers", "Live Celery workers", value=len(workers(rt)))
    budget = budget_state(rt)
    yield GaugeMetricFamily("mimikit_spent_today", "Spent today", value=budget["spentToday"])
    if budget["dayCap"] is not None:
        yield GaugeMetricFamily("mimikit_budget_day", "The daily budget", value=budget["dayCap"])
