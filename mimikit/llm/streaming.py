"""Reading a streamed chat completion, passing on as it arrives the text a person should read.

That text is, by the path of the request:
- an answer held to a schema: the value of its text field (the Teller's ``reply``), decoded
  from the JSON as far as it has arrived; where the model writes one of the field's ends (the
  runtime's words it copies), the answer ends, the rest never written, and the end not shown;
- the ``text`` argument of a ``reply`` tool call, as it streams;
- otherwise: the prose of the assistant's text, once the whole text is read
  (``reading.read_text``): a call written into it is never shown, not even in part.
The stream's result carries that one reading. The whole stream must end before the caller's
deadline, however slowly tokens come.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import json_repair

from mimikit.llm.completion import TextField
from mimikit.llm.reading import Written, read_text
from mimikit.llm.repeats import TAIL_CHARS, loop_cut, phrase_cut
from mimikit.llm.responses import usage_of
from mimikit.models import Usage

REPLY_TOOL = "reply"
# An answer held to a schema is read for a loop in any field once it is this long (a file
# written may repeat a line a few times on purpose); from its start when a person reads one of
# its fields (the Teller's reply).
LONG_ANSWER_CHARS = 2000


class Reading(NamedTuple):
    """How a stream is read: the tools offered, the field of an answer held to a schema a
    person reads (if any), and whether the answer is held to one."""

    names: list[str]
    text_field: TextField | None = None
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

    def feed(self, fragment: str) -> str:
        """Add ``fragment``; returns the text decoded since the last call ('' when none)."""
        self.raw += fragment
        start = self.start.search(self.raw)
        if start is None:
            return ""
        decoded = _decode_prefix(self.raw[start.end():])
        new, self.sent = decoded[len(self.sent):], decoded
        return new


def _begun_end(text: str, ends: tuple[str, ...]) -> int:
    """How many characters at the end of ``text`` may begin one of ``ends``."""
    return max((size for end in ends for size in range(1, len(end))
                if text.endswith(end[:size])), default=0)


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
    ended: bool = False  # cut where its text field began one of its ends (``TextField``)
    usage_sent: bool = False
    written: Written | None = None  # the text's one reading (not for an answer to a schema)


class _Reader:
    """The state of one stream being read."""

    def __init__(self, on_text: Callable[[str], None], names: Collection[str],
                 text_field: TextField | None, schema: bool) -> None:
        self.on_text, self.names, self.schema = on_text, frozenset(names), schema
        self.field = JsonText(text_field.name) if text_field else None
        self.ends = tuple(end.lower() for end in text_field.ends) if text_field else ()
        self.shown = 0  # of the field's text, shown
        self.ended = False
        self.content: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.replies: dict[int, JsonText] = {}
        self.usage, self.usage_sent, self.received = Usage(), False, 0
        self.finish_reason: str | None = None
        self.looped = False
        self.tail = ""  # the end of the answer, read for a loop

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
        self.tail = (self.tail + piece)[-TAIL_CHARS:]
        if not self.schema:
            if "\n" in piece:  # what follows the last line break repeats too
                self._cut(loop_cut(self.tail[:self.tail.rfind("\n") + 1]))
            return
        if self.field is not None:
            self.field.feed(piece)
            self._show_field()
        if self.ended:
            return
        if self.field is not None or self.received >= LONG_ANSWER_CHARS:
            self._cut(phrase_cut(self.tail))

    def _cut(self, cut: int | None) -> None:
        """End the answer at ``cut`` (an index of ``tail``), where it began to go round in a
        loop (``repeats``); an answer held to a schema has its strings and objects closed
        there (the 0.5B model wrote a Worker's error of 19,000 characters, one 374-character
        passage over and over, for six minutes)."""
        if cut is None:
            return
        text = "".join(self.content)
        kept = text[:len(text) - len(self.tail) + cut]
        self.content = [json_repair.repair_json(kept) if self.schema else kept]
        self.looped, self.finish_reason = True, "stop"

    def _show_field(self, whole: bool = False) -> None:
        """Show the text field's new text, up to where one of its ends begins (the answer ends
        after it: its strings and objects closed, what follows never written), holding back
        what may be the beginning of one until the rest of it comes (``whole``: the answer
        ended)."""
        assert self.field is not None
        text = self.field.sent
        lowered = text.lower()
        ended = min((at for end in self.ends if (at := lowered.find(end)) >= 0), default=None)
        upto = ended if ended is not None else \
            len(text) if whole else len(text) - _begun_end(lowered, self.ends)
        if upto > self.shown:
            self._show(text[self.shown:upto])
            self.shown = upto
        if ended is not None:  # the answer keeps the end, which its reader may look for
            answer = "".join(self.content)
            lowered = answer.lower()
            at = min(at + len(end) for end in self.ends if (at := lowered.find(end)) >= 0)
            self.content = [json_repair.repair_json(answer[:at])]
            self.ended, self.finish_reason = True, "stop"

    def _show(self, text: str) -> None:
        if text:
            self.on_text(text)

    def done(self) -> Streamed:
        if self.field is not None and not self.ended:
            self._show_field(whole=True)
        content = "".join(self.content)
        written = None
        if not self.schema:
            written = read_text(content, self.names)
            self._show(written.prose)
        found = [(c["id"], c["name"], c["arguments"]) for _index, c in sorted(self.calls.items())]
        return Streamed(content or None, found, self.usage, self.finish_reason, self.looped,
                        self.ended, self.usage_sent, written)


def read_stream(chunks: Iterable[Any], on_text: Callable[[str], None],
                deadline: float | None = None, names: Collection[str] = (REPLY_TOOL,),
                text_field: TextField | None = None, schema: bool = False) -> Streamed | None:
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
        if reader.looped or reader.ended:
            break
        if deadline is not None and time.monotonic() > deadline:
            raise PastDeadline(reader.received)
    return reader.done() if seen else None
