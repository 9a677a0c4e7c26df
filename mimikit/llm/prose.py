"""Streaming an answer to the user without ever showing a tool call written into its text.

Text passes through as it arrives, except from the first character that could begin a call:
``{`` or ``[`` (a JSON blob), ```` ``` ```` (a fence around one), ``<tool_call>``,
``<|python_tag|>``, ``[TOOL_CALLS]``, ``<function=``, ``<tools>``, or a tool's name written as
a call (``delegate{``, ``<delegate ``). From there it is held until it is
clear: a marker's prefix is held for the few characters it takes to tell; a blob until it
closes (then shown if it is not a call of a known tool, the same judgement ``written_calls``
makes); a marker or a call stops the stream, and the end of the answer decides what of the rest
is prose. Spaces before a held part are held with it, so a call leaves no trailing blank.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Literal

from mimikit.llm.blobs import (
    CALL_START,
    CALL_START_PREFIX,
    MARKERS,
    Brackets,
    blob_calls,
    decode_at,
    looks_truncated,
    names_a_tool,
    skip,
)
from mimikit.llm.literals import NotLoose
from mimikit.llm.notation import (
    arguments_at,
    element_at,
    element_start,
    mentioned,
    name_prefixes,
    named_start,
    trailing_prefix,
)
from mimikit.llm.quirks import (
    FAILED_READ_COST_CHARS,
    SCAN_BUDGET_READS_PER_CHAR,
    written_calls,
)

Verdict = Literal["prose", "pending", "blob", "call"]
_FENCE = "```"
_FENCE_HEAD = re.compile(r"[\w+.\-]*+\s*+")
_LONGEST_MARKER = max(len(marker) for marker in MARKERS)


def _prefixes(words: list[str], depth: int = 0) -> str:
    """A regex for each of ``words`` in full, or any beginning of one that ends the text; as a
    trie, so that a character no word goes on with fails at once."""
    branches: dict[str, list[str]] = {}
    for word in words:
        if len(word) > depth:
            branches.setdefault(word[depth], []).append(word)
    if not branches:
        return ""  # a whole word (none is the beginning of another)
    parts = [re.escape(char) + _prefixes(group, depth + 1) for char, group in branches.items()]
    return "(?:" + "|".join(parts if depth == 0 else [*parts, r"\Z"]) + ")"


def _hold_pattern() -> re.Pattern[str]:
    """Where holding may start: a marker or its beginning at the end of the text, a fence that
    opens on a blob (or may), or a blob that may be a call (or may become one)."""
    fence = r"```[\w+.\-]*+\s*+(?:[{\[]|\Z)|``?\Z"
    parts = [_prefixes(list(MARKERS)), fence, CALL_START.pattern, CALL_START_PREFIX.pattern]
    return re.compile("(?=[<\\[{`])(?:" + "|".join(parts) + ")")


_HOLD = _hold_pattern()


class ProseFilter:
    """What of an answer arriving piece by piece may be shown to the user.

    Args:
        names: The tools the role may call (a blob naming another tool is shown as prose).
    """

    def __init__(self, names: Collection[str]) -> None:
        self.names = frozenset(names)
        self._named = named_start(self.names, at_end=True)
        self._element = element_start(self.names, at_end=True)
        self._prefixes = name_prefixes(self.names)
        self._held = ""  # not shown yet: from where a call could begin
        self._more: list[str] = []  # pieces after ``_held`` while a blob is open or a call began
        self._blob: Brackets | None = None  # the open blob ending ``_held``, read so far
        self._called = False  # a call began: nothing more streams
        self._shown = False
        # Blobs read and found not to be calls may be read again as text grows; past this many
        # characters read, the rest is held (never shown early) and ``finish`` decides.
        self._budget = 65536

    @property
    def holding(self) -> bool:
        """True while a call may have begun (part of the answer is held back)."""
        return self._called or self._blob is not None or bool(self._held.strip())

    def feed(self, piece: str) -> str:
        """Add the next piece of the answer; returns the text that may now be shown."""
        self._budget += SCAN_BUDGET_READS_PER_CHAR * len(piece)
        if self._called:
            self._more.append(piece)
            return ""
        if self._blob is not None:
            self._more.append(piece)
            if self._blob.feed(piece) < 0:
                return ""
            self._held += "".join(self._more)
            self._more, self._blob = [], None
        else:
            self._held += piece
        return self._scan()

    def finish(self) -> str:
        """The answer is complete; returns what is left to show (nothing if it was a call)."""
        held = "".join([self._held, *self._more])
        self._held, self._more, self._blob = "", [], None
        found = written_calls(held, self.names)
        if found is None:
            return "" if looks_truncated(held) else held
        if not found.prose or not self._shown:
            return found.prose
        lead = held[: len(held) - len(held.lstrip())]
        return ("\n\n" if "\n" in lead else " ") + found.prose

    def _scan(self) -> str:
        text, pos = self._held, 0
        while (found := self._hold_from(text, pos)) is not None:
            if found.re is self._named:
                verdict, pos = self._named_verdict(text, found)
            elif found.re is self._element:
                verdict, pos = self._element_verdict(text, found)
            else:
                verdict, pos = self._verdict(text, found.start())
            if verdict != "prose":
                self._called = verdict == "call"
                return self._show(text, pos)
        word = trailing_prefix(text, self._prefixes)  # "dele" may go on to "delegate{"
        if word < 0:
            return self._show(text, len(text))
        return self._show(text, word - 1 if text[word - 1 : word] in ("`", "<") else word)

    def _hold_from(self, text: str, pos: int) -> re.Match[str] | None:
        """The first place from ``pos`` where holding may start (see ``_HOLD``), or a tool's
        name written as a call in ``notation`` (or as an element) may begin."""
        found = [pattern.search(text, pos) for pattern in (_HOLD, self._named, self._element)]
        return min((match for match in found if match is not None),
                   key=lambda match: match.start(), default=None)

    def _named_verdict(self, text: str, found: re.Match[str]) -> tuple[Verdict, int]:
        bracket, hold = found.end(), _with_backtick(text, found.start())
        if bracket >= len(text) or self._budget <= 0:
            return ("pending" if self._budget > 0 else "call"), hold
        try:
            _arguments, end = arguments_at(text, bracket)
        except NotLoose as error:
            self._budget -= len(text) - bracket
            if error.at >= len(text):
                return "pending", hold  # still arriving
            if mentioned(text, found):
                return "prose", bracket
            return "call", hold  # ``finish`` reports it unreadable
        self._budget -= end - bracket
        return "call", hold

    def _element_verdict(self, text: str, found: re.Match[str]) -> tuple[Verdict, int]:
        if self._budget <= 0:
            return "call", found.start()
        try:
            _arguments, end = element_at(text, found)
        except NotLoose as error:
            self._budget -= error.at - found.start()
            return ("pending", found.start()) if error.at >= len(text) else ("prose", found.end())
        self._budget -= end - found.start()
        return "call", found.start()

    def _show(self, text: str, hold: int) -> str:
        cut = len(text[:hold].rstrip())
        shown, self._held = text[:cut], text[cut:]
        self._shown = self._shown or bool(shown)
        return shown

    def _verdict(self, text: str, index: int) -> tuple[Verdict, int]:
        """What may begin at ``index``: prose (and where to look on), or a call, a possible
        call or an open blob (and where to hold from)."""
        head = text[index : index + _LONGEST_MARKER]
        if head.startswith(MARKERS) or self._budget <= 0:
            return "call", index
        if index + len(head) == len(text) and any(m.startswith(head) for m in MARKERS):
            return "pending", index
        if head.startswith("`"):
            return self._fence_verdict(text, index)
        return self._blob_verdict(text, index, index)

    def _blob_verdict(self, text: str, index: int, hold: int) -> tuple[Verdict, int]:
        if CALL_START.match(text, index) is None:
            if CALL_START_PREFIX.match(text, index) is not None:
                return "pending", hold
            return "prose", index + 1
        found, read = decode_at(text, index)
        self._budget -= read if found is not None else read + FAILED_READ_COST_CHARS
        if found is not None:
            calls = blob_calls(found.value)
            if calls and all(name in self.names for name, _ in calls):
                return "call", hold
            return "prose", found.end
        if index + read < len(text):  # not JSON, and no more text will make it JSON
            return ("call", hold) if names_a_tool(text, index, self.names) else ("prose", index + 1)
        brackets = Brackets()  # unfinished: wait for its close, following it as it arrives
        closed = brackets.feed(text, index)
        self._budget -= len(text) - index
        if closed < 0:
            self._blob = brackets
            return "blob", hold
        return "prose", index + 1

    def _fence_verdict(self, text: str, index: int) -> tuple[Verdict, int]:
        if not text.startswith(_FENCE, index):
            return "pending", index  # "`" or "``" ending the text
        inside = skip(_FENCE_HEAD, text, index + len(_FENCE))
        if inside >= len(text):
            return "pending", index
        verdict, at = self._blob_verdict(text, inside, index)
        if verdict == "prose":  # what follows the fence is looked at on its own
            return "prose", index + len(_FENCE)
        return verdict, at


def _with_backtick(text: str, index: int) -> int:
    """``index``, or the backtick just before it (a call in backticks takes them with it)."""
    return index - 1 if text[index - 1 : index] == "`" else index
