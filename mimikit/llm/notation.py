"""Calls written as a tool's name followed by its arguments, the way a prompt or a program
would show them rather than as JSON:

| written                                              | who writes it                          |
|------------------------------------------------------|----------------------------------------|
| ``delegate{prompt: "Read a.txt", title: "Read"}``    | Qwen2.5 1.5B copying a prompt example  |
| ``delegate {"prompt": "Read a.txt"}``                | small models, a name before the JSON   |
| ``delegate({"prompt": "Read a.txt"})``               | models writing JavaScript              |
| ``delegate(prompt="Read a.txt", title='Read')``      | Llama 3.x's code-style calls, Python   |

Inside, the object may be loose the way JavaScript and Python write them: keys without quotes,
strings in single quotes, a comma before the close, ``True``/``False``/``None``. Only the names
of the role's tools count, and only where the name stands as a word of its own.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from mimikit.llm.blobs import OPENAI_NAMESPACE

MAX_DEPTH = 64  # nesting past this is no call a model meant
_SPACE = re.compile(r"\s*+")
_WORD = re.compile(r"[A-Za-z_$][\w$]*+")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*+)(?:\.\d++)?(?:[eE][+-]?\d++)?")
_SINGLE_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*+)'", re.DOTALL)
_WORDS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_DECODER = json.JSONDecoder()


@functools.lru_cache(maxsize=64)
def named_start(names: frozenset[str], at_end: bool = False) -> re.Pattern[str]:
    """Where a call in this notation may begin: one of ``names`` as a word of its own (OpenAI's
    ``functions.`` before it allowed), then ``{`` or ``(``, spaces between them allowed; with
    ``at_end``, also a name that ends the text (a streamed text may go on with the bracket)."""
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    after = r"(?:(?=[{(])|\Z)" if at_end else r"(?=[{(])"
    return re.compile(rf"(?<![\w$.])(?:{re.escape(OPENAI_NAMESPACE)})?({alternatives or '(?!)'})"
                      r"([ \t]*+)" + after)


class NotLoose(ValueError):
    """Raised where the text stops being a value of the notation (``at``: the index)."""

    def __init__(self, at: int) -> None:
        super().__init__(f"not a value at {at}")
        self.at = at


def arguments_at(text: str, index: int) -> tuple[dict[str, Any], int]:
    """The arguments of a named call whose ``{`` or ``(`` is at ``index``, and where they end.

    Raises:
        NotLoose: where the text stops being such arguments (at its end while it is unfinished).
    """
    reader = _Reader(text)
    if text.startswith("(", index):
        pos = reader.space(index + 1)
        if text.startswith("{", pos):
            value, pos = reader.object(pos, 1)
            return value, reader.expect(reader.space(pos), ")")
        return reader.keywords(pos)
    return reader.object(index, 1)


class _Reader:
    """A recursive reader of JSON loosened the ways JavaScript and Python write literals."""

    def __init__(self, text: str) -> None:
        self.text = text

    def space(self, pos: int) -> int:
        found = _SPACE.match(self.text, pos)
        return found.end() if found is not None else pos

    def expect(self, pos: int, char: str) -> int:
        if not self.text.startswith(char, pos):
            raise NotLoose(pos)
        return pos + 1

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        pos = self.space(pos)
        head = self.text[pos : pos + 1]
        if head == "{":
            return self.object(pos, depth + 1)
        if head == "[":
            return self.array(pos, depth + 1)
        if head in ("'", '"'):
            return self.string(pos)
        number = _NUMBER.match(self.text, pos)
        if number is not None:
            return json.loads(number.group()), number.end()
        word = _WORD.match(self.text, pos)
        if word is not None and word.end() == len(self.text):
            raise NotLoose(word.end())  # a word still arriving
        if word is not None and word.group() in _WORDS:
            return _WORDS[word.group()], word.end()
        raise NotLoose(pos)

    def string(self, pos: int) -> tuple[str, int]:
        if self.text.startswith('"', pos):
            try:
                return _DECODER.raw_decode(self.text, pos)
            except json.JSONDecodeError as error:
                unfinished = error.msg.startswith("Unterminated")
                raise NotLoose(len(self.text) if unfinished else error.pos) from None
        found = _SINGLE_QUOTED.match(self.text, pos)
        if found is None:
            raise NotLoose(len(self.text))
        body = found.group(1).replace("\\'", "'").replace('"', '\\"')
        try:
            return json.loads(f'"{body}"'), found.end()
        except json.JSONDecodeError:
            return found.group(1), found.end()

    def key(self, pos: int) -> tuple[str, int]:
        if self.text.startswith(("'", '"'), pos):
            return self.string(pos)
        word = _WORD.match(self.text, pos)
        if word is None:
            raise NotLoose(pos)
        return word.group(), word.end()

    def object(self, pos: int, depth: int) -> tuple[dict[str, Any], int]:
        members = self._items(pos + 1, "}", ":", depth)
        return dict(members[0]), members[1]

    def keywords(self, pos: int) -> tuple[dict[str, Any], int]:
        members, end = self._items(pos, ")", "=", 1)
        return dict(members), end

    def _items(self, pos: int, close: str, colon: str,
               depth: int) -> tuple[list[tuple[str, Any]], int]:
        if depth > MAX_DEPTH:
            raise NotLoose(pos)
        members: list[tuple[str, Any]] = []
        while True:
            pos = self.space(pos)
            if self.text.startswith(close, pos):
                return members, pos + 1
            key, pos = self.key(pos)
            pos = self.expect(self.space(pos), colon)
            value, pos = self.value(pos, depth)
            members.append((key, value))
            pos = self.space(pos)
            if not self.text.startswith(",", pos):
                return members, self.expect(pos, close)
            pos += 1

    def array(self, pos: int, depth: int) -> tuple[list[Any], int]:
        if depth > MAX_DEPTH:
            raise NotLoose(pos)
        items: list[Any] = []
        pos += 1
        while True:
            pos = self.space(pos)
            if self.text.startswith("]", pos):
                return items, pos + 1
            item, pos = self.value(pos, depth)
            items.append(item)
            pos = self.space(pos)
            if not self.text.startswith(",", pos):
                return items, self.expect(pos, "]")
            pos += 1


@functools.lru_cache(maxsize=64)
def name_prefixes(names: frozenset[str]) -> frozenset[str]:
    """Every beginning of every name (``functions.`` before it too): a word ending a streamed
    text that is one of these may still become a call."""
    out: set[str] = set()
    for name in names:
        for written in (name, OPENAI_NAMESPACE + name):
            out.update(written[:size] for size in range(1, len(written) + 1))
    return frozenset(out)


def trailing_prefix(text: str, prefixes: frozenset[str]) -> int:
    """Where the word ending ``text`` starts when it is one of ``prefixes``; -1 otherwise."""
    longest = max(map(len, prefixes), default=0)
    start = len(text)
    while start > 0 and len(text) - start <= longest and \
            (text[start - 1].isalnum() or text[start - 1] in "_.$"):
        start -= 1
    word = text[start:]
    if not word or len(word) > longest:
        return -1
    return start if word in prefixes else -1
