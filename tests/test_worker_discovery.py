"""Live workers are found through a sorted set of their names, never by reading the keyspace;
each keeps its entry with a time to live, and names not seen for long leave the set."""

from __future__ import annotations

from mimikit.delivery.workers import (
    FORGET_NAME_SECONDS,
    register_worker,
    unregister_worker,
    workers,
)
from mimikit.models import utcnow
from mimikit.status import status
from mimikit.tasks.listing import list_page


def names(runtime) -> list[str]:
    return [w["name"] for w in workers(runtime)]


def test_registered_workers_are_listed_until_they_unregister(runtime):
    register_worker(runtime, {"name": "b@host", "queues": ["worker"]})
    register_worker(runtime, {"name": "a@host", "queues": ["teller"]})
    assert names(runtime) == ["a@host", "b@host"]
    assert 0 < runtime.redis.ttl(runtime.keys.worker("a@host")) <= 30
    unregister_worker(runtime, "a@host")
    assert names(runtime) == ["b@host"]
    assert runtime.redis.zrange(runtime.keys.worker_names, 0, -1) == [b"b@host"]


def test_a_worker_whose_entry_expired_is_not_listed_and_its_name_goes_later(runtime):
    register_worker(runtime, {"name": "gone@host", "queues": ["worker"]})
    runtime.redis.delete(runtime.keys.worker("gone@host"))  # its time to live ran out
    assert names(runtime) == []
    long_ago = utcnow().timestamp() - FORGET_NAME_SECONDS - 1
    runtime.redis.zadd(runtime.keys.worker_names, {"gone@host": long_ago})
    assert names(runtime) == []
    assert runtime.redis.zcard(runtime.keys.worker_names) == 0


def test_status_and_the_task_list_never_scan_the_keyspace(runtime):
    register_worker(runtime, {"name": "w@host", "queues": ["worker"]})
    for n in range(50):
        runtime.redis.set(f"{runtime.keys.prefix}:workers:decoy{n}", "not a worker entry")
    runtime.redis.config_resetstat()
    report = status(runtime)
    list_page(runtime, "all")
    commands = runtime.redis.info("commandstats")
    assert [w["name"] for w in report["workers"]] == ["w@host"]
    assert not {"cmdstat_scan", "cmdstat_keys"} & set(commands), sorted(commands)


def test_a_real_worker_registers_its_name(procs, runtime):
    procs.worker(queues="worker", name="discovered")
    found = names(runtime)
    assert len(found) == 1 and found[0].startswith("discovered-")
    assert runtime.redis.zscore(runtime.keys.worker_names, found[0]) is not None
