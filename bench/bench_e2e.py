"""End-to-end latency, cold start and Worker throughput (SPEC section 9, items 1 and 2).

Runs ``mimikit up`` as a user does (its own Redis database, the scripted LLM answering at once)
and talks to it over HTTP like the page: ``POST /api/input``, then the answer seen on
``/api/events`` and read back from ``GET /api/messages``. Beside every figure, a bare Celery
app's no-op task on the same Redis, measured in the same run (``raw_app.py``).

- cold start: ``--starts`` fresh instances; the 1st, 2nd and 100th message after ``mimikit up``
  says ready, and the first two Planner chains;
- warm: ``--requests`` chat messages; chains input -> Planner -> Worker -> Teller report, and
  input -> Planner -> Worker A -> Worker B (conditional on A) -> Teller report; on a server
  that holds answers to a schema (each step one object: the path on llama.cpp's server, vLLM,
  Ollama and OpenAI) and on one that only returns native tool calls, with the LLM calls each
  flow made;
- throughput: ``--tasks`` oneshot Worker tasks submitted at once, against as many raw tasks
  on a raw worker with the same concurrency.

Two raw baselines: a no-op task, and a task making one LLM call with the OpenAI SDK (the least
any agent runtime on Celery pays per LLM step); a flow is compared with as many raw LLM-call
round trips as it makes LLM calls.

    python bench/bench_e2e.py [--requests 200] [--tasks 2000] [--starts 5]
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stack import Instance, Services
from summary import record

CONCURRENCY = 4
COLD_MESSAGES = 100


# --- the scripted models -----------------------------------------------------------------------
#
# Two servers, as ``mimikit up`` meets them: one that holds an answer to a schema (llama.cpp's
# server, vLLM, Ollama, OpenAI: Mimikit asks each step as one object of the role's schema) and
# one that only returns native tool calls (each role then calls its tools one answer at a time).
# Their models are named PATHS[path] + role; each answers the start-up probe as such a server.

PATHS = {"constrained": "", "native": "native-"}
ROLES = ("teller", "planner", "worker")


def _user_prompt(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def _held(body: dict[str, Any]) -> bool:
    """Whether the request asks for an answer held to a schema."""
    return "response_format" in body


def _probe(body: dict[str, Any], holds: bool) -> dict[str, Any] | None:
    """The answer to one of the start-up probe's questions (None: not a probe)."""
    from llm_server import text, tool_call, turn

    from mimikit.llm.probe import PROBE_SCHEMA, PROBE_TOOL

    if _held(body) and json.dumps(PROBE_SCHEMA) in json.dumps(body["response_format"]):
        return turn(answer="yes") if holds else text("Yes.")
    if body.get("tools") == [PROBE_TOOL]:
        return tool_call("reply", text="ok")
    return None


def teller(body: dict[str, Any], holds: bool) -> dict[str, Any]:
    """Replies "re: TEXT" to a chat message, hands "chain..." to the Planner, and reports
    results as "report: [LABEL]" (the label of each task in the inbox)."""
    from llm_server import text, tool_call, tool_calls, turn

    probed = _probe(body, holds)
    if probed is not None:
        return probed
    if body["messages"][-1]["role"] == "tool":
        return text("")  # asked whether more follows its reply: nothing
    prompt = _user_prompt(body)
    labels = re.findall(r"^### \S+ \(\w+: (.*)\) — ", prompt, re.M)
    said = "" if labels else re.findall(r"user: (.*)$", prompt, re.M)[-1]
    delegate = said.startswith("chain")
    reply = "report: " + " ".join(f"[{label}]" for label in labels) if labels else \
        "on it" if delegate else f"re: {said}"
    if holds and _held(body):
        return turn(delegate=delegate, remember=False, reply=reply)
    if delegate:
        return tool_calls([("delegate", {"prompt": said}), ("reply", {"text": reply})])
    return tool_call("reply", text=reply)


def planner(body: dict[str, Any], holds: bool) -> dict[str, Any]:
    """"chain1 N": Worker "A of N". "chain2 N": Worker "A of N", then "B of N" when A is done.
    Held to its schema, it sends each task and its result together where it can."""
    from llm_server import tool_call, turn

    probed = _probe(body, holds)
    if probed is not None:
        return probed
    request = _user_prompt(body).split("## User request", 1)[-1]  # not the history before it
    kind, n = re.search(r"(chain[12]) (-?\d+)", request).groups()  # type: ignore[union-attr]
    made = [found for message in body["messages"][2:] if message["role"] != "assistant"
            for found in re.findall(r'"taskId": ?"([^"]+)"', message.get("content") or "")]
    first = {"prompt": f"A of {n}", "title": f"A of {n}"}
    done = {"status": "done", "resultType": "text", "result": {"text": "ok"}}
    if holds and _held(body):
        if kind == "chain1":
            return turn(delegate=first, submit_result=done)
        if not made:
            return turn(delegate=first)
        return turn(delegate=_second(n, made[0]), submit_result=done)
    if not made:
        return tool_call("delegate", **first)
    if kind == "chain2" and len(made) == 1:
        return tool_call("delegate", **_second(n, made[0]))
    return tool_call("submit_result", **done)


