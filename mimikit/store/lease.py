"""Leases: a Redis key held by one owner (``host:pid:id``) with a time limit; and claims, taken
once cluster-wide.

A lease whose holder died on this host is taken over at once instead of blocking until it
expires; renewing and releasing only ever touch a lease the caller still holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def acquire(redis: Any, key: str, owner: str, seconds: int,
            is_alive: Callable[[str], bool]) -> bool:
    """Take the lease at ``key``; True when ``owner`` holds it now."""
    return bool(redis.set(key, owner, nx=True, ex=seconds)) or \
        take_over(redis, key, owner, seconds, is_alive)


def take_over(redis: Any, key: str, owner: str, seconds: int,
              is_alive: Callable[[str], bool]) -> bool:
    """Take the lease at ``key`` from a holder that died (``is_alive`` says so), once taking
    it as a free lease failed; True when ``owner`` holds it now."""
    holder = redis.get(key)
    if holder is None or is_alive(holder.decode()):
        return False
    redis.eval(_RELEASE, 1, key, holder)
    return bool(redis.set(key, owner, nx=True, ex=seconds))


def renew(redis: Any, key: str, owner: str, seconds: int) -> bool:
    """Extend the lease; False when ``owner`` no longer holds it."""
    return bool(redis.eval(_RENEW, 1, key, owner, seconds))


def release(redis: Any, key: str, owner: str | bytes) -> bool:
    """Give the lease back if ``owner`` still holds it; True when it did."""
    return bool(redis.eval(_RELEASE, 1, key, owner))


def claim(redis: Any, key: str, ttl_seconds: int | None = None) -> bool:
    """True the first time ``key`` is claimed cluster-wide (until it expires)."""
    return bool(redis.set(key, "1", nx=True, ex=ttl_seconds))
