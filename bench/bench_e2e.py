"""End-to-end latency and Worker throughput (SPEC section 9, items 1 and 2).

Starts its own redis-server, Celery workers and the scripted LLM (answering instantly), so what
is measured is Mimikit's own overhead, beside raw Celery no-op tasks on the same Redis.

    python bench/bench_e2e.py [--requests 200] [--tasks 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench"), str(ROOT)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def row(name: str, values: list[float]) -> str:
    return (f"| {name:<46} | {statistics.median(values) * 1000:8.1f} | "
            f"{percentile(values, 0.95) * 1000:8.1f} | {len(values):5d} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=2000)
    args = parser.parse_args()
    from processes import free_port

    tmp = Path(tempfile.mkdtemp(prefix="mimikit-bench-"))
    port = free_port()
    os.environ.update({
        "MIMIKIT_REDIS_URL": f"redis://127.0.0.1:{port}/0", "MIMIKIT_STATE_DIR": str(tmp / "s"),
        "MIMIKIT_WORK_DIR": str(tmp), "MIMIKIT_TELLER_MODEL": "teller",
        "MIMIKIT_PLANNER_MODEL": "planner", "MIMIKIT_WORKER_MODEL": "worker",
    })
    from llm_server import ScriptedLLM

    llm = ScriptedLLM().start()
    os.environ["MIMIKIT_LLM_BASE_URL"] = llm.url
    from mimikit import embedded_redis

    redis_proc = embedded_redis.start(os.environ["MIMIKIT_REDIS_URL"], tmp / "redis")
    workers = _start_workers(tmp)
    try:
        _run(args, llm, tmp)
    finally:
        for proc in workers:
            proc.kill()
        redis_proc.kill()
        llm.shutdown()


def _start_workers(tmp: Path) -> list[subprocess.Popen[bytes]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "bench"), str(ROOT)]))
    procs = []
    for name, queues, conc in (("agents", "teller,planner,supervisor", 2), ("tasks", "worker", 4)):
        argv = [sys.executable, "-m", "celery", "-A", "bench_app", "worker", "-Q", queues,
                "-c", str(conc), "-n", f"{name}@bench", "-l", "WARNING", "--without-mingle",
                "--without-gossip"]
        log = open(tmp / f"{name}.log", "wb")  # noqa: SIM115
        procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT))
    time.sleep(4)
    return procs


def _run(args: argparse.Namespace, llm: object, tmp: Path) -> None:
    from llm_server import tool_call

    from mimikit.celery_app import app
    from mimikit.store.runtime import get_runtime

    runtime = get_runtime()
    print("| measurement                                    |  p50 ms  |  p95 ms |     n |")
    print("|------------------------------------------------|----------|---------|-------|")
    raw = [_timed(lambda: app.send_task("bench.noop", queue="worker").get(timeout=10))
           for _ in range(args.requests)]
    print(row("raw Celery no-op round trip", raw))

    llm.default("teller", tool_call("reply", text="hi"))  # type: ignore[attr-defined]
    from web import create_app

    client = create_app(runtime.settings).test_client()
    replies = [_until_reply(runtime, client, f"hello {n}") for n in range(args.requests)]
    print(row("input -> Teller reply in /api/messages", replies))

    # The Teller's script is set per request by _until_report.
    def plan(body: dict) -> dict:
        done = any(m["role"] == "tool" for m in body["messages"])
        return tool_call("submit_result", status="done", resultType="text",
                         result={"text": "ok"}) if done else tool_call("delegate",
                                                                      prompt="do the work")

    llm.default("planner", plan)  # type: ignore[attr-defined]
    llm.default("worker", tool_call("submit_result", status="done",  # type: ignore[attr-defined]
                                    resultType="text", result={"text": "done"}))
    flows = [_until_report(runtime, client, llm, f"work {n}") for n in range(args.requests)]
    print(row("input -> Planner -> Worker -> Teller report", flows))
    _throughput(runtime, app, args.tasks)


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def _visible(client, text: str) -> bool:  # type: ignore[no-untyped-def]
    """True when the newest message served by GET /api/messages has ``text``."""
    messages = client.get("/api/messages?limit=1").get_json()["messages"]
    return bool(messages) and messages[-1]["text"] == text


def _post_and_wait(runtime, client, text: str, answer: str) -> float:  # type: ignore[no-untyped-def]
    """Post ``text`` as the user; seconds until ``answer`` is the newest message in the API."""
    from mimikit.conversation.input import post_input

    began = time.perf_counter()
    post_input(runtime, text)
    while not _visible(client, answer):
        time.sleep(0.001)
    return time.perf_counter() - began


def _until_reply(runtime, client, text: str) -> float:  # type: ignore[no-untyped-def]
    return _post_and_wait(runtime, client, text, "hi")


def _until_report(runtime, client, llm, text: str) -> float:  # type: ignore[no-untyped-def]
    from llm_server import tool_call, tool_calls

    llm.script("teller", tool_calls([("delegate", {"prompt": text}), ("reply", {"text": "on it"})]))
    llm.default("teller", tool_call("reply", text="report"))
    return _post_and_wait(runtime, client, text, "report")


def _throughput(runtime, app, count: int) -> None:  # type: ignore[no-untyped-def]
    from mimikit.models import Task
    from mimikit.tasks.submit import submit

    began = time.perf_counter()
    results = [app.send_task("bench.noop", queue="worker") for _ in range(count)]
    for result in results:
        result.get(timeout=120)
    raw_rate = count / (time.perf_counter() - began)

    tasks = [Task(prompt=f"t{n}") for n in range(count)]
    began = time.perf_counter()
    submit(runtime, tasks)
    done_key = runtime.keys.status("done")
    while runtime.redis.scard(done_key) < count + 0:
        time.sleep(0.01)
    rate = count / (time.perf_counter() - began)
    print()
    print("| throughput (4 worker processes)        | tasks/s |")
    print("|----------------------------------------|---------|")
    print(f"| raw Celery no-op tasks                 | {raw_rate:7.0f} |")
    print(f"| Mimikit oneshot Worker tasks (LLM run) | {rate:7.0f} |")
    print(f"| ratio Mimikit / raw                    | {rate / raw_rate:7.2f} |")


if __name__ == "__main__":
    main()
