"""What LLM calls cost: one bill per trace, caps per task, trigger and day, routine runs quiet."""

from __future__ import annotations

import json
import threading

import pytest
from agent_helpers import post_input, wait_history
from llm_server import tool_call, tool_calls, with_usage
from processes import wait_for

from mimikit.lifecycle.submit import submit
from mimikit.models import IntervalSchedule, Task
from mimikit.spending import book
from mimikit.spending.budget import BudgetExceeded, Caps, reserve

# One million tokens cost 1.0 in or out: a call of N tokens costs N / 1e6.
PRICES = {"teller": {"input": 1.0, "output": 1.0}, "planner": {"input": 1.0, "output": 1.0},
          "worker": {"input": 1.0, "output": 1.0}}


@pytest.fixture
def priced(runtime, procs, llm, monkeypatch):
    """A running instance with a price for every model; budgets set per test before start."""

    def start(**env: str):
        monkeypatch.setenv("MIMIKIT_LLM_BASE_URL", llm.url)
        monkeypatch.setenv("MIMIKIT_PRICES", json.dumps(PRICES))
        for name, value in env.items():
            monkeypatch.setenv(f"MIMIKIT_{name.upper()}", value)
        from mimikit.config import load_settings
        from mimikit.store.runtime import reset_runtime

        reset_runtime()
        runtime.settings = load_settings()
        procs.worker(queues="teller,planner,supervisor", concurrency=2, name="agents")
        procs.worker(queues="worker", concurrency=2, name="tasks")
        return runtime

    return start


def test_one_trace_one_bill_sums_teller_planner_and_worker(priced, llm):
    runtime = priced()
    llm.script("teller", with_usage(tool_calls([("delegate", {"prompt": "count files"}),
                                                ("reply", {"text": "On it."})]), 1000, 10))
    llm.script("planner", with_usage(tool_call("delegate", prompt="count the files"), 2000, 20),
               with_usage(tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "planned"}), 2100, 30))
    llm.script("worker", with_usage(tool_call("submit_result", status="done", resultType="text",
                                              result={"text": "3 files"}), 3000, 40))
    llm.default("teller", with_usage(tool_call("reply", text="There are 3 files."), 1500, 15))
    message = post_input(runtime, "how many files?")
    wait_history(runtime, lambda h: ("assistant", "There are 3 files.") in h, timeout=60)
    expected = [(1000, 10), (2000, 20), (2100, 30), (3000, 40), (1500, 15)]
    bill = wait_for(lambda: (t := book.totals(runtime, "trace", message.id))["calls"] == 5 and t,
                    timeout=10, message="five calls on the bill")
    assert bill["promptTokens"] == sum(p for p, _c in expected)
    assert bill["completionTokens"] == sum(c for _p, c in expected)
    assert bill["cost"] == pytest.approx(sum(p + c for p, c in expected) / 1e6)
    from mimikit.web import create_app

    rows = create_app(runtime.settings).test_client().get("/api/usage?by=trace").get_json()
    assert rows["usage"][0]["id"] == message.id and rows["usage"][0]["calls"] == 5


def test_a_task_over_its_cap_stops_between_steps_with_the_reason(priced, llm):
    runtime = priced(budget_task="0.004")  # about one worker step
    llm.default("worker", with_usage(tool_call("list_files"), 3000, 10))
    llm.default("teller", tool_call("reply", text="noted"))
    task = submit(runtime, [Task(prompt="look around")])[0]
    done = wait_for(lambda: (t := runtime.tasks.get(task.id)).finished and t, timeout=60,
                    message="the task to stop")
    result = runtime.tasks.result(task.id)
    assert done.status == "failed" and "task budget of 0.004 is reached" in result.error
    assert "MIMIKIT_BUDGET_TASK" in result.error
    assert book.totals(runtime, "task", task.id)["cost"] <= 0.004
    assert 1 <= len(llm.requests_for("worker")) <= 2


