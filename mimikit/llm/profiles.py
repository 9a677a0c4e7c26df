"""The profiles one client knows (``llm.profile``): looked up in the keeper (Redis, shared by
every process of an instance), else named from the server's model listing and kept; read
again from the keeper now and then, so what one process learned reaches the others; and
taught by every answer (``learn_from``)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from mimikit.exceptions import LLMUnavailable
from mimikit.llm import choice
from mimikit.llm.completion import Completion
from mimikit.llm.profile import ServerProfile, profile_for

logger = logging.getLogger("mimikit.llm")
REREAD_SECONDS = 30.0  # how long a profile is used before it is read from the keeper again
UNNAMED_RETRY_SECONDS = 10.0  # a server that could not be asked its name is asked again then


class ProfileKeeper(Protocol):
    """Where profiles are kept (``profile_store.RedisProfiles``)."""

    def load(self, base_url: str, model: str) -> ServerProfile | None:
        """The kept profile, or None."""

    def save(self, profile: ServerProfile) -> None:
        """Keep ``profile``."""


class Profiles:
    """The profiles of one client's server, by model."""

    def __init__(self, url: Callable[[], str], owners: Callable[[], list[str]],
                 keeper: ProfileKeeper | None) -> None:
        """``url`` gives the server's base URL, ``owners`` the ``owned_by`` of the models it
        lists (raising ``LLMUnavailable`` when it cannot be asked)."""
        self.url, self.owners, self.keeper = url, owners, keeper
        self._known: dict[str, tuple[ServerProfile, float]] = {}
        self._lock = threading.Lock()

    def get(self, model: str) -> ServerProfile:
        """The profile for ``model``, named from the server's listing the first time."""
        with self._lock:
            known = self._known.get(model)
            if known is not None and time.monotonic() < known[1]:
                return known[0]
            profile = self.keeper.load(self.url(), model) if self.keeper else None
            if profile is None and known is not None and known[0].server != "unknown server":
                profile = known[0]
            until = time.monotonic() + REREAD_SECONDS
            if profile is None:
                profile, named = self._named(model)
                if named:
                    self._keep(profile)
                else:
                    until = time.monotonic() + UNNAMED_RETRY_SECONDS
            self._known[model] = (profile, until)
            return profile

    def reread(self, model: str) -> ServerProfile:
        """The profile for ``model`` as kept now (another process may have learned it)."""
        with self._lock:
            self._known.pop(model, None)
        return self.get(model)

    def put(self, profile: ServerProfile) -> None:
        """Use and keep ``profile`` (a probe's)."""
        with self._lock:
            self._known[profile.model] = (profile, time.monotonic() + REREAD_SECONDS)
        self._keep(profile)

    def learn(self, profile: ServerProfile, what: str, **changes: Any) -> None:
        """Teach ``profile`` what an answer showed, and keep it when that is new."""
        if profile.learn(what, **changes):
            logger.info("the LLM at %s (%s): %s; path now %s", self.url(), profile.model,
                        what, profile.path)
            self._keep(profile)

    def learn_from(self, profile: ServerProfile, asked: dict[str, Any], completion: Completion,
                   streamed: bool) -> None:
        """What one answer to ``asked`` shows of the server."""
        changed = choice.answered(asked, completion, profile) if "tools" in asked else False
        if completion.tool_calls:
            changed = profile.learn("returned native tool calls", nativeCalls=True) or changed
        elif "tools" in asked and completion.written is not None and completion.written.calls:
            changed = profile.learn("wrote tool calls into its text", writtenCalls=True) \
                or changed
        if "response_format" in asked and not _an_object(completion):
            changed = profile.learn("did not hold an answer to its schema",
                                    constraint=None) or changed
        if streamed and completion.usage_streamed is not None:
            changed = profile.learn("streams " + ("with" if completion.usage_streamed else
                                                  "without") + " usage",
                                    streamUsage=completion.usage_streamed) or changed
        if completion.usage.cachedTokens and not profile.cachedTokens:
            changed = profile.learn("reports cached prompt tokens", cachedTokens=True) or changed
        if changed:
            self._keep(profile)

    def _named(self, model: str) -> tuple[ServerProfile, bool]:
        """A first profile from the server's listing; False when the server was not reached."""
        try:
            owners = self.owners()
        except LLMUnavailable:
            return ServerProfile(baseUrl=self.url(), model=model), False
        return profile_for(self.url(), model, owners), True

    def _keep(self, profile: ServerProfile) -> None:
        if self.keeper is not None:
            self.keeper.save(profile)


def _an_object(completion: Completion) -> bool:
    """Whether an answer held to a schema is one JSON object (a cut one is not counted)."""
    if completion.finish_reason == "length":
        return True
    try:
        return isinstance(json.loads(completion.content or ""), dict)
    except (json.JSONDecodeError, RecursionError):
        return False
