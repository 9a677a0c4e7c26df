"""Worker fan-out with real LLM latency: how many LLM-bound runs wait side by side, and what
holding them costs in memory.

The scripted LLM runs as a process of its own and takes ``--latencies`` seconds (1 and 5) to
answer each request. Each Worker task makes three LLM calls (two ``list_files``, then
``submit_result``). For each latency and each number of runs in flight (``--levels``: 3, 24,
100; ``MIMIKIT_CONCURRENCY`` of ``mimikit up``), ``--tasks`` tasks (at most ``--rounds`` per
slot, so the 3-slot rows do not take an hour) are submitted at once; tasks/s, the share of the
ideal (slots / (3 x latency)) and the peak PSS of every process of ``mimikit up`` (and its
redis-server) are printed beside raw Celery tasks making the same three calls on the prefork
pool and on the threads pool, with as many processes or threads (``raw_app.py``).

    python bench/bench_fanout.py [--tasks 200] [--levels 3,24,100] [--latencies 1,5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stack import BENCH, ROOT, free_port
from summary import record

CALLS = 3
READY_SECONDS = 120
RAW_DB, MIMIKIT_DB = 14, 13


@dataclass
class Row:
    latency: float
    level: int
    system: str
    tasks: int
    seconds: float
    peak_mb: float
    in_flight: int | None = None

    @property
    def rate(self) -> float:
        return self.tasks / self.seconds

    @property
    def ideal(self) -> float:
        return self.level / (CALLS * self.latency)


class PeakPss(threading.Thread):
    """The largest total PSS of the process trees under ``pids``, sampled every 0.25 s."""

    def __init__(self, pids: list[int]) -> None:
        super().__init__(daemon=True)
        self.pids, self.peak, self.done = pids, 0.0, threading.Event()

    def run(self) -> None:
        from processes import footprint

        while not self.done.wait(0.25):
            total = sum(sum(footprint(pid).values()) for pid in self.pids)
            self.peak = max(self.peak, total)

    def stop(self) -> float:
        self.done.set()
        self.join(timeout=5)
        return round(self.peak, 1)


def start_llm(tmp: Path, latency: float) -> tuple[subprocess.Popen[str], str]:
    """The scripted LLM as a process: the Worker model answers after ``latency`` seconds, two
    ``list_files`` calls and then ``submit_result``; the Teller at once."""
    from llm_server import delay, steps, text, tool_call

    done = tool_call("submit_result", status="done", resultType="text", result={"text": "ok"})
    listing = tool_call("list_files", path=".")
    script = {"defaults": {"worker": steps(delay(latency, listing), delay(latency, listing),
                                           delay(latency, done)),
                           "teller": text("noted")}}
    path = tmp / f"script-{latency:g}.json"
    path.write_text(json.dumps(script))
    port = free_port()
    process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "llm_server.py"), "--port",
                                str(port), "--script", str(path)], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def _stop(process: subprocess.Popen[Any], first: int = signal.SIGTERM) -> None:
    try:
        os.killpg(process.pid, first)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def run_mimikit(tmp: Path, redis_url: str, llm_url: str, latency: float, level: int,
                tasks: int, redis_pid: int) -> Row:
    """``mimikit up`` with ``level`` runs in flight; ``tasks`` Worker tasks submitted at once."""
    from mimikit.lifecycle.submit import submit
    from mimikit.models import Task

    home = tmp / f"mimikit-{latency:g}-{level}"
    (home / "work").mkdir(parents=True)
    env = {**os.environ, "MIMIKIT_REDIS_URL": redis_url, "MIMIKIT_STATE_DIR": str(home / "state"),
           "MIMIKIT_WORK_DIR": str(home / "work"), "MIMIKIT_PORT": str(free_port()),
           "MIMIKIT_CONCURRENCY": str(level), "MIMIKIT_LLM_BASE_URL": llm_url,
           "MIMIKIT_WORKER_MODEL": "worker", "MIMIKIT_TELLER_MODEL": "teller",
           "MIMIKIT_WORKER_TIMEOUT": "3600"}
    up = subprocess.Popen([sys.executable, "-m", "mimikit", "up"], cwd=home / "work", env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True)
    try:
        _wait_ready(up)
        runtime = _runtime(env)
        peak = PeakPss([up.pid, redis_pid])
        peak.start()
        most = 0
        began = time.perf_counter()
        ids = [t.id for t in submit(runtime, [Task(prompt=f"list the files, job {n}")
                                              for n in range(tasks)])]
        while sum(runtime.redis.smismember(runtime.keys.status("done"), ids)) < tasks:
            most = max(most, runtime.redis.scard(runtime.keys.status("running")))
            time.sleep(0.05)
        seconds = time.perf_counter() - began
        return Row(latency, level, "Mimikit (mimikit up)", tasks, seconds, peak.stop(), most)
    finally:
        _stop(up, signal.SIGINT)


def _wait_ready(up: subprocess.Popen[str]) -> None:
    assert up.stdout is not None
    deadline, seen = time.monotonic() + READY_SECONDS, []
    while time.monotonic() < deadline:
        line = up.stdout.readline()
        seen.append(line)
        if "ready at" in line:
            threading.Thread(target=lambda: [None for _ in up.stdout], daemon=True).start()
            return
        if not line:
            break
    raise SystemExit("mimikit up did not say ready:\n" + "".join(seen[-30:]))


def _runtime(env: dict[str, str]) -> Any:
    """A runtime on the instance's Redis (every instance of this run uses the same database,
    emptied in between: the bench's Celery app keeps the broker it first connected to)."""
    from mimikit.config import load_settings
    from mimikit.store.runtime import build_runtime

    os.environ["MIMIKIT_REDIS_URL"] = env["MIMIKIT_REDIS_URL"]
    return build_runtime(load_settings(redis_url=env["MIMIKIT_REDIS_URL"],
                                       state_dir=env["MIMIKIT_STATE_DIR"],
                                       work_dir=env["MIMIKIT_WORK_DIR"]))