def _second(n: str, after: str) -> dict[str, Any]:
    return {"prompt": f"B of {n}", "title": f"B of {n}", "type": "conditional",
            "condition": {"type": "task_done", "params": {"taskId": after}}}


def worker(body: dict[str, Any], holds: bool) -> dict[str, Any]:
    from llm_server import tool_call, turn

    probed = _probe(body, holds)
    if probed is not None:
        return probed
    done = {"status": "done", "resultType": "text", "result": {"text": "done"}}
    return turn(submit_result=done) if holds and _held(body) else \
        tool_call("submit_result", **done)


def script(services: Services) -> None:
    # listed as vLLM lists its models, so probed at start-up (as llama.cpp's server is too, which
    # is also asked for a free slot before each request)
    services.llm.owner = "vllm"
    for path, prefix in PATHS.items():
        for role, answer in zip(ROLES, (teller, planner, worker), strict=True):
            services.llm.default(prefix + role, functools.partial(answer,
                                                                   holds=path == "constrained"))


def models(path: str) -> dict[str, str]:
    """The settings that point an instance's roles at the scripted server of ``path``."""
    return {f"MIMIKIT_{role.upper()}_MODEL": PATHS[path] + role for role in ROLES}


# --- measurements ------------------------------------------------------------------------------

def chat(instance: Instance, n: int) -> float:
    return instance.client.say(f"hello {n}", lambda text: text == f"re: hello {n}")


def chain(instance: Instance, workers: int, n: int) -> float:
    last = "A" if workers == 1 else "B"
    return instance.client.say(f"chain{workers} {n}", lambda text: f"[{last} of {n}]" in text)


def raw_args(name: str, n: int) -> list[str]:
    """The arguments of the ``n``-th raw task ``name``: a prompt for the LLM call, none else."""
    return [f"t{n}"] if name == "raw.llm_call" else []


def raw_round_trips(app: Any, name: str, count: int) -> list[float]:
    """Seconds for each of ``count`` raw tasks ``name``, sent and waited for one at a time."""
    times = []
    for n in range(count):
        began = time.perf_counter()
        app.send_task(name, args=raw_args(name, n)).get(timeout=30)
        times.append(time.perf_counter() - began)
    return times


def raw_rate(app: Any, name: str, count: int) -> float:
    """Raw tasks ``name`` per second, ``count`` sent at once."""
    began = time.perf_counter()
    results = [app.send_task(name, args=raw_args(name, n)) for n in range(count)]
    for result in results:
        result.get(timeout=300)
    return count / (time.perf_counter() - began)


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


def throughput(instance: Instance, count: int) -> float:
    """Mimikit oneshot Worker tasks per second: ``count`` submitted at once, counted done when
    each of *these* tasks is done."""
    from mimikit.lifecycle.submit import submit
    from mimikit.models import Task

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
    return count / (time.perf_counter() - began)


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


@dataclass
class Baseline:
    """The raw Celery figures of this run: round trips (s) and rates (tasks/s) of a no-op task
    and of a task making one LLM call."""

    noop: float
    llm: float
    noop_rate: float = 0.0
    llm_rate: float = 0.0


CHAT = "input -> Teller reply"
CHAIN1 = "input -> Planner -> Worker -> Teller report"
CHAIN2 = "input -> Planner -> Worker A -> Worker B -> report"


@dataclass
class Warm:
    """The three flows on one server path: seconds of each run, and LLM calls per run."""

    path: str
    rows: dict[str, list[float]]
    calls: dict[str, float]


