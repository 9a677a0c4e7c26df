"""Reading a streamed chat completion, passing on as it arrives the text a person should read.

That text is, by the path of the request:
- an answer held to a schema: the value of its text field (the Teller's ``reply``), decoded
  from the JSON as far as it has arrived;
- otherwise: the assistant's prose (``reading.ShownText``: nothing from where a call written
  into the text may begin), or the ``text`` argument of a ``reply`` tool call as it streams.
The text is read once, at the end, by ``reading.read_text``; the stream's result carries that
reading. The whole stream must end before the caller's deadline, however slowly tokens come.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import json_repair

from mimikit.llm.reading import ShownText, Written, read_text
from mimikit.llm.repeats import (
    PASSAGE_CHARS,
    REPEATED_PASSAGES,
    TAIL_CHARS,
    loop_cut,
    phrase_cut,
)
from mimikit.llm.responses import usage_of
from mimikit.models import Usage

REPLY_TOOL = "reply"
# An answer held to a schema is read for a loop in any field once it is this long (a file
# written may repeat a line a few times on purpose), over its last characters: room for
# ``REPEATED_PASSAGES`` copies of the longest passage, twice.
LONG_ANSWER_CHARS = 2000
LOOP_WINDOW_CHARS = 2 * REPEATED_PASSAGES * PASSAGE_CHARS


class Reading(NamedTuple):
    """How a stream is read: the tools offered, the field of an answer held to a schema a
    person reads (if any), and whether the answer is held to one."""

    names: list[str]
    text_field: str | None = None
    schema: bool = False
_PARTIAL_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{0,3})?$')


class PastDeadline(Exception):
    """Raised while reading a stream whose deadline passed (``received``: characters so far)."""

    def __init__(self, received: int) -> None:
        super().__init__(f"deadline passed after {received} characters")
        self.received = received


class JsonText:
    """The value of one string field of a JSON object arriving in fragments, decoded as far as
    it goes."""

    def __init__(self, key: str) -> None:
        self.start = re.compile(rf'"{re.escape(key)}"\s*:\s*"')
        self.raw = ""
        self.sent = ""

    def opening(self) -> str:
        """The text received up to the value, its opening quote included."""
        start = self.start.search(self.raw)
        return self.raw[:start.end()] if start else ""

    def feed(self, fragment: str) -> str:
        """Add ``fragment``; returns the text decoded since the last call ('' when none)."""
        self.raw += fragment
        start = self.start.search(self.raw)
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
    usage_sent: bool = False
    written: Written | None = None  # the text's one reading (not for an answer to a schema)


class _Reader:
    """The state of one stream being read."""

    def __init__(self, on_text: Callable[[str], None], names: Collection[str],
                 text_field: str | None, schema: bool) -> None:
        self.on_text, self.names, self.schema = on_text, frozenset(names), schema
        self.shown = ShownText(names)
        self.field = JsonText(text_field) if text_field else None
        self.content: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.replies: dict[int, JsonText] = {}
        self.usage, self.usage_sent, self.received = Usage(), False, 0
        self.finish_reason: str | None = None
        self.looped = False
        self.tail = ""  # the end of an answer held to a schema, read for a loop

    def take(self, chunk: dict[str, Any]) -> None:
        """Read one chunk, as decoded from the stream's JSON (plain dicts: a chunk is not
        built into the SDK's objects, which costs some 60 us each)."""
        if chunk.get("usage") is not None:
            self.usage = usage_of(chunk["usage"], chunk.get("timings"))
            self.usage_sent = True
        for choice in chunk.get("choices") or []:
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
            self._delta(choice.get("delta"))

    def _delta(self, delta: dict[str, Any] | None) -> None:
        if not delta:
            return
        if delta.get("content"):
            self._content(delta["content"])
        for part in delta.get("tool_calls") or []:
            index = part.get("index")
            if index is None:  # a server that numbers no call: a new id is a new call
                index = len(self.calls) if part.get("id") or not self.calls else max(self.calls)
            call = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
            call["id"] = part.get("id") or call["id"]
            function = part.get("function")
            if not function:
                continue
            call["name"] = _grown_name(call["name"], function.get("name") or "", self.names)
            arguments = function.get("arguments") or ""
            if not isinstance(arguments, str):  # an object in one piece (some servers)
                arguments = json.dumps(arguments, ensure_ascii=False)
            call["arguments"] += arguments
            self.received += len(arguments)
            if call["name"] == REPLY_TOOL and arguments:
                self._show(self.replies.setdefault(index, JsonText("text")).feed(arguments))

    def _content(self, piece: str) -> None:
        self.content.append(piece)
        self.received += len(piece)
        if self.schema:
            if self.field is not None:
                self._show(self.field.feed(piece))
                self._field_looping()
            if not self.looped:
                self._answer_looping(piece)
            return
        if "\n" in piece and self._looping():
            return
        self._show(self.shown.feed(piece))

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

    def _field_looping(self) -> None:
        """Whether the text field ends in a phrase said again and again (``repeats``): the
        answer then ends after its first copy, the object closed after the field (the last
        of its shape)."""
        assert self.field is not None
        cut = phrase_cut(self.field.sent)
        if cut is None:
            return
        kept = json.dumps(self.field.sent[:cut].rstrip(), ensure_ascii=False)
        self.content = [self.field.opening() + kept[1:] + "}"]
        self.looped, self.finish_reason = True, "stop"

    def _answer_looping(self, piece: str) -> None:
        """Whether an answer held to a schema, past ``LONG_ANSWER_CHARS``, ends in a phrase said
        again and again in any of its fields (the 0.5B model wrote a Worker's error of 19,000
        characters, one 374-character passage over and over, for six minutes): the answer then
        ends after the first copy, its strings and objects closed where it was cut."""
        self.tail = (self.tail + piece)[-LOOP_WINDOW_CHARS:]
        if self.received < LONG_ANSWER_CHARS:
            return
        cut = phrase_cut(self.tail)
        if cut is None:
            return
        text = "".join(self.content)
        self.content = [json_repair.repair_json(text[:len(text) - len(self.tail) + cut])]
        self.looped, self.finish_reason = True, "stop"

    def _show(self, text: str) -> None:
        if text:
            self.on_text(text)

    def done(self) -> Streamed:
        content = "".join(self.content)
        written = None
        if not self.schema and not self.calls:
            written = read_text(content, self.names)
            self._show(self.shown.finish(written))
        found = [(c["id"], c["name"], c["arguments"]) for _index, c in sorted(self.calls.items())]
        return Streamed(content or None, found, self.usage, self.finish_reason, self.looped,
                        self.usage_sent, written)


def read_stream(chunks: Iterable[Any], on_text: Callable[[str], None],
                deadline: float | None = None, names: Collection[str] = (REPLY_TOOL,),
                text_field: str | None = None, schema: bool = False) -> Streamed | None:
    """What a stream of chunks (decoded JSON) makes up; None when no chunk came (the server
    answered without streaming). ``names`` are the tools offered; ``schema``: the answer is
    held to a schema, whose ``text_field`` (if any) a person reads as it arrives.

    Raises:
        PastDeadline: ``deadline`` (a ``time.monotonic()`` value) passed while reading.
    """
    reader = _Reader(on_text, names, text_field, schema)
    seen = False
    for chunk in chunks:
        seen = True
        if isinstance(chunk, dict):  # anything else (a bare value) holds nothing to read
            reader.take(chunk)
        if reader.looped:
            break
        if deadline is not None and time.monotonic() > deadline:
            raise PastDeadline(reader.received)
    return reader.done() if seen else None