def run_raw(tmp: Path, redis_url: str, llm_url: str, latency: float, level: int, tasks: int,
            pool: str) -> Row:
    """A bare Celery worker on ``pool`` with ``level`` processes or threads; ``tasks`` tasks
    each making the same three LLM calls."""
    env = {**os.environ, "MIMIKIT_BENCH_RAW_URL": redis_url, "MIMIKIT_BENCH_LLM_URL": llm_url,
           "PYTHONPATH": str(BENCH)}
    argv = [sys.executable, "-m", "celery", "-A", "raw_app", "worker", "-Q", "raw", "-P", pool,
            "-c", str(level), "-n", f"raw-{pool}@bench", "-l", "WARNING", "--without-mingle",
            "--without-gossip", "--prefetch-multiplier", "1"]
    with open(tmp / f"raw-{pool}-{level}.log", "ab") as log:
        worker = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=BENCH,
                                  start_new_session=True)
    try:
        from raw_app import app

        deadline = time.monotonic() + READY_SECONDS
        while not app.control.ping(timeout=0.5, destination=[f"raw-{pool}@bench"]):
            if time.monotonic() > deadline:
                raise SystemExit(f"the raw {pool} worker did not start; see {tmp}")
        app.send_task("raw.noop").get(timeout=60)
        peak = PeakPss([worker.pid])
        peak.start()
        began = time.perf_counter()
        results = [app.send_task("raw.llm_calls", args=[CALLS, f"job {n}"])
                   for n in range(tasks)]
        failed = sum(1 for result in results
                     if isinstance(result.get(timeout=3600, propagate=False), Exception))
        seconds = time.perf_counter() - began
        system = f"raw Celery, {pool} pool" + (f" ({failed} FAILED)" if failed else "")
        return Row(latency, level, system, tasks, seconds, peak.stop())
    finally:
        _stop(worker, signal.SIGQUIT)