def summarize(cold: dict[str, list[float]], warm: list[Warm], raw: Baseline,
              rate: float) -> None:
    first, hundredth = (statistics.median(cold[k]) for k in ("message 1", f"message {COLD_MESSAGES}"))
    record("first message after ready (p50 of starts)", ms(first),
           baseline=f"message {COLD_MESSAGES}: {ms(hundredth)}", ratio=first / hundredth,
           target="<= 2x", met=first <= 2 * hundredth)
    first_chain = statistics.median(cold["chain 1 (Planner, 1 Worker)"])
    steady_chain = statistics.median(warm[0].rows[CHAIN1])
    record("first chain after ready (p50 of starts)", ms(first_chain),
           baseline=f"warm chain: {ms(steady_chain)}", ratio=first_chain / steady_chain)
    noop = f"raw no-op round trip: {ms(raw.noop)}"
    for flows in warm:
        rows, path = flows.rows, f" ({flows.path})"
        chat_p50 = statistics.median(rows[CHAT])
        record(f"chat: input -> Teller reply, p50{path}", ms(chat_p50), baseline=noop,
               ratio=chat_p50 / raw.noop, target="<= 3x raw", met=chat_p50 <= 3 * raw.noop)
        record(f"chain, 1 Worker: p50{path}", ms(statistics.median(rows[CHAIN1])),
               baseline=noop, ratio=statistics.median(rows[CHAIN1]) / raw.noop)
        two = rows[CHAIN2]
        two_p50, two_p95 = statistics.median(two), percentile(two, 0.95)
        record(f"chain, 2 dependent Workers: p50{path}", ms(two_p50), baseline=noop,
               ratio=two_p50 / raw.noop, target="<= 12x raw", met=two_p50 <= 12 * raw.noop)
        record(f"chain, 2 dependent Workers: p95{path}", ms(two_p95),
               baseline=f"its p50: {ms(two_p50)}", ratio=two_p95 / two_p50, target="<= 2x p50",
               met=two_p95 <= 2 * two_p50)
        for name, steps in flows.calls.items():
            flow = statistics.median(rows[name])
            record(f"{name}, p50{path}, against its {steps:g} LLM call(s) as raw tasks",
                   ms(flow), baseline=f"{steps:g} x raw LLM-call round trip: "
                                      f"{ms(steps * raw.llm)}", ratio=flow / (steps * raw.llm))
    record(f"Worker throughput ({CONCURRENCY} processes)", f"{rate:.0f} tasks/s",
           baseline=f"raw no-op: {raw.noop_rate:.0f} tasks/s", ratio=rate / raw.noop_rate,
           target=">= 0.5x raw", met=rate >= 0.5 * raw.noop_rate)
    record("Worker throughput against raw tasks making one LLM call", f"{rate:.0f} tasks/s",
           baseline=f"raw LLM call: {raw.llm_rate:.0f} tasks/s", ratio=rate / raw.llm_rate)


def warm_flows(services: Services, instance: Instance, path: str, requests: int) -> Warm:
    """The three flows, ``requests`` times each, after settling rounds (the first use of every
    pool process is over), and the LLM calls each made."""
    for n in range(20):
        chat(instance, -n)
        chain(instance, 2, -n)
    flows = {CHAT: functools.partial(chat, instance),
             CHAIN1: functools.partial(chain, instance, 1),
             CHAIN2: functools.partial(chain, instance, 2)}
    rows, calls = {}, {}
    for name, flow in flows.items():
        before = len(services.llm.requests)
        rows[name] = [flow(n) for n in range(requests)]
        calls[name] = round((len(services.llm.requests) - before) / requests, 1)
    return Warm(path, rows, calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    services = Services(Path(tempfile.mkdtemp(prefix="mimikit-bench-")), CONCURRENCY)
    try:
        script(services)
        app = services.raw_app()
        raw_rows = {"no-op round trip": raw_round_trips(app, "raw.noop", args.requests),
                    "one LLM call round trip": raw_round_trips(app, "raw.llm_call", args.requests)}
        raw = Baseline(*(statistics.median(values) for values in raw_rows.values()))
        print_rows("raw Celery (bare app, same Redis)", raw_rows, raw.noop)
        cold = cold_starts(services, args.starts)
        print_rows(f"cold start: {args.starts} fresh `mimikit up`", cold, raw.noop)
        warm = []
        for path in PATHS:
            instance = Instance(services, f"warm-{path}", db=1 + args.starts + len(warm),
                                env=models(path))
            try:
                warm.append(warm_flows(services, instance, path, args.requests))
                print_rows(f"warm, one `mimikit up`, {path} ({args.requests} each)",
                           warm[-1].rows, raw.noop)
                print("LLM calls per run: " + ", ".join(
                    f"{name}: {calls:g}" for name, calls in warm[-1].calls.items()))
                if path == "constrained":
                    raw.noop_rate = raw_rate(app, "raw.noop", args.tasks)
                    raw.llm_rate = raw_rate(app, "raw.llm_call", args.tasks)
                    rate = throughput(instance, args.tasks)
            finally:
                instance.stop()
        print(f"\n| throughput, {args.tasks} tasks, {CONCURRENCY} worker processes | tasks/s |")
        print("|--------------------------------------------------|---------|")
        print(f"| raw Celery no-op tasks                           | {raw.noop_rate:7.0f} |")
        print(f"| raw Celery tasks making one LLM call             | {raw.llm_rate:7.0f} |")
        print(f"| Mimikit oneshot Worker tasks (LLM run)           | {rate:7.0f} |")
        summarize(cold, warm, raw, rate)
    finally:
        services.close()


if __name__ == "__main__":
    main()