def test_a_trigger_over_its_budget_pauses_and_tells_the_user_once(priced, llm, procs):
    runtime = priced()
    llm.default("worker", with_usage(tool_call("submit_result", status="done", resultType="text",
                                               result={"text": "checked"}), 3000, 10))
    llm.default("teller", tool_call("reply", text="ok"))
    trigger = submit(runtime, [Task(type="recurring", prompt="check the disk", title="disk check",
                                    schedule=IntervalSchedule(interval=1), budget=0.005)])[0]
    procs.beat()
    paused = wait_for(lambda: (t := runtime.tasks.get(trigger.id)).paused and t,
                      timeout=60, message="the trigger to pause")
    assert "budget" in paused.pausedReason
    assert book.totals(runtime, "trigger", trigger.id)["cost"] <= 0.005
    notes = wait_for(lambda: [m.text for m in runtime.conversation.between(None, None)
                              if m.text.startswith("Trigger paused: disk check")],
                     message="the note that the trigger paused")
    assert len(notes) == 1


def test_two_workers_racing_for_the_last_of_the_daily_budget_never_exceed_it(runtime):
    from mimikit.config import load_settings

    runtime.settings = load_settings(budget_day=0.01, prices=json.dumps(PRICES))
    spender = book.Spender(role="worker", model="worker", task="task-x")
    caps = Caps.for_run(runtime, spender, None)
    granted, start = [], threading.Barrier(8)

    def spend() -> None:
        start.wait()
        for _ in range(10):
            try:
                held = reserve(runtime, spender, caps, 0.0015)
            except BudgetExceeded:
                return
            pipe = runtime.redis.pipeline()
            book.record(runtime, spender, book_usage(1500), 0.0015, pipe)
            pipe.hincrbyfloat(held.keys[0], "reserved", -held.amount)
            pipe.execute()
            granted.append(1)

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    spent = book.totals(runtime, "day", spender.scopes(runtime)["day"])["cost"]
    assert len(granted) == 6 and spent == pytest.approx(0.009) and spent <= 0.01


def book_usage(tokens: int):
    from mimikit.models import Usage

    return Usage(promptTokens=tokens, completionTokens=0, totalTokens=tokens)


def test_metrics_parse_and_count_calls_tokens_cost_and_task_outcomes(runtime, llm):
    from prometheus_client.parser import text_string_to_metric_families

    from mimikit.config import load_settings
    from mimikit.llm.client import LLMClient
    from mimikit.models import Result
    from mimikit.spending.meter import Meter
    from mimikit.web import create_app

    runtime.settings = load_settings(prices=json.dumps(PRICES), llm_base_url=llm.url)
    llm.script("worker", with_usage(tool_call("list_files"), 1000, 100),
               with_usage(tool_call("list_files"), 2000, 200))
    spender = book.Spender(role="worker", model="worker", task="task-m")
    meter = Meter(runtime, LLMClient(llm.url, None, max_retries=0), spender,
                  Caps.for_run(runtime, spender, None))
    for _ in range(2):
        meter.chat("worker", [{"role": "user", "content": "hi"}])
    task = runtime.tasks.add([Task(prompt="x")])[0]
    runtime.tasks.start(task.id, "h:1:a", None, lambda _h: True)
    runtime.tasks.complete(Result(id=task.id, status="done", result={"text": "ok"}))

    body = create_app(runtime.settings).test_client().get("/metrics").get_data(as_text=True)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(body) for s in family.samples}

    def value(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    worker = {"role": "worker", "model": "worker"}
    assert value("mimikit_llm_tokens_total", kind="prompt", **worker) == 3000
    assert value("mimikit_llm_cost_total", **worker) == pytest.approx(3300 / 1e6)
    assert value("mimikit_llm_calls_total", outcome="ok", **worker) == 2
    assert value("mimikit_llm_latency_seconds_count", **worker) == 2
    buckets = [value("mimikit_llm_latency_seconds_bucket", le=le, **worker)
               for le in ("0.1", "1", "120", "+Inf")]
    assert buckets == sorted(buckets) and buckets[-2:] == [2, 2]  # cumulative, all within 120 s
    assert value("mimikit_tasks_finished_total", role="worker", status="done") == 1
    assert ("mimikit_queue_depth", (("queue", "worker"),)) in samples
