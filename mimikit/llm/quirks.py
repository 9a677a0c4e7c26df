"""Tool calls that arrive in the wrong place or shape, read back into calls.

Servers and small models do not always return calls in ``tool_calls``: they write them into the
message text, and they send arguments in more than one encoding. Where each shape comes from
(llama.cpp is ``llama-server --jinja``; its parsers in ``common/chat.cpp`` decide what stays text,
and when one fails on a finished answer the whole answer comes back as plain text):

| shape written in the text                                | who sends it                        |
|----------------------------------------------------------|-------------------------------------|
| ``<tool_call>{"name", "arguments"}</tool_call>``, one or | Qwen2.5 and Hermes 2/3 templates    |
| several in one message                                   | (llama.cpp "Hermes 2 Pro"); text    |
|                                                          | when the JSON inside does not parse |
|                                                          | or its first key is not "name", and |
|                                                          | past the first call in builds whose |
|                                                          | parser reads one                    |
| bare ``{"name", "arguments"}`` with prose around it      | Qwen2.5 0.5B/1.5B, gpt-4o-mini      |
| bare ``{"name", "parameters"}``, also with               | Llama 3.1/3.2/3.3 JSON tool format; |
| ``"type": "function"`` first                             | llama.cpp ("Llama 3.x") parses it   |
|                                                          | only at the start of the answer,    |
|                                                          | "name" before "parameters"          |
| ``<|python_tag|>{"name", "parameters"}``, several joined | Llama 3.1 (llama.cpp reads only     |
| by ``;``                                                 | ``<|python_tag|>tool.call(...)``)   |
| ``[TOOL_CALLS] [{"name", "arguments", "id"}]``           | Mistral 7B v0.3, Nemo               |
|                                                          | (llama.cpp "Mistral Nemo")          |
| ``[TOOL_CALLS]name[ARGS]{...}``                          | newer Mistral templates             |
| ``<function=name>{...}</function>``                      | Llama 3.x alternative, Functionary  |
|                                                          | v3.1 (llama.cpp Hermes accepts it)  |
| a call fenced in ```` ```json ````                       | Qwen2.5, Llama 3.2, gpt-4o-mini     |
| ``{{"name": ...}}`` (braces doubled)                     | small models copying a prompt       |
|                                                          | example escaped for a template      |
| ``{"type": "function", "function": {"name",              | models echoing the OpenAI wire      |
| "arguments"}}``, and lists of any of these               | format (gpt-4o-mini, qwen2.5)       |
| ``{"tool_call": {...}}`` / ``{"tool_calls": [...]}``     | llama.cpp "Generic" format (models  |
|                                                          | whose template it does not know)    |
| ``{"tool_uses": [{"recipient_name": "functions.x",       | OpenAI models leaking their         |
| "parameters"}]}``                                        | ``multi_tool_use.parallel``         |
| ``delegate{prompt: "..."}``, ``delegate(prompt="...")``  | small models copying a prompt's     |
| and the other shapes in ``notation``                     | notation; Llama's code-style calls  |
| ``<tools><delegate prompt="..."/></tools>`` (``notation``) | Qwen2.5-Coder 1.5B                |

| arguments arrive as                                      | from                                |
|----------------------------------------------------------|-------------------------------------|
| a JSON string (the OpenAI contract)                      | OpenAI, vLLM, llama.cpp by default  |
| a JSON object                                            | TGI; llama-server builds before     |
|                                                          | objects became opt-in               |
|                                                          | (``--tool-args-object``)            |
| a JSON string holding a JSON string of the object        | small models encoding twice         |

Everything here is pure: text in, values out, never an exception; ``prose.py`` builds the
streaming filter on the same readers.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from mimikit.llm.blobs import (
    CALL_START,
    ORPHANS,
    WORDLIKE,
    Decoded,
    arguments_text,
    blob_calls,
    close_of,
    decode_at,
    looks_truncated,
    names_a_tool,
    skip,
    tool_name,
)
from mimikit.llm.literals import NotLoose
from mimikit.llm.notation import (
    arguments_at,
    command_line,
    element_at,
    element_start,
    mentioned,
    named_start,
)

__all__ = ["WrittenCalls", "arguments_text", "looks_truncated", "written_calls"]

EXCERPT_CHARS = 200  # of an unreadable call, quoted back to the model
BROKEN_KEPT = 8  # excerpts of unreadable calls kept; the model needs no more to correct itself
# Failed JSON reads may re-read text; past this many characters per character of the message
# the search stops (a message crafted to make every brace a long failed read stays linear).
SCAN_BUDGET_READS_PER_CHAR = 16
FAILED_READ_COST_CHARS = 1024  # each failed read also costs this much (its fixed overhead)

_START = re.compile(r"(?=[<\[{])(?:<tool_call>|<\|python_tag\|>|\[TOOL_CALLS\]"
                    r"|<function=([^>\s]{1,200})>|" + CALL_START.pattern + ")")
_SEPARATORS = re.compile(r"[\s,;]*+")
_MISTRAL_NAMED = re.compile(r"\s*+([\w.\-]+)(?:\[CALL_ID\][\w\-]*+)?\[ARGS\]")
_CODE_CALL = re.compile(r"\s*+[\w.]+\(")  # <|python_tag|>brave_search.call(query="...")
# A fence emptied by taking its call out, with the spaces on its line (the lookbehind starts a
# match only where a run of spaces starts, so a long run is crossed once).
_EMPTY_FENCE = re.compile(r"(?<![ \t])[ \t]*+```[\w+.\-]*+\s*+```[ \t]*+")
_TAG, _TAG_CLOSE, _FUNCTION_CLOSE = "<tool_call>", "</tool_call>", "</function>"
_TOOLS, _TOOLS_CLOSE = "<tools>", re.compile(r"\s*+</tools>")


@dataclass(frozen=True)
class WrittenCalls:
    """The tool calls found in a message's text.

    ``calls`` are (tool name, arguments JSON text) of known tools; ``unknown`` the names of calls
    that were clearly calls (after a marker) of tools that do not exist; ``broken`` excerpts of
    marked calls that could not be read; ``prose`` the text around them, markers removed.
    """

    calls: list[tuple[str, str]]
    prose: str
    unknown: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)


def written_calls(content: str, names: Collection[str]) -> WrittenCalls | None:
    """The tool calls written in a message's text (see the module's table for the shapes).

    A JSON blob counts only when it names one of ``names``, so ordinary JSON in an answer is
    left alone; after a call marker (``<tool_call>``, ``<|python_tag|>``, ``[TOOL_CALLS]``,
    ``<function=...>``) it is a call whatever it names, and an unknown name is reported.

    Args:
        content: The message text.
        names: The tools the role may call.

    Returns:
        The calls and the prose around them, or None when the text holds no call.
    """
    if not isinstance(content, str) or not content:
        return None
    scan = _Scan(content, frozenset(names))
    scan.run()
    if not (scan.calls or scan.unknown or scan.broken):
        return _command_line(content, scan.names)
    return WrittenCalls(calls=scan.calls, prose=_prose(content, scan.spans),
                        unknown=scan.unknown, broken=scan.broken)


def _command_line(content: str, names: frozenset[str]) -> WrittenCalls | None:
    """A call written as a command line (``ask_user "What's up?"``), or names and strings
    that make no one call (a broken call); None for any other text."""
    line = command_line(content, names)
    if line is None:
        return None
    name, arguments = line
    if name is None:
        return WrittenCalls(calls=[], prose="", broken=[content.strip()[:EXCERPT_CHARS]])
    return WrittenCalls(calls=[(name, arguments_text(arguments))], prose="")


class _Scan:
    """One left-to-right pass over a message, collecting calls and the spans they cover."""

    def __init__(self, text: str, names: frozenset[str]) -> None:
        self.text, self.names = text, names
        self.calls: list[tuple[str, str]] = []
        self.unknown: list[str] = []
        self.broken: list[str] = []
        self.spans: list[tuple[int, int]] = []
        self.budget = SCAN_BUDGET_READS_PER_CHAR * len(text) + 65536
        self._found: dict[str, tuple[int, int]] = {}
        self._named = named_start(names)
        self._element = element_start(names)
        self._next: dict[re.Pattern[str], tuple[int, re.Match[str] | None]] = {}

    def run(self) -> None:
        pos = 0
        while self.budget > 0 and (match := self._first(pos)) is not None:
            pos = max(self._at(match), match.start() + 1)

    def _first(self, pos: int) -> re.Match[str] | None:
        """The next place from ``pos`` where a call may begin: a marker or blob, or a name."""
        found = [self._search(pattern, pos) for pattern in (_START, self._named, self._element)]
        return min((match for match in found if match is not None),
                   key=lambda match: match.start(), default=None)

    def _search(self, pattern: re.Pattern[str], pos: int) -> re.Match[str] | None:
        """``pattern.search(text, pos)``, remembering the answer while it still holds."""
        since, match = self._next.get(pattern, (-1, None))
        if since < 0 or pos < since or (match is not None and match.start() < pos):
            match = pattern.search(self.text, pos)
            self._next[pattern] = (pos, match)
        return match

    def _at(self, match: re.Match[str]) -> int:
        if match.re is self._named:
            return self._named_call(match)
        if match.re is self._element:
            return self._element_call(match)
        token = match.group()
        if token == _TAG:
            return self._tagged(match)
        if token in ("<|python_tag|>", "[TOOL_CALLS]"):
            return self._prefixed(match)
        if match.group(1) is not None:
            return self._function_tag(match)
        found = self._decode(match.start())
        if found is None:
            return self._unread_blob(match.start())
        calls = blob_calls(found.value)
        if calls and all(name in self.names for name, _ in calls):
            self._take(calls, found.start, found.end)
        return found.end

    def _unread_blob(self, start: int) -> int:
        """A blob that does not read: a broken call when it names one of the tools and closes
        (``{"name": "ask_user", "arguments": {"options": ["a": 1]}}``), else looked past."""
        if not names_a_tool(self.text, start, self.names):
            return start + 1
        close = close_of(self.text, start)
        self.budget -= (close if close > 0 else len(self.text)) - start
        return self._unreadable(start, close) if close > 0 else start + 1

    def _tagged(self, match: re.Match[str]) -> int:
        body = match.end()
        close = self._find(_TAG_CLOSE, body)
        after = self._find(_TAG, body)  # an unclosed tag ends where the next one opens
        closed = close >= 0 and (after < 0 or close < after)
        stop = close if closed else (after if after >= 0 else len(self.text))
        end, values = self._values(body, stop)
        if closed:
            values = values or _repaired(self.text, body, close)
            end = close + len(_TAG_CLOSE)
        if values:
            self._take_marked(values, match.start(), end)
            return end
        if closed or self.text[body:stop].lstrip()[:1] in ("", "{", "["):
            return self._unreadable(match.start(), end if closed else stop)
        return body  # a mention of the tag in prose

    def _prefixed(self, match: re.Match[str]) -> int:
        named = None
        if match.group() == "[TOOL_CALLS]":
            named = _MISTRAL_NAMED.match(self.text, match.end())
        if named is not None:
            end, values = self._values(named.end(), len(self.text))
            if values:
                self._take([(tool_name(named.group(1)), values[0].value)], match.start(), end)
                return end
        end, values = self._values(match.end(), len(self.text))
        if values:
            self._take_marked(values, match.start(), end)
            return end
        rest = self.text[match.end() : match.end() + EXCERPT_CHARS]
        if rest.strip() and not _CODE_CALL.match(rest):
            return match.end()  # a mention of the marker in prose
        return self._unreadable(match.start(), len(self.text))

    def _function_tag(self, match: re.Match[str]) -> int:
        body = match.end()
        close = self._find(_FUNCTION_CLOSE, body)
        stop = close if close >= 0 else len(self.text)
        end, values = self._values(body, stop)
        if close >= 0:
            end = close + len(_FUNCTION_CLOSE)
        if not values and (close < 0 or self.text[body:stop].strip()):
            return self._unreadable(match.start(), end if close >= 0 else stop)
        arguments: Any = values[0].value if values else {}
        self._take([(tool_name(match.group(1)), arguments)], match.start(), end)
        return end

    def _named_call(self, match: re.Match[str]) -> int:
        """``delegate{prompt: "..."}`` and the other shapes ``notation`` reads."""
        bracket = match.end()
        try:
            arguments, end = arguments_at(self.text, bracket)
        except NotLoose as error:
            self.budget -= error.at - bracket + FAILED_READ_COST_CHARS
            if mentioned(self.text, match):
                return bracket
            close = close_of(self.text, bracket)
            return self._unreadable(match.start(), close if close > 0 else len(self.text))
        self.budget -= end - bracket
        start = match.start()
        if self.text[start - 1 : start] == "`" and self.text[end : end + 1] == "`":
            start, end = start - 1, end + 1  # `delegate{...}`: its backticks go with it
        self._take([(match.group(1), arguments)], start, end)
        return end

    def _element_call(self, match: re.Match[str]) -> int:
        """``<delegate prompt="..."/>`` and the other element shapes ``notation`` reads; an
        element that does not read as one is a mention in prose."""
        try:
            arguments, end = element_at(self.text, match)
        except NotLoose as error:
            self.budget -= error.at - match.start() + FAILED_READ_COST_CHARS
            return match.end()
        start = match.start()
        self.budget -= end - start
        opened = self.text.rfind(_TOOLS, max(0, start - EXCERPT_CHARS), start)
        if opened >= 0 and not self.text[opened + len(_TOOLS) : start].strip():
            start = opened  # the <tools> list it stands first in goes with it
        closed = _TOOLS_CLOSE.match(self.text, end)
        end = closed.end() if closed is not None else end
        self._take([(match.group(1), arguments)], start, end)
        return end

    def _values(self, pos: int, stop: int) -> tuple[int, list[Decoded]]:
        """The JSON values from ``pos`` on (apart by spaces, commas or semicolons) before
        ``stop``, and where the last one ends."""
        values: list[Decoded] = []
        end = pos
        while True:
            pos = skip(_SEPARATORS, self.text, pos)
            if pos >= stop or self.text[pos] not in "{[":
                return end, values
            found = self._decode(pos)
            if found is None or found.end > stop:
                return end, values
            values.append(found)
            pos = end = found.end

    def _decode(self, index: int) -> Decoded | None:
        found, read = decode_at(self.text, index)
        if found is None:
            self.budget -= read + FAILED_READ_COST_CHARS
        return found

    def _find(self, needle: str, start: int) -> int:
        """``text.find(needle, start)``, remembering the answer: starts only grow, so each
        needle is searched through the text once rather than once per marker."""
        since, hit = self._found.get(needle, (-1, -2))
        if since < 0 or start < since or (0 <= hit < start):
            hit = self.text.find(needle, start)
            self._found[needle] = (start, hit)
        return hit

    def _take_marked(self, values: list[Decoded], start: int, end: int) -> None:
        calls: list[tuple[str, Any]] = []
        for value in values:
            found = blob_calls(value.value)
            if found is None:
                self._broken(value.start, value.end)
            else:
                calls.extend(found)
        self._take(calls, start, end)

    def _take(self, calls: list[tuple[str, Any]], start: int, end: int) -> None:
        # A bare blob arrives here only when every name is known: the unknown come from markers.
        for name, arguments in calls:
            if name in self.names:
                self.calls.append((name, arguments_text(arguments)))
            else:
                self.unknown.append(name)
        self.spans.append((start, end))

    def _unreadable(self, start: int, end: int) -> int:
        self._broken(start, end)
        self.spans.append((start, end))
        return end

    def _broken(self, start: int, end: int) -> None:
        if len(self.broken) < BROKEN_KEPT:
            self.broken.append(self.text[start : min(end, start + EXCERPT_CHARS)])


def _repaired(text: str, body: int, close: int) -> list[Decoded]:
    """The call in a closed tag whose JSON lacks its last brace or two (small models do)."""
    segment = text[body:close].strip()
    for missing in ("}", "}}"):
        found, _read = decode_at(segment + missing, 0)
        if found is not None:
            return [Decoded(found.value, body, close)]
    return []


def _prose(text: str, spans: list[tuple[int, int]]) -> str:
    """The text outside ``spans``, each piece stripped, markers and emptied fences removed."""
    pieces, last = [], 0
    for start, end in spans:
        pieces.append(text[last:start])
        last = max(last, end)
    pieces.append(text[last:])
    out: list[str] = []
    gap = ""
    for piece in pieces:
        piece = ORPHANS.sub("", piece)
        body = piece.strip()
        if not body:
            gap += piece
            continue
        if out:
            out.append("\n\n" if "\n" in gap + piece[: len(piece) - len(piece.lstrip())] else " ")
        out.append(body)
        gap = piece[len(piece.rstrip()):]
    prose = _EMPTY_FENCE.sub(_fence_gap, "".join(out)).strip()
    return prose if WORDLIKE.search(prose) else ""  # "." left of ".delegate(...)." is none


def _fence_gap(fence: re.Match[str]) -> str:
    """What stands for an emptied fence: a space where it sat between words on one line."""
    text = fence.group()
    return " " if text[:1] in " \t" and text[-1:] in " \t" else ""
