"""An instance that ran for months: 50,000 finished tasks. Listing tasks and the status stay
fast (they never load every finished task nor scan the keyspace), and once the tasks are past
the retention the tick's pruning gives their memory back and leaves no dead id behind."""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from datetime import timedelta

import pytest
from web_helpers import web_server  # noqa: F401  (fixture)

from mimikit.delivery.workers import register_worker
from mimikit.models import Task, utcnow
from mimikit.store.retention import GRACE_SECONDS, task_keys
from mimikit.store.writepipe import WritePipe
from mimikit.supervisor.retention import PRUNE_BATCH, prune_finished

FINISHED_TASKS = 50_000
WRITE_BATCH = 2_000
CALLS = 15
BOUND_MS = 50.0


def used_memory(runtime) -> int:
    return int(runtime.redis.info("memory")["used_memory"])


def settled_memory(runtime, seconds: float = 15.0) -> int:
    """used_memory once Redis has shrunk its key tables: it does so in its cron, a step at a
    time, and not while a child process (an AOF rewrite after the big write) is running."""
    deadline, last = time.monotonic() + seconds, used_memory(runtime)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = used_memory(runtime)
        if now == last and not runtime.redis.info("persistence").get("aof_rewrite_in_progress"):
            return now
        last = now
    return last


def write_finished(runtime, count: int) -> None:
    """``count`` tasks finished over the last days, as the store writes them, in pipelines."""
    keys, keep = runtime.keys, runtime.settings.retention_seconds + GRACE_SECONDS
    start = utcnow() - timedelta(days=20)
    for first in range(0, count, WRITE_BATCH):
        pipe = runtime.redis.pipeline(transaction=False)
        writer = WritePipe(pipe, [], keep)
        for n in range(first, min(first + WRITE_BATCH, count)):
            done_at = start + timedelta(seconds=n * 10)
            task = Task(id=f"task-{n:08d}", prompt=f"finished job number {n}", status="done",
                        attempts=1, createdAt=done_at - timedelta(seconds=5),
                        startedAt=done_at - timedelta(seconds=4), completedAt=done_at)
            writer.put_task(keys, task, "running")
            pipe.set(keys.result(task.id), json.dumps(
                {"id": task.id, "status": "done", "result": {"text": f"result {n}"}}))
            pipe.rpush(keys.task_log(task.id), json.dumps({"type": "task_done",
                                                           "taskId": task.id}))
        writer.seal(keys)
        pipe.execute()


def median_ms(url: str) -> tuple[float, list[float]]:
    times = []
    for _ in range(CALLS):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=10) as reply:
            assert reply.status == 200
            reply.read()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), times


@pytest.mark.slow
def test_50000_finished_tasks_list_fast_and_go_without_a_trace(runtime, web_server):  # noqa: F811
    redis, keys = runtime.redis, runtime.keys
    baseline_memory, baseline_keys = used_memory(runtime), redis.dbsize()
    started = time.perf_counter()
    write_finished(runtime, FINISHED_TASKS)
    wrote_s = time.perf_counter() - started
    active = runtime.tasks.add([Task(prompt=f"active {n}") for n in range(20)])
    register_worker(runtime, {"name": "w@host", "queues": ["worker"]})
    full_memory = used_memory(runtime)
    print(f"\nwrote {FINISHED_TASKS:,} finished tasks in {wrote_s:.1f} s; used_memory "
          f"{baseline_memory / 2**20:.1f} MiB -> {full_memory / 2**20:.1f} MiB")

    web_server.start()
    redis.config_resetstat()
    for path in ("/api/tasks", "/api/tasks?scope=finished&limit=50", "/api/status"):
        median, times = median_ms(web_server.url + path)
        print(f"GET {path}: median {median:.1f} ms over {CALLS} calls "
              f"(min {min(times):.1f}, max {max(times):.1f})")
        assert median < BOUND_MS, path
    commands = redis.info("commandstats")
    assert not {"cmdstat_scan", "cmdstat_keys"} & set(commands)
    listed = web_server.get_json("/api/tasks")["tasks"]
    assert {t.id for t in active} <= {t["id"] for t in listed}
    assert len(listed) == len(active) + 50 and listed[-1]["id"] == f"task-{FINISHED_TASKS - 50:08d}"

    started, batches = time.perf_counter(), 0
    past_retention = (utcnow() + timedelta(days=31)).timestamp() - runtime.settings.retention_seconds
    while prune_finished(runtime, past_retention):
        batches += 1
    pruned_s = time.perf_counter() - started
    # What is left is the active tasks (and the log lines of their creation) and the worker:
    # take them away too, to compare with the empty instance of the start.
    for task in active:
        redis.delete(*task_keys(keys, task.id))
    redis.delete(keys.status("queued"), keys.log, keys.events, keys.worker("w@host"),
                 keys.worker_names)
    after_memory = settled_memory(runtime)
    print(f"pruned in {batches} batches of {PRUNE_BATCH} in {pruned_s:.1f} s; used_memory "
          f"{after_memory / 2**20:.1f} MiB (baseline {baseline_memory / 2**20:.1f} MiB, "
          f"{(after_memory - baseline_memory) / 2**10:+.0f} KiB); keys {redis.dbsize()} "
          f"(baseline {baseline_keys})")
    assert batches == FINISHED_TASKS // PRUNE_BATCH
    for status in ("done", "failed", "canceled"):
        assert redis.scard(keys.status(status)) == 0
    assert redis.zcard(keys.finished) == 0
    # What is left: the counters of /metrics (one hash, counts since the instance began) and
    # Celery's routing table of each queue (declared when the web warmed up to send tasks).
    left = sorted(k.decode() for k in redis.scan_iter(count=1000))  # the test may scan
    routing = [k for k in left if "_kombu.binding" in k]
    assert left == sorted([keys.counters, *routing]), left
    assert redis.dbsize() == baseline_keys + 1 + len(routing)
    assert all(k.startswith(f"{keys.prefix}:celery:_kombu.binding") for k in routing), routing
    reclaimed = (full_memory - after_memory) / (full_memory - baseline_memory)
    assert reclaimed > 0.97, f"only {reclaimed:.1%} of the memory was given back"