def print_rows(rows: list[Row]) -> None:
    print(f"\n| latency | in flight | {'system':<26} | tasks | seconds | tasks/s | ideal | "
          "of ideal | peak PSS MB | most running |")
    print(f"|---------|-----------|{'-' * 28}|-------|---------|---------|-------|----------|"
          "-------------|--------------|")
    for r in rows:
        most = "" if r.in_flight is None else str(r.in_flight)
        print(f"| {r.latency:5g} s | {r.level:9d} | {r.system:<26} | {r.tasks:5d} | "
              f"{r.seconds:7.1f} | {r.rate:7.2f} | {r.ideal:5.2f} | {r.rate / r.ideal:7.0%} | "
              f"{r.peak_mb:11.1f} | {most:>12} |", flush=True)


def summarize(rows: list[Row]) -> None:
    for ours in (r for r in rows if r.system.startswith("Mimikit")):
        same = [r for r in rows if (r.latency, r.level) == (ours.latency, ours.level)]
        for raw in (r for r in same if r.system.startswith("raw")):
            record(f"fan-out {ours.level} in flight, {ours.latency:g} s calls: tasks/s against "
                   f"{raw.system}", f"{ours.rate:.2f} tasks/s ({ours.peak_mb:.0f} MB)",
                   baseline=f"{raw.rate:.2f} tasks/s ({raw.peak_mb:.0f} MB)",
                   ratio=ours.rate / raw.rate)
        record(f"fan-out {ours.level} in flight, {ours.latency:g} s calls: share of the ideal",
               f"{ours.rate / ours.ideal:.0%}", baseline=f"ideal {ours.ideal:.2f} tasks/s",
               ratio=ours.rate / ours.ideal, target=">= 80%" if ours.level >= 24 else "",
               met=ours.rate >= 0.8 * ours.ideal if ours.level >= 24 else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--levels", default="3,24,100")
    parser.add_argument("--latencies", default="1,5")
    parser.add_argument("--rounds", type=int, default=8,
                        help="at most this many tasks per slot (bounds the 3-slot rows)")
    args = parser.parse_args()
    from mimikit import embedded_redis

    tmp = Path(tempfile.mkdtemp(prefix="mimikit-bench-fanout-"))
    redis_port = free_port()
    url = f"redis://127.0.0.1:{redis_port}"
    redis = embedded_redis.start(f"{url}/0", tmp / "redis", tmp / "redis.log")
    os.environ["MIMIKIT_BENCH_RAW_URL"] = f"{url}/{RAW_DB}"
    rows: list[Row] = []
    try:
        for latency in (float(x) for x in args.latencies.split(",")):
            llm, llm_url = start_llm(tmp, latency)
            os.environ["MIMIKIT_BENCH_LLM_URL"] = llm_url
            try:
                for level in (int(x) for x in args.levels.split(",")):
                    tasks = min(args.tasks, level * args.rounds)
                    rows.append(run_mimikit(tmp, f"{url}/{MIMIKIT_DB}", llm_url, latency, level,
                                            tasks, redis.pid))
                    _flush(f"{url}/{MIMIKIT_DB}")
                    for pool in ("prefork", "threads"):
                        rows.append(run_raw(tmp, f"{url}/{RAW_DB}", llm_url, latency, level,
                                            tasks, pool))
                    print_rows(rows[-3:])
            finally:
                llm.terminate()
                llm.wait(timeout=10)
        print(f"\n## fan-out, {CALLS} LLM calls a task (all rows)")
        print_rows(rows)
        summarize(rows)
    finally:
        redis.terminate()
        redis.wait(timeout=30)


def _flush(url: str) -> None:
    from redis import Redis

    Redis.from_url(url).flushdb()


if __name__ == "__main__":
    main()
