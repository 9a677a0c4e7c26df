"""What ``tool_choice`` one server is sent, learned from how it answers.

A required call (``"required"``) or one forced function (``{"type": "function", ...}``) is
sent as asked until the server shows it does not hold its model to it: it answers without a
``tool_calls``, runs on in prose, or fails on it (llama-cpp-python's function-calling format
accepts only ``"auto"`` and a named function). From then on that kind is sent as ``"auto"``,
which every server offering tools accepts, and which some need before they offer any tool. A
server that refuses the field by name is not sent it at all.

A forced function is offered alone (the other tools left out of that request), so that even
a server that holds its model to nothing shows the model only the call it must make. Where the
server does not hold to the named function (llama.cpp's ``llama-server`` reads only the
strings ``"auto"``, ``"none"`` and ``"required"``, and takes the object as ``"auto"``), it is
sent as ``"required"`` from then on, the same demand with one tool offered; and as ``"auto"``
where ``"required"`` is not held either. A streamed answer that runs on in prose is asked again
at once the next way.

Under ``"auto"``, llama-cpp-python's function-calling format answers a chosen call with its
name alone (``functions.delegate:``): that answer is asked again at once with the function
forced, which that server then writes whole.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from typing import Any

from mimikit.llm.completion import Completion

logger = logging.getLogger("mimikit.llm")
NAMING_PREFIX = "functions."
_NAMED = re.compile(r"\s*functions\.([A-Za-z_][\w-]*):?\s*")


def named_only(content: str | None, names: Collection[str]) -> str | None:
    """The tool an answer names and no more (``functions.delegate:``), when it is one of
    ``names``."""
    found = _NAMED.fullmatch(content or "")
    return found[1] if found and found[1] in names else None


def may_be_naming(content: str) -> bool:
    """Whether ``content`` so far may still turn out to name a tool and no more."""
    text = content.lstrip()
    if not text:
        return False
    return NAMING_PREFIX.startswith(text) or bool(_NAMED.fullmatch(text))


def forced(name: str) -> dict[str, Any]:
    """The ``tool_choice`` that makes the model call ``name``."""
    return {"type": "function", "function": {"name": name}}


def kind(value: Any) -> str | None:
    """``"required"``, ``"forced"`` (one named function), or None (``"auto"``, nothing)."""
    if value == "required":
        return "required"
    return "forced" if isinstance(value, dict) else None


class ChoicePolicy:
    """The ``tool_choice`` kinds one server holds its model to, as far as seen.

    A kind is ``"required"``, ``"forced"`` (a named function) or ``"one-tool"`` (a forced
    function sent as ``"required"`` with it the only tool offered).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.refused = False  # the server refuses the field itself
        self.unheld: set[str] = set()  # kinds sent as "auto" (or another way) from now on
        self.held: set[str] = set()  # kinds answered with a tool call
        self.suspect: str | None = None  # a kind sent as "auto" once, after a failure

    @property
    def honoured(self) -> bool:
        """Whether a required call is sent and held to."""
        return not self.refused and "required" not in self.unheld

    def sent(self, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` with the ``tool_choice`` (and tools) this server is sent."""
        value = options.get("tool_choice")
        if value is None:
            return options
        if self.refused or not options.get("tools"):
            return {k: v for k, v in options.items() if k != "tool_choice"}
        if kind(value) == "forced":
            name = value["function"]["name"]
            alone = [tool for tool in options["tools"] if tool["function"]["name"] == name]
            options = {**options, "tools": alone or options["tools"]}
        way = self._way(value)
        if way is None:
            return {**options, "tool_choice": "auto"}
        if way == "one-tool":
            return {**options, "tool_choice": "required"}
        return options

    def binding(self, options: dict[str, Any]) -> bool:
        """Whether the options as sent require a tool call."""
        return not self.refused and bool(options.get("tools")) and \
            self._way(options.get("tool_choice")) is not None

    def answered(self, options: dict[str, Any], completion: Completion) -> None:
        """Learn from an answer to ``options`` (as asked, before ``sent``)."""
        intended = self._intended(options.get("tool_choice"))
        if intended is None or self.refused or not options.get("tools"):
            return
        if self.suspect == intended:
            self._unhold(intended, "failed on it and answered without it")
        elif not completion.tool_calls:
            self._unhold(intended, "answered it without tool_calls")
        else:
            self.held.add(intended)

    def ran_on_in_prose(self, options: dict[str, Any], began: str) -> None:
        """A stream that had to be a call began as prose."""
        intended = self._intended(options.get("tool_choice"))
        if intended is not None:
            self._unhold(intended, f"answered it with text ({began!r})")

    def refused_by(self, options: dict[str, Any], detail: str) -> bool:
        """A request refused naming ``tool_choice``: True when it should be asked again (another
        way, ``"auto"`` at last, or without the field once ``"auto"`` was refused too)."""
        sent = self.sent(options).get("tool_choice")
        if sent is None or "tool_choice" not in detail.lower():
            return False
        way = self._way(options.get("tool_choice"))
        if way is None:
            self.refused = True
            logger.info("the LLM at %s refuses tool_choice: it is not sent again", self.url)
        else:
            self._unhold(way, "refused it")
        return True

    def blame(self, options: dict[str, Any]) -> bool:
        """A failed request that required a call the server never answered: True when it is
        to be asked once with ``"auto"`` before counting as a failure."""
        if not self.binding(options):
            return False
        way = self._way(options.get("tool_choice"))
        if way is None or way in self.held or self.suspect is not None:
            return False
        self.suspect = way
        return True

    def acquit(self) -> None:
        """The request failed with ``"auto"`` too: the server is away, not particular."""
        self.suspect = None

    def _intended(self, value: Any) -> str | None:
        """The kind ``value`` is sent as while it is held to (the suspect not counted)."""
        asked = kind(value)
        if asked == "forced" and "forced" in self.unheld:
            asked = "one-tool"
        if asked == "one-tool" and "required" in self.unheld:
            return None
        return None if asked in self.unheld else asked

    def _way(self, value: Any) -> str | None:
        """The kind ``value`` is sent as now; None for ``"auto"``."""
        intended = self._intended(value)
        return None if intended == self.suspect else intended

    def _unhold(self, asked: str, why: str) -> None:
        self.suspect = None
        if asked not in self.unheld:
            self.unheld.add(asked)
            instead = "'required' with only that function offered" \
                if asked == "forced" and "required" not in self.unheld else "'auto'"
            logger.info("the LLM at %s was sent tool_choice %s and %s: it is sent %s "
                        "instead from now on", self.url, asked, why, instead)
