"""Reading a streamed chat completion, passing on as it arrives the text a person should read.

That text is the assistant's content, through a ``ProseFilter`` (a tool call the model wrote
into its text is never shown), or the ``text`` argument of a ``reply`` tool call, whose JSON
arrives in fragments: it is decoded as far as it is complete at each fragment. The whole
stream must end before the caller's deadline, however slowly the tokens come.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from mimikit.llm.choice import may_be_naming
from mimikit.llm.notation import may_be_command_line
from mimikit.llm.prose import ProseFilter
from mimikit.llm.repeats import TAIL_CHARS, loop_cut
from mimikit.llm.responses import usage_of
from mimikit.models import Usage

REPLY_TOOL = "reply"
_TEXT_VALUE = re.compile(r'"text"\s*:\s*"')
_PARTIAL_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{0,3})?$')


# An answer asked for a tool call (``tool_choice``) that runs on in prose this long, with no call
# begun, shows that the server does not hold its model to the call; small models let loose there
# often repeat themselves up to ``max_tokens``.
PROSE_BEFORE_GIVING_UP = 160


class IgnoresToolChoice(Exception):
    """Raised while reading a stream asked for a tool call (``tool_choice``) that ran on in
    prose (``PROSE_BEFORE_GIVING_UP`` characters): the server does not hold its model to it."""


class PastDeadline(Exception):
    """Raised while reading a stream whose deadline passed (``received``: characters so far)."""

    def __init__(self, received: int) -> None:
        super().__init__(f"deadline passed after {received} characters")
        self.received = received


class ReplyText:
    """The ``text`` value of a JSON object arriving in fragments, decoded as far as it goes."""

    def __init__(self) -> None:
        self.raw = ""
        self.sent = ""

    def feed(self, fragment: str) -> str:
        """Add ``fragment``; returns the text decoded since the last call ('' when none)."""
        self.raw += fragment
        start = _TEXT_VALUE.search(self.raw)
        if start is None:
            return ""
        decoded = _decode_prefix(self.raw[start.end():])
        new, self.sent = decoded[len(self.sent):], decoded
        return new


def _decode_prefix(body: str) -> str:
    """The JSON string starting at ``body`` (after its opening quote), as far as it is whole."""
    end, escaped = len(body), False
    for index, char in enumerate(body):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            end = index
            break
    whole = _PARTIAL_ESCAPE.sub("", body[:end])
    if whole.endswith("\\") and not whole.endswith("\\\\"):
        whole = whole[:-1]
    try:
        text: str = json.loads(f'"{whole}"')
    except json.JSONDecodeError:  # a surrogate pair cut in half: wait for the rest
        return ""
    return text


def _grown_name(name: str, piece: str, names: Collection[str]) -> str:
    """A call's name after one more delta: pieces add up, but a server that sends the whole
    name again in every delta (llama-cpp-python) does not make it longer."""
    return name if piece == name or name in names else name + piece


@dataclass
class Streamed:
    """What a stream of chunks made up."""

    content: str | None
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # id, name, arguments
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    looped: bool = False  # cut where it began to go round in a loop (``repeats``)


class _Reader:
    """The state of one stream being read."""

    def __init__(self, on_text: Callable[[str], None], names: Collection[str],
                 calls_only: bool = False) -> None:
        self.on_text = on_text
        self.calls_only = calls_only
        self.prose = ProseFilter(names)
        self.names = frozenset(names)
        self.content: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.replies: dict[int, ReplyText] = {}
        self.usage, self.received = Usage(), 0
        self.finish_reason: str | None = None
        self.held = ""  # text of an answer that must be a call, shown only once it is not prose
        self.looped = False
        self.naming = True  # the text so far may name a tool and no more

    def take(self, chunk: Any) -> None:
        if getattr(chunk, "usage", None) is not None:
            self.usage = usage_of(chunk.usage, getattr(chunk, "timings", None))
        for choice in chunk.choices or []:
            self.finish_reason = getattr(choice, "finish_reason", None) or self.finish_reason
            self._delta(choice.delta)

    def _delta(self, delta: Any) -> None:
        if delta is None:
            return
        if delta.content:
            self.content.append(delta.content)
            if "\n" in delta.content and self._looping():
                return
            if self.calls_only and not self.calls:
                self._check_prose()
            self.received += len(delta.content)
            self._show(self.prose.feed(delta.content))
        for part in delta.tool_calls or []:
            call = self.calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
            call["id"] = part.id or call["id"]
            function = part.function
            if function is None:
                continue
            call["name"] = _grown_name(call["name"], function.name or "", self.names)
            arguments = function.arguments or ""
            if not isinstance(arguments, str):  # an object in one piece (some servers)
                arguments = json.dumps(arguments, ensure_ascii=False)
            call["arguments"] += arguments
            self.received += len(arguments)
            if call["name"] == REPLY_TOOL and arguments:
                self._show(self.replies.setdefault(part.index, ReplyText()).feed(arguments))

    def _looping(self) -> bool:
        """Whether the text ends in a loop (``repeats``): the answer then ends where it began."""
        tail = ""
        for piece in reversed(self.content):  # only the end is read, on every line break
            tail = piece + tail
            if len(tail) >= TAIL_CHARS:
                break
        lines = tail[-TAIL_CHARS:]
        lines = lines[:lines.rfind("\n") + 1]  # what follows the last line break repeats too
        cut = loop_cut(lines)
        if cut is None:
            return False
        text = "".join(self.content)
        ended = text.rfind("\n") + 1  # where ``lines`` ends in the text
        self.content = [text[:ended - len(lines) + cut]]
        self.looped, self.finish_reason = True, "stop"
        return True

    def _check_prose(self) -> None:
        text = "".join(self.content).lstrip()
        if len(text) >= PROSE_BEFORE_GIVING_UP and not text.startswith(("{", "[", "<", "`")) \
                and not self.prose.holding:
            raise IgnoresToolChoice(text[:80])

    def _show(self, text: str) -> None:
        if self.naming and self._may_be_naming():
            self.held += text  # may name a tool and no more (``choice.named_only``), or be
            return  # a call written as a command line (``notation.command_line``)
        self.naming = False
        if self.calls_only and not self.calls:
            self.held += text  # prose that may yet be given up on: never shown twice
        elif self.held or text:
            self.on_text(self.held + text)
            self.held = ""

    def _may_be_naming(self) -> bool:
        text = "".join(self.content)
        return may_be_naming(text) or may_be_command_line(text, self.names)

    def done(self) -> Streamed:
        if self.naming and self._may_be_naming():
            self.held = ""  # a tool named and no more, or a command line: never shown
        self.naming = False
        self._show(self.prose.finish())
        self.calls_only = False
        self._show("")
        found = [(c["id"], c["name"], c["arguments"]) for _index, c in sorted(self.calls.items())]
        return Streamed("".join(self.content) or None, found, self.usage, self.finish_reason,
                        self.looped)


def read_stream(chunks: Iterable[Any], on_text: Callable[[str], None],
                deadline: float | None = None, names: Collection[str] = (REPLY_TOOL,),
                calls_only: bool = False) -> Streamed | None:
    """What a stream of chunks makes up; None when no chunk came (the server answered without
    streaming). ``names`` are the tools offered (a call of one written as text is not shown);
    ``calls_only``: a tool call was required, so text before any call means the server did not
    hold its model to it.

    Raises:
        PastDeadline: ``deadline`` (a ``time.monotonic()`` value) passed while reading.
        IgnoresToolChoice: ``calls_only``, and the answer began with text.
    """
    reader = _Reader(on_text, names, calls_only)
    seen = False
    for chunk in chunks:
        seen = True
        reader.take(chunk)
        if reader.looped:
            break
        if deadline is not None and time.monotonic() > deadline:
            raise PastDeadline(reader.received)
    return reader.done() if seen else None
