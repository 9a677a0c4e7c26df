"""The footprint of ``mimikit up``: the proportional set size (PSS, from
``/proc/PID/smaps_rollup``) of all its processes — launcher, the two workers (beat runs on a
thread of one), web — and of the redis-server it uses, idle and with 24 LLM-bound Worker runs
in flight.

Real processes: ``mimikit up`` as a user starts it, on the session's redis-server, the scripted
LLM over HTTP taking its time to answer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from fault_helpers import wait_until, worker_answers_after
from processes import footprint, free_port

from mimikit.lifecycle.submit import submit
from mimikit.models import Task

pytestmark = pytest.mark.slow
IDLE_TARGET_MB = 300
LOADED_TARGET_MB = 500
SLACK = 1.15  # the bound asserted: the target, with room for another machine's libraries
RUNS = 24


def _total(sizes: dict[str, float]) -> float:
    return round(sum(sizes.values()), 1)


def _measure(up: subprocess.Popen[str], redis_pid: int) -> dict[str, float]:
    """The PSS of up's processes and of its redis-server, the largest of a few samples."""
    best: dict[str, float] = {}
    for _ in range(5):
        sizes = {**footprint(up.pid), **footprint(redis_pid)}
        if _total(sizes) > _total(best):
            best = sizes
        time.sleep(0.3)
    return best


def test_mimikit_up_is_small_idle_and_with_24_runs_waiting_for_the_llm(
        wired, redis_server, llm, tmp_path, figures):
    runtime = wired
    llm.default("worker", worker_answers_after(30))
    env = {**os.environ, "MIMIKIT_PORT": str(free_port())}
    up = subprocess.Popen([sys.executable, "-m", "mimikit", "up"], cwd=tmp_path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True)
    lines: list[str] = []
    try:
        assert up.stdout is not None
        while not any("ready at" in line for line in lines):
            line = up.stdout.readline()
            assert line, "mimikit up exited:\n" + "".join(lines)
            lines.append(line)
        time.sleep(5)  # settled: the first ticks, the registrations
        idle = _measure(up, redis_server.process.pid)
        submit(runtime, [Task(prompt=f"think about it, job {n}") for n in range(RUNS)])
        wait_until(lambda: len(llm.requests_for("worker")) >= RUNS
                   and runtime.redis.scard(runtime.keys.status("running")) == RUNS, 60,
                   f"{RUNS} runs waiting for the LLM")
        loaded = _measure(up, redis_server.process.pid)
    finally:
        os.killpg(up.pid, signal.SIGINT)
        up.wait(timeout=60)
    figures.record("mimikit up, idle: PSS MB", total=_total(idle), target=IDLE_TARGET_MB, **idle)
    figures.record(f"mimikit up, {RUNS} Worker runs in flight: PSS MB", total=_total(loaded),
                   target=LOADED_TARGET_MB, **loaded)
    assert len(idle) == len(loaded) == 6, idle  # up, redis, 2 workers (beat a thread), web x2
    assert _total(idle) < IDLE_TARGET_MB * SLACK
    assert _total(loaded) < LOADED_TARGET_MB * SLACK
