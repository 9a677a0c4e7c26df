"""JSON loosened the ways JavaScript and Python write literals, as small models write a call's
arguments: keys without quotes, strings in single quotes, a comma before the close,
``True``/``False``/``None``; and Python's arguments (``text='hi', n=2``), those before the
keywords positional (``delegate("Read a.txt", timeout=60)``: keys ``*0``, ``*1``..., which the
registry gives the tool's fields in their order).

Read by recursive descent from an index, never by rewriting the text; a failure says where the
text stopped being such a value (at the text's end while it is unfinished).
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 24  # nesting past this is no call a model meant
POSITIONAL = "*"  # the key of a positional argument is this and its place: "*0", "*1"...
_KEYWORD = re.compile(r"([A-Za-z_$][\w$]*+)\s*+=(?!=)")
_SPACE = re.compile(r"\s*+")
_WORD = re.compile(r"[A-Za-z_$][\w$]*+")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*+)(?:\.\d++)?(?:[eE][+-]?\d++)?")
_SINGLE_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*+)'", re.DOTALL)
_WORDS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_DECODER = json.JSONDecoder()


class NotLoose(ValueError):
    """Raised where the text stops being a loose value (``at``: the index; the text's end while
    the value is unfinished)."""

    def __init__(self, at: int) -> None:
        super().__init__(f"not a value at {at}")
        self.at = at


class Reader:
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
        """Python's arguments up to ``)``: keyword arguments, and positional ones before them."""
        members: dict[str, Any] = {}
        while True:
            pos = self.space(pos)
            if self.text.startswith(")", pos):
                return members, pos + 1
            keyword = _KEYWORD.match(self.text, pos)
            if keyword is not None:
                members[keyword[1]], pos = self.value(keyword.end(), 1)
            elif any(key.startswith(POSITIONAL) for key in members) or not members:
                members[f"{POSITIONAL}{len(members)}"], pos = self.value(pos, 1)
            else:
                raise NotLoose(pos)  # a positional argument after a keyword one
            pos = self.space(pos)
            if not self.text.startswith(",", pos):
                return members, self.expect(pos, ")")
            pos += 1

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


def loose_value_at(text: str, index: int) -> tuple[Any, int]:
    """The loose JSON value at ``index`` and where it ends.

    Raises:
        NotLoose: where the text stops being such a value.
    """
    return Reader(text).value(index, 0)
