"""JSON blobs in a message's text: where one may begin and where it ends, the tool calls it
spells, a call's arguments as one JSON object text, and whether the text ends inside a call.

Shared by ``quirks`` (calls written in a finished message) and ``prose`` (the streaming filter).
A blob is read with ``json.JSONDecoder.raw_decode`` from the index where it may begin, never
with a greedy regex; where an unfinished one will end is found by counting brackets outside
strings, which also works on text still arriving piece by piece.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from mimikit.llm.literals import NotLoose, loose_value_at

NAME_KEYS = ("name", "tool_name", "tool", "function", "recipient_name")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
WRAPPER_KEYS = ("tool_calls", "tool_call", "tool_uses")
OPENAI_NAMESPACE = "functions."  # how OpenAI models name a tool in a call they write out

# Where a blob that may be a call begins: an object (or a list of them) opening on a quoted key
# and its colon; braces doubled by a template (``{{"name": ...}}``) too. Each pattern opens with
# a lookahead on its first character, so the engine skips to candidates at C speed; its
# quantifiers are possessive, so it never backtracks.
_OPEN = r"(?=[\[{])(?:\[\s*+)?\{\s*+(?:\{\s*+)?"
_STRING_BODY = r'(?:[^"\\]|\\.)*+'
CALL_START = re.compile(_OPEN + '"' + _STRING_BODY + r'"\s*+:')
# Text that may still grow into a ``CALL_START`` (it ends before the first key's colon).
CALL_START_PREFIX = re.compile(r"(?=[\[{])(?:\[\s*+)?(?:\{\s*+(?:\{\s*+)?"
                               '(?:"' + _STRING_BODY + r'(?:\\|"\s*+)?)?)?\Z')
# What begins a call written as text (``<tools>``: Qwen's template lists the tools in it, and
# Qwen2.5-Coder writes its calls there as elements, ``notation.element_at``).
MARKERS = ("<tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "<function=", "<tools>")
# Call markup left when what it held is taken out, or written with nothing in it.
ORPHANS = re.compile(r"</?tool_call>|<\|python_tag\|>|\[TOOL_CALLS\]|</function>|<\|eo[mt]_id\|>"
                     r"|</?tools>")
WORDLIKE = re.compile(r"\w")  # a character of a word, in any script
_MARKER = re.compile(r"<tool_call>|<\|python_tag\|>|\[TOOL_CALLS\]|<function=")
_CLOSERS = {"<tool_call>": "</tool_call>", "<function=": "</function>"}
_NAME_SO_FAR = re.compile(r"[\w.\-]*+(>)?")
_MISTRAL_HEAD = re.compile(r"\s*+[\w.\-]+(?:\[CALL_ID\][\w\-]*+)?\[ARGS\]")
_MISTRAL_HEAD_SO_FAR = re.compile(r"\s*+[\w.\-\[\]]*+\Z")
_BARE_CALL = re.compile(_OPEN + r'(?:"(?:name|tool_name|tool|function|'
                        r'recipient_name|tool_calls?|tool_uses)"\s*+:|"type"\s*+:\s*+"function")')
_SEPARATORS = re.compile(r"[\s,;]*+")
_SPACE = re.compile(r"\s*+")
FIRST_WINDOW_CHARS = 512  # grown eightfold while a value runs past it
# A strict read that fails this near the text's end may be a cut: looked at loosely only when
# its brackets close; a call with doubled braces is read loosely this far.
LOOSE_CHECK_CHARS = 4096
LOOSE_DOUBLED_CHARS = 65536
_CUT_TAIL_CHARS = 16  # an error this near a window's end may be its cut (``tru|e``, ``\u00|e9``)
_SPECIAL = re.compile(r'["\\{}\[\]]')
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Decoded:
    """One JSON value read from a text: ``text[start:end]`` (with its doubled braces)."""

    value: Any
    start: int
    end: int


class Brackets:
    """Follows JSON text, piece by piece, far enough to know where its outermost value closes."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False

    def feed(self, piece: str, pos: int = 0) -> int:
        """Reads ``piece`` from ``pos``; the index in it just past the close, or -1 while open."""
        if self.escaped and pos < len(piece):
            self.escaped, pos = False, pos + 1
        while (found := _SPECIAL.search(piece, pos)) is not None:
            char, pos = found.group(), found.end()
            if self.in_string:
                if char == "\\":
                    pos += 1
                    self.escaped = pos > len(piece)
                elif char == '"':
                    self.in_string = False
            elif char == '"':
                self.in_string = True
            elif char in "{[":
                self.depth += 1
            else:
                self.depth -= 1
                if self.depth <= 0:
                    return pos
        return -1


_NAMING = re.compile(_OPEN + r'"(?:name|tool_name|tool|function)"\s*+:\s*+"([\w.\-]{1,80})"')


