"""Leases: one holder, taken over from a dead holder, renewed and released only by the holder."""

from __future__ import annotations

import os

from mimikit.store import lease
from mimikit.store.identity import HOSTNAME, owner_alive


def test_a_lease_has_one_holder_until_released(runtime):
    redis, key = runtime.redis, runtime.keys.meta("some-lease")
    me, other = f"{HOSTNAME}:{os.getpid()}:a", f"{HOSTNAME}:{os.getpid()}:b"
    assert lease.acquire(redis, key, me, 30, owner_alive)
    assert not lease.acquire(redis, key, other, 30, owner_alive)
    assert not lease.renew(redis, key, other, 30) and lease.renew(redis, key, me, 30)
    assert not lease.release(redis, key, other)
    assert lease.release(redis, key, me)
    assert lease.acquire(redis, key, other, 30, owner_alive)


def test_a_dead_holders_lease_is_taken_over_at_once(runtime):
    redis, key = runtime.redis, runtime.keys.meta("some-lease")
    redis.set(key, f"{HOSTNAME}:999999999:gone", ex=600)
    assert lease.acquire(redis, key, f"{HOSTNAME}:{os.getpid()}:me", 30, owner_alive)
