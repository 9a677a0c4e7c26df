"""What ``tool_choice`` one server is sent, learned from how it answers.

A required call (``"required"``) or one forced function (``{"type": "function", ...}``) is
sent as asked until the server shows it does not hold its model to it: it answers without a
``tool_calls``, runs on in prose, or fails on it (llama-cpp-python's function-calling format
accepts only ``"auto"`` and a named function). From then on that kind is sent as ``"auto"``,
which every server offering tools accepts, and which some need before they offer any tool. A
server that refuses the field by name is not sent it at all.

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
    """The ``tool_choice`` kinds one server holds its model to, as far as seen."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.refused = False  # the server refuses the field itself
        self.unheld: set[str] = set()  # kinds sent as "auto" from now on
        self.held: set[str] = set()  # kinds answered with a tool call
        self.suspect: str | None = None  # a kind sent as "auto" once, after a failure

    @property
    def honoured(self) -> bool:
        """Whether a required call is sent and held to."""
        return not self.refused and "required" not in self.unheld

    def sent(self, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` with the ``tool_choice`` this server is sent."""
        value = options.get("tool_choice")
        if value is None:
            return options
        if self.refused or not options.get("tools"):
            return {k: v for k, v in options.items() if k != "tool_choice"}
        if kind(value) in self.unheld or kind(value) == self.suspect:
            return {**options, "tool_choice": "auto"}
        return options

    def binding(self, options: dict[str, Any]) -> bool:
        """Whether the options as sent require a tool call."""
        return kind(self.sent(options).get("tool_choice")) is not None

    def answered(self, options: dict[str, Any], completion: Completion) -> None:
        """Learn from an answer to ``options`` (as asked, before ``sent``)."""
        asked = kind(options.get("tool_choice"))
        if asked is None:
            return
        if self.suspect == asked:
            self._unhold(asked, "failed on it and answered without it")
        elif self.binding(options) and not completion.tool_calls:
            self._unhold(asked, "answered it without tool_calls")
        elif completion.tool_calls:
            self.held.add(asked)

    def ran_on_in_prose(self, options: dict[str, Any], began: str) -> None:
        """A stream that had to be a call began as prose."""
        asked = kind(options.get("tool_choice"))
        if asked is not None:
            self._unhold(asked, f"answered it with text ({began!r})")

    def refused_by(self, options: dict[str, Any], detail: str) -> bool:
        """A request refused naming ``tool_choice``: True when it should be asked again (with
        ``"auto"``, or without the field once ``"auto"`` was refused too)."""
        sent = self.sent(options).get("tool_choice")
        if sent is None or "tool_choice" not in detail.lower():
            return False
        if sent == "auto":
            self.refused = True
            logger.info("the LLM at %s refuses tool_choice: it is not sent again", self.url)
        else:
            self._unhold(kind(sent) or "required", "refused it")
        return True

    def blame(self, options: dict[str, Any]) -> bool:
        """A failed request that required a call the server never answered: True when it is
        to be asked once with ``"auto"`` before counting as a failure."""
        asked = kind(self.sent(options).get("tool_choice"))
        if asked is None or asked in self.held or self.suspect is not None:
            return False
        self.suspect = asked
        return True

    def acquit(self) -> None:
        """The request failed with ``"auto"`` too: the server is away, not particular."""
        self.suspect = None

    def _unhold(self, asked: str, why: str) -> None:
        self.suspect = None
        if asked not in self.unheld:
            self.unheld.add(asked)
            logger.info("the LLM at %s was sent tool_choice %s and %s: it is sent 'auto' "
                        "instead from now on", self.url, asked, why)
