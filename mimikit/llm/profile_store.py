"""The servers' profiles (``llm.profile``), kept in Redis so that every process of an instance
knows what one of them learned, and a new worker process pays nothing to know it."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from redis.exceptions import RedisError

from mimikit.llm.profile import ServerProfile

log = logging.getLogger("mimikit.llm")


class RedisProfiles:
    """A ``ProfileKeeper`` over one hash of the instance's Redis (``key``)."""

    def __init__(self, redis: Any, key: str) -> None:
        self.redis, self.key = redis, key

    def load(self, base_url: str, model: str) -> ServerProfile | None:
        try:
            raw = self.redis.hget(self.key, _field(base_url, model))
        except RedisError:
            return None  # asked again later: a profile is not worth failing a request for
        return _parsed(raw) if raw else None

    def save(self, profile: ServerProfile) -> None:
        try:
            self.redis.hset(self.key, _field(profile.baseUrl, profile.model),
                            profile.model_dump_json())
        except RedisError as error:
            log.warning("could not keep the LLM profile of %s: %s", profile.baseUrl, error)

    def all(self) -> list[ServerProfile]:
        """Every kept profile."""
        found = [_parsed(raw) for raw in self.redis.hvals(self.key)]
        return [profile for profile in found if profile is not None]


def _field(base_url: str, model: str) -> str:
    return f"{base_url.rstrip('/')}|{model}"


def _parsed(raw: bytes | str) -> ServerProfile | None:
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
        return ServerProfile.model_validate_json(text, context={"stored": True})
    except ValidationError:
        return None  # from another version: learned again
