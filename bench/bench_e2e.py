"""End-to-end latency, cold start and Worker throughput (SPEC section 9, items 1 and 2).

Runs ``mimikit up`` as a user does (its own Redis database, the scripted LLM answering at once)
and talks to it over HTTP like the page: ``POST /api/input``, then the answer seen on
``/api/events`` and read back from ``GET /api/messages``. Beside every figure, a bare Celery
app's no-op task on the same Redis, measured in the same run (``raw_app.py``).

- cold start: ``--starts`` fresh instances; the 1st, 2nd and 100th message after ``mimikit up``
  says ready, and the first two Planner chains;
- warm: ``--requests`` chat messages; chains input -> Planner -> Worker -> Teller report, and
  input -> Planner -> Worker A -> Worker B (conditional on A) -> Teller report;
- throughput: ``--tasks`` oneshot Worker tasks submitted at once, against as many raw no-op tasks
  on a raw worker with the same concurrency.

    python bench/bench_e2e.py [--requests 200] [--tasks 2000] [--starts 5]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from stack import Instance, Services
from summary import record

CONCURRENCY = 4
COLD_MESSAGES = 100


# --- the scripted models -----------------------------------------------------------------------

def _user_prompt(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def teller(body: dict[str, Any]) -> dict[str, Any]:
    """Replies "re: TEXT" to a chat message, hands "chain..." to the Planner, and reports
    results as "report: [LABEL]" (the label of each task in the inbox)."""
    from llm_server import tool_call, tool_calls

    prompt = _user_prompt(body)
    labels = re.findall(r"^### \S+ \(\w+: (.*)\) — ", prompt, re.M)
    if labels:
        return tool_call("reply", text="report: " + " ".join(f"[{label}]" for label in labels))
    text = re.findall(r"user: (.*)$", prompt, re.M)[-1]
    if text.startswith("chain"):
        return tool_calls([("delegate", {"prompt": text}), ("reply", {"text": "on it"})])
    return tool_call("reply", text=f"re: {text}")


def planner(body: dict[str, Any]) -> dict[str, Any]:
    """"chain1 N": Worker "A of N". "chain2 N": Worker "A of N", then "B of N" when A is done."""
    from llm_server import tool_call

    kind, n = re.search(r"(chain[12]) (-?\d+)", _user_prompt(body)).groups()  # type: ignore[union-attr]
    made = [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
    if not made:
        return tool_call("delegate", prompt=f"A of {n}", title=f"A of {n}")
    if kind == "chain2" and len(made) == 1:
        return tool_call("delegate", prompt=f"B of {n}", title=f"B of {n}", type="conditional",
                         condition={"type": "task_done",
                                    "params": {"taskId": made[0]["taskId"]}})
    return tool_call("submit_result", status="done", resultType="text", result={"text": "ok"})


def script(services: Services) -> None:
    from llm_server import tool_call

    services.llm.default("teller", teller)
    services.llm.default("planner", planner)
    services.llm.default("worker", tool_call("submit_result", status="done", resultType="text",
                                             result={"text": "done"}))


# --- measurements ------------------------------------------------------------------------------

def chat(instance: Instance, n: int) -> float:
    return instance.client.say(f"hello {n}", lambda text: text == f"re: hello {n}")


def chain(instance: Instance, workers: int, n: int) -> float:
    last = "A" if workers == 1 else "B"
    return instance.client.say(f"chain{workers} {n}", lambda text: f"[{last} of {n}]" in text)


def raw_round_trips(app: Any, count: int) -> list[float]:
    times = []
    for _ in range(count):
        began = time.perf_counter()
        app.send_task("raw.noop").get(timeout=30)
        times.append(time.perf_counter() - began)
    return times


def cold_starts(services: Services, starts: int) -> dict[str, list[float]]:
    """Fresh instances: seconds to ready, then the 1st, 2nd and 100th message and two chains."""
    rows: dict[str, list[float]] = {}
    for start in range(starts):
        instance = Instance(services, f"cold-{start}", db=1 + start)
        try:
            times = [chat(instance, n) for n in range(1, COLD_MESSAGES + 1)]
            figures = {"up: start -> ready": instance.ready_seconds, "message 1": times[0],
                       "message 2": times[1], f"message {COLD_MESSAGES}": times[-1],
                       "chain 1 (Planner, 1 Worker)": chain(instance, 1, 1),
                       "chain 2 (Planner, 1 Worker)": chain(instance, 1, 2)}
        finally:
            instance.stop()
        for name, value in figures.items():
            rows.setdefault(name, []).append(value)
    return rows


def throughput(services: Services, instance: Instance, raw_app: Any, count: int
               ) -> tuple[float, float]:
    """Tasks per second: raw no-op tasks, then Mimikit oneshot Worker tasks (submitted at once,
    counted done when each of *these* tasks is done)."""
    from mimikit.models import Task
    from mimikit.tasks.submit import submit

    began = time.perf_counter()
    results = [raw_app.send_task("raw.noop") for _ in range(count)]
    for result in results:
        result.get(timeout=300)
    raw_rate = count / (time.perf_counter() - began)

    runtime = instance.runtime()
    tasks = [Task(prompt=f"t{n}") for n in range(count)]
    ids = [task.id for task in tasks]
    began = time.perf_counter()
    submit(runtime, tasks)
    deadline = time.monotonic() + 600
    while sum(runtime.redis.smismember(runtime.keys.status("done"), ids)) < count:
        if time.monotonic() > deadline:
            raise SystemExit("the throughput tasks did not finish in 600 s")
        time.sleep(0.02)
    return raw_rate, count / (time.perf_counter() - began)


# --- report ------------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def print_rows(title: str, rows: dict[str, list[float]], raw_p50: float) -> None:
    print(f"\n| {title:<52} |   p50 ms |   p95 ms |     n | p50 / raw |")
    print(f"|{'-' * 54}|----------|----------|-------|-----------|")
    for name, values in rows.items():
        p50 = statistics.median(values)
        print(f"| {name:<52} | {p50 * 1000:8.1f} | {percentile(values, 0.95) * 1000:8.1f} "
              f"| {len(values):5d} | {p50 / raw_p50:8.1f}x |")


def summarize(cold: dict[str, list[float]], warm: dict[str, list[float]], raw_p50: float,
              rates: tuple[float, float]) -> None:
    first, hundredth = (statistics.median(cold[k]) for k in ("message 1", f"message {COLD_MESSAGES}"))
    record("first message after ready (p50 of starts)", ms(first),
           baseline=f"message {COLD_MESSAGES}: {ms(hundredth)}", ratio=first / hundredth,
           target="<= 2x", met=first <= 2 * hundredth)
    first_chain = statistics.median(cold["chain 1 (Planner, 1 Worker)"])
    steady_chain = statistics.median(warm["input -> Planner -> Worker -> Teller report"])
    record("first chain after ready (p50 of starts)", ms(first_chain),
           baseline=f"warm chain: {ms(steady_chain)}", ratio=first_chain / steady_chain)
    raw = f"raw round trip: {ms(raw_p50)}"
    chat_p50 = statistics.median(warm["input -> Teller reply"])
    record("chat: input -> Teller reply, p50", ms(chat_p50), baseline=raw,
           ratio=chat_p50 / raw_p50, target="<= 3x raw", met=chat_p50 <= 3 * raw_p50)
    record("chain, 1 Worker: p50", ms(steady_chain), baseline=raw, ratio=steady_chain / raw_p50)
    two = warm["input -> Planner -> Worker A -> Worker B -> report"]
    two_p50, two_p95 = statistics.median(two), percentile(two, 0.95)
    record("chain, 2 dependent Workers: p50", ms(two_p50), baseline=raw,
           ratio=two_p50 / raw_p50, target="<= 12x raw", met=two_p50 <= 12 * raw_p50)
    record("chain, 2 dependent Workers: p95", ms(two_p95), baseline=f"its p50: {ms(two_p50)}",
           ratio=two_p95 / two_p50, target="<= 2x p50", met=two_p95 <= 2 * two_p50)
    raw_rate, rate = rates
    record(f"Worker throughput ({CONCURRENCY} processes)", f"{rate:.0f} tasks/s",
           baseline=f"raw no-op: {raw_rate:.0f} tasks/s", ratio=rate / raw_rate,
           target=">= 0.5x raw", met=rate >= 0.5 * raw_rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    services = Services(Path(tempfile.mkdtemp(prefix="mimikit-bench-")), CONCURRENCY)
    try:
        script(services)
        raw_app = services.raw_app()
        raw = raw_round_trips(raw_app, args.requests)
        raw_p50 = statistics.median(raw)
        print_rows("raw Celery (bare app, same Redis)", {"no-op round trip": raw}, raw_p50)
        cold = cold_starts(services, args.starts)
        print_rows(f"cold start: {args.starts} fresh `mimikit up`", cold, raw_p50)
        instance = Instance(services, "warm", db=1 + args.starts)
        try:
            for n in range(20):  # settle: the first use of every pool process is over
                chat(instance, -n)
                chain(instance, 2, -n)
            warm = {
                "input -> Teller reply": [chat(instance, n) for n in range(args.requests)],
                "input -> Planner -> Worker -> Teller report":
                    [chain(instance, 1, n) for n in range(args.requests)],
                "input -> Planner -> Worker A -> Worker B -> report":
                    [chain(instance, 2, n) for n in range(args.requests)],
            }
            print_rows(f"warm, one `mimikit up` ({args.requests} each)", warm, raw_p50)
            rates = throughput(services, instance, raw_app, args.tasks)
        finally:
            instance.stop()
        print(f"\n| throughput, {args.tasks} tasks, {CONCURRENCY} worker processes | tasks/s |")
        print("|--------------------------------------------------|---------|")
        print(f"| raw Celery no-op tasks                           | {rates[0]:7.0f} |")
        print(f"| Mimikit oneshot Worker tasks (LLM run)           | {rates[1]:7.0f} |")
        print(f"| ratio Mimikit / raw                              | {rates[1] / rates[0]:7.2f} |")
        summarize(cold, warm, raw_p50, rates)
    finally:
        services.close()


if __name__ == "__main__":
    main()
