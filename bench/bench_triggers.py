"""Trigger benchmarks (SPEC section 9, items 3 and 5), on a private redis-server.

3. Routing one result with N conditional triggers on distinct ``task_done`` ids (N up to
   10,000): the time of ``triggers.on_result`` (which fires the one dependent trigger) must not
   grow with N. Beside it: a raw Celery ``send_task`` on the same Redis.
5. Schedule precision: 1,000 recurring entries fired by a real beat and supervisor workers;
   lateness of the beat's publish (slot -> sent) and of the fired task's creation, p50 / p95.

    python bench/bench_triggers.py [--triggers 10000] [--entries 1000] [--seconds 20]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from summary import record

ROOT = Path(__file__).resolve().parents[1]
TMP = Path(tempfile.mkdtemp(prefix="mimikit-bench-triggers-"))


def _setup_env() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (TMP / "work").mkdir()
    os.environ.update({
        "MIMIKIT_REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "MIMIKIT_STATE_DIR": str(TMP / "state"), "MIMIKIT_WORK_DIR": str(TMP / "work"),
        "MIMIKIT_KEY_PREFIX": "bench", "MIMIKIT_TICK_SECONDS": "1",
    })
    return os.environ["MIMIKIT_REDIS_URL"]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)]


def bench_routing(runtime, sizes: list[int], rounds: int) -> list[tuple[str, ...]]:
    from mimikit.celery_app import app
    from mimikit.models import Result, Task
    from mimikit.scheduling import triggers

    rows, made = [], 0
    for size in sizes:
        batch = [Task(type="conditional", prompt="next step", condition={
            "type": "task_done", "params": {"taskId": f"task-up-{made + i}"}})
            for i in range(size - made)]
        for start in range(0, len(batch), 1000):
            runtime.tasks.add(batch[start:start + 1000])
        for trigger in batch:
            triggers.index_conditional(runtime, trigger)
        made = size
        timings = []
        for n in range(rounds):
            upstream = Task(id=f"task-up-{n}-{size}", prompt="upstream")
            target = Task(type="conditional", prompt="dependent", condition={
                "type": "task_done", "params": {"taskId": upstream.id}})
            runtime.tasks.add([upstream, target])
            triggers.index_conditional(runtime, target)
            result = Result(id=upstream.id, status="done", result={"text": "ok"})
            runtime.tasks.complete(result)
            began = time.perf_counter()
            fired = triggers.on_result(runtime, upstream, result)
            timings.append((time.perf_counter() - began) * 1000)
            assert fired == [target.id], fired
        rows.append((f"route one result, {size:,} triggers", f"{statistics.median(timings):.2f}",
                     f"{_pct(timings, 0.95):.2f}"))
    raw = []
    for _ in range(rounds):
        began = time.perf_counter()
        app.send_task("bench.noop", queue="bench")
        raw.append((time.perf_counter() - began) * 1000)
    rows.append(("raw Celery send_task (same Redis)", f"{statistics.median(raw):.2f}",
                 f"{_pct(raw, 0.95):.2f}"))
    routed = statistics.median(timings)
    record(f"triggers: route one result among {sizes[-1]:,}, p50", f"{routed:.2f} ms",
           baseline=f"raw send_task: {statistics.median(raw):.2f} ms",
           ratio=routed / statistics.median(raw))
    return rows


def bench_precision(runtime, entries: int, seconds: float, burst: bool,
                    interval: float) -> list[tuple[str, ...]]:
    from mimikit.models import IntervalSchedule, Task, utcnow
    from mimikit.scheduling import triggers

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    logs = open(TMP / "procs.log", "ab")  # noqa: SIM115
    procs = [subprocess.Popen([sys.executable, "-m", "celery", "-A", "mimikit.celery_app",
                               "worker", "-Q", "supervisor", "-c", "2", "-l", "WARNING",
                               "-n", "bench-sup@x", "--without-mingle", "--without-gossip"],
                              cwd=ROOT, env=env, stdout=logs, stderr=subprocess.STDOUT)]
    procs.append(subprocess.Popen([sys.executable, "-m", "celery", "-A", "mimikit.celery_app",
                                   "beat", "-l", "WARNING"], cwd=ROOT, env=env, stdout=logs,
                                  stderr=subprocess.STDOUT))
    time.sleep(4)
    # Slots spread evenly over the interval, or all due at one instant (--burst); the first
    # ones after the installing is over, so only the scheduler's lateness is measured.
    first = utcnow() + timedelta(seconds=6 + entries / 500)
    made = [Task(type="recurring", prompt=f"job {i}", schedule=IntervalSchedule(
        interval=interval, nextRunAt=first + timedelta(
            seconds=0 if burst else interval * i / entries)))
        for i in range(entries)]
    runtime.tasks.add(made)
    for trigger in made:
        triggers.install(runtime, trigger)
    assert utcnow() < first, "installing took longer than planned; use fewer --entries"
    time.sleep(max((first - utcnow()).total_seconds(), 0) + seconds)
    for process in procs:
        process.send_signal(signal.SIGQUIT)  # cold shutdown: queued fire tasks are not waited for
    for process in procs:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    beat_late, created_late = [], []
    for trigger in made:
        for event in runtime.tasks.log_of(trigger.id):
            if event["type"] != "trigger_fired":
                continue
            beat_late.append(event["lateMs"])
            child = runtime.tasks.get(event["firedTaskId"])
            slot = datetime.fromisoformat(event["slot"])
            created_late.append((child.createdAt - slot).total_seconds() * 1000)
    if not beat_late:
        return [("no firing recorded; see " + str(TMP / "procs.log"), "-", "-")]
    shape = f"every {interval:g} s, " + ("all due at once" if burst else "spread")
    return [(f"beat publish lateness ({len(beat_late):,} firings, {shape})",
             f"{_pct(beat_late, 0.5):.0f}", f"{_pct(beat_late, 0.95):.0f}"),
            ("fired task created lateness", f"{_pct(created_late, 0.5):.0f}",
             f"{_pct(created_late, 0.95):.0f}")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, default=10_000)
    parser.add_argument("--entries", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--burst", action="store_true", help="all entries due at one instant")
    args = parser.parse_args()
    url = _setup_env()
    sys.path.insert(0, str(ROOT))
    from mimikit.config import load_settings
    from mimikit.embedded_redis import start
    from mimikit.store.runtime import build_runtime

    server = start(url, TMP / "redis", TMP / "redis.log")
    try:
        runtime = build_runtime(load_settings())
        sizes = sorted({s for s in (100, 1_000, args.triggers) if s <= args.triggers})
        rows = bench_routing(runtime, sizes, args.rounds)
        runtime.redis.flushall()
        rows += bench_precision(runtime, args.entries, args.seconds, args.burst,
                                args.interval)
    finally:
        server.terminate()
        server.wait(timeout=10)
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'p50 ms':>8}  {'p95 ms':>8}")
    for name, p50, p95 in rows:
        print(f"{name:<{width}}  {p50:>8}  {p95:>8}")
        if name.startswith("beat publish lateness"):
            record(f"triggers: {name}, p50", f"{p50} ms", baseline=f"p95: {p95} ms")


if __name__ == "__main__":
    main()