def only_markup(text: str) -> bool:
    """Whether ``text`` is call markup and nothing a person could read (``<tools></tools>``,
    ``<tool_call></tool_call>``): an answer as empty as no text at all."""
    return bool(ORPHANS.search(text)) and not WORDLIKE.search(ORPHANS.sub("", text))


def names_a_tool(text: str, start: int, names: Collection[str]) -> bool:
    """Whether the blob at ``start`` begins by naming one of ``names`` (``{"name": "reply"``):
    a call, even when what follows cannot be read."""
    found = _NAMING.match(text, start)
    return found is not None and tool_name(found.group(1)) in names


def close_of(text: str, start: int) -> int:
    """The index just past the bracket closing the one at ``start``; -1 when it never closes."""
    return Brackets().feed(text, start)


def skip(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """The index after what ``pattern`` (one that may match nothing) matches at ``pos``."""
    found = pattern.match(text, pos)
    return found.end() if found is not None else pos


def decode_at(text: str, index: int) -> tuple[Decoded | None, int]:
    """The JSON value starting at ``index`` (a ``{`` or ``[``), read with doubled braces undone;
    JSON that is not strict (``{"name": "reply", "arguments": {text: 'hi'}}``) read loosely.

    Returns:
        The value (None when none could be read) and how many characters the attempt read:
        all the rest of the text when the value is unfinished at its end.
    """
    found, read = _strict_at(text, index)
    if found is not None or (index + read >= len(text) and (
            len(text) - index > LOOSE_CHECK_CHARS or close_of(text, index) < 0)):
        return found, read  # read, or unfinished (a strict error near the end may be a cut)
    loose, loose_read = _loose_at(text, index)
    return loose, read + loose_read


def _loose_at(text: str, index: int) -> tuple[Decoded | None, int]:
    """The loose value at ``index`` (``literals``), its doubled braces undone; and how many
    characters the attempt read."""
    if text.startswith("{", index) and text.startswith("{", skip(_SPACE, text, index + 1)):
        return _loose_undoubled(text, index)
    try:
        value, end = loose_value_at(text, index)
    except NotLoose as error:
        return None, error.at - index
    except RecursionError:
        return None, len(text) - index
    return Decoded(value, index, end), end - index


def _loose_undoubled(text: str, index: int) -> tuple[Decoded | None, int]:
    """``_loose_at`` with doubled braces, read in a single-braced copy of a window that grows
    only while the value runs past it."""
    size = FIRST_WINDOW_CHARS
    while True:
        window = text[index : index + size]
        single = window.replace("{{", "{").replace("}}", "}")
        try:
            value, end = loose_value_at(single, 0)
        except NotLoose as error:
            if error.at < len(single) or index + size >= len(text) or size >= LOOSE_DOUBLED_CHARS:
                return None, len(window)
            size *= 8
            continue
        except RecursionError:
            return None, len(window)
        return Decoded(value, index, index + _undoubled_end(text, index, end)), len(window)


def _strict_at(text: str, index: int) -> tuple[Decoded | None, int]:
    if text.startswith("{", index):
        inner = skip(_SPACE, text, index + 1)
        if text.startswith("{", inner):
            found, read = _windowed(text, inner, undouble=False)
            after = skip(_SPACE, text, found.end) if found is not None else -1
            if found is not None and text.startswith("}", after):
                return Decoded(found.value, index, after + 1), read
            return _windowed(text, index, undouble=True)
    return _windowed(text, index, undouble=False)


def _windowed(text: str, index: int, undouble: bool) -> tuple[Decoded | None, int]:
    """Reads a value from a window of the text that grows only while the value runs past it.

    The window keeps every failed read short: a decoding error counts the lines of the whole
    text it was given, which over a long text would make each failed attempt cost the text.
    """
    size = FIRST_WINDOW_CHARS
    while True:
        window = text[index : index + size]
        if undouble:  # {{"name": "reply", "arguments": {{"text": "hi"}}}}
            window = window.replace("{{", "{").replace("}}", "}")
        try:
            value, end = _DECODER.raw_decode(window)
        except json.JSONDecodeError as error:
            cut = error.pos >= len(window) - _CUT_TAIL_CHARS or error.msg.startswith("Unterminated")
            if not cut:
                return None, max(error.pos, 1)
            if index + size >= len(text):
                return None, len(text) - index  # unfinished: the text ends inside it
            size *= 8
            continue
        except RecursionError:  # nested past the interpreter's limit: no call, nor worth more
            return None, len(text) - index
        if undouble:
            end = _undoubled_end(text, index, end)
        return Decoded(value, index, index + end), end


def _undoubled_end(text: str, index: int, end: int) -> int:
    """The length in ``text`` from ``index`` of what is ``end`` characters once undoubled."""
    pos = index
    for _ in range(end):
        pos += 2 if text.startswith(("{{", "}}"), pos) else 1
    return pos - index


def blob_calls(value: Any) -> list[tuple[str, Any]] | None:
    """The (name, raw arguments) of the calls a JSON value spells, or None when it is not
    made of calls only: one call, a list of them, or a wrapper (``{"tool_calls": [...]}``)."""
    if isinstance(value, dict):
        for key in WRAPPER_KEYS:
            if key in value:
                wrapped = value[key]
                return _all_calls(wrapped if isinstance(wrapped, list) else [wrapped])
        return _all_calls([value])
    if isinstance(value, list):
        return _all_calls(value)
    return None


def _all_calls(items: list[Any]) -> list[tuple[str, Any]] | None:
    calls = [_call(item) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _call(item: Any) -> tuple[str, Any] | None:
    """One call object: its name under one of ``NAME_KEYS`` (or ``{"function": {"name",
    "arguments"}}``), its arguments under one of ``ARGUMENT_KEYS``, else its other keys."""
    if not isinstance(item, dict):
        return None
    for key in NAME_KEYS:
        named = item.get(key)
        if isinstance(named, dict) and isinstance(named.get("name"), str) and named["name"]:
            return tool_name(named["name"]), _explicit(named, item)
        if isinstance(named, str) and named.strip():
            return tool_name(named), _arguments(item, key)
    return None


def _explicit(function: dict[str, Any], item: dict[str, Any]) -> Any:
    """The arguments of ``{"id", "type": "function", "function": {"name", "arguments"}}``."""
    for holder in (function, item):
        for key in ARGUMENT_KEYS:
            if key in holder:
                return holder[key]
    return {}


def _arguments(item: dict[str, Any], name_key: str) -> Any:
    for key in ARGUMENT_KEYS:
        if key in item:
            return item[key]
    # {"name": "reply", "text": "hi"}: the other keys are the arguments.
    return {key: value for key, value in item.items()
            if key != name_key and not (key == "type" and value == "function")}


def arguments_text(raw: object) -> str:
    """The arguments of a call as one JSON object text.

    Args:
        raw: The arguments as sent: a JSON text, an object, a JSON string holding the JSON
            text (encoded twice), None or "".

    Returns:
        The JSON object text; anything that is not one (a list, a number, broken JSON) as text
        unchanged, so the registry can tell the model what is wrong.
    """
    if raw is None:
        return "{}"
    if not isinstance(raw, str):
        return _dumps(raw)
    if not raw.strip():
        return "{}"
    layer = raw
    for _ in range(3):  # a JSON object, or a string holding one (encoded twice or thrice)
        try:
            value = json.loads(layer)
        except (json.JSONDecodeError, RecursionError):
            return raw
        if isinstance(value, dict):
            return layer
        if not isinstance(value, str):
            return raw
        layer = value
    return raw


def _dumps(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):  # a circle, keys JSON cannot hold
        return repr(value)


def tool_name(raw: str) -> str:
    """A tool's name as written in a call, without spaces or OpenAI's ``functions.`` prefix."""
    name = raw.strip()
    return name[len(OPENAI_NAMESPACE):] if name.startswith(OPENAI_NAMESPACE) else name


def looks_truncated(text: str) -> bool:
    """True when ``text`` ends inside an unfinished call, so the call should be asked for again
    rather than its fragment shown: the last marker (``<tool_call>``, ``<|python_tag|>``,
    ``[TOOL_CALLS]``, ``<function=...>``) has no closing tag and nothing, or a JSON value still
    open, after it; or a bare call blob (``{"name": ...``) never closes."""
    if not isinstance(text, str):
        return False
    return _marker_open(text) or _bare_open(text)


def _marker_open(text: str) -> bool:
    last = None
    for last in _MARKER.finditer(text):  # noqa: B007 (the last one is wanted)
        pass
    if last is None:
        return False
    marker, body = last.group(), last.end()
    closer = _CLOSERS.get(marker)
    if closer is not None and text.find(closer, body) >= 0:
        return False
    if marker == "<function=":
        name = _NAME_SO_FAR.match(text, body)
        if name is None or name.group(1) is None:
            return name is None or name.end() == len(text)  # the name still arriving
        body = name.end()
    elif marker == "[TOOL_CALLS]":
        if _MISTRAL_HEAD_SO_FAR.match(text, body):
            return True
        body = skip(_MISTRAL_HEAD, text, body)
    return _values_open(text, body)


def _values_open(text: str, pos: int) -> bool:
    """True when nothing but spaces, or JSON values the last of which is still open, follow."""
    seen = False
    while True:
        pos = skip(_SEPARATORS, text, pos)
        if pos >= len(text):
            return not seen
        if text[pos] not in "{[":
            return False
        pos = close_of(text, pos)
        if pos < 0:
            return True
        seen = True


def _bare_open(text: str) -> bool:
    # A blob inside a closed tag is that tag's business (a missing brace there is repaired).
    pos = max(text.rfind(closer) for closer in _CLOSERS.values())
    pos = max(pos, 0)
    while (start := _BARE_CALL.search(text, pos)) is not None:
        pos = close_of(text, start.start())
        if pos < 0:
            return True
    return False
