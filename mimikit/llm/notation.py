"""Calls written as a tool's name followed by its arguments, the way a prompt or a program
would show them rather than as JSON:

| written                                              | who writes it                          |
|------------------------------------------------------|----------------------------------------|
| ``delegate{prompt: "Read a.txt", title: "Read"}``    | Qwen2.5 1.5B copying a prompt example  |
| ``delegate {"prompt": "Read a.txt"}``                | small models, a name before the JSON   |
| ``delegate({"prompt": "Read a.txt"})``               | models writing JavaScript              |
| ``delegate(prompt="Read a.txt", title='Read')``      | Llama 3.x's code-style calls, Python   |
| ``<delegate prompt="Read a.txt" title="Read"/>``,    | Qwen2.5-Coder 1.5B, its template's     |
| in ``<tools>…</tools>`` or not; ``<delegate>`` with  | ``<tools>`` list read as a way to call |
| ``<prompt>Read a.txt</prompt>`` or ``{…}`` inside    | (XML attributes or child elements)     |
| ``ask_user "What's up?"``, `` `reply`: "Hi!" ``: the | Qwen2.5-Coder 1.5B (a whole answer of  |
| whole answer a name and quoted strings               | a name and strings, a command line)    |

Inside, the object may be loose the way JavaScript and Python write them (``literals``). Only
the names of the role's tools count, and only where the name stands as a word of its own (or
right after ``<``, as an element).
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any

from mimikit.llm.blobs import OPENAI_NAMESPACE
from mimikit.llm.literals import POSITIONAL, NotLoose, Reader, loose_value_at

_ATTRIBUTE = re.compile(r"""\s*+([A-Za-z_][\w\-]*+)\s*+=\s*+(?:"([^"]*+)"|'([^']*+)')""")
_TAG_END = re.compile(r"\s*+(/?)>")
_CHILD = re.compile(r"\s*+<([A-Za-z_][\w\-]*+)>(.*?)</\1>", re.DOTALL)


@functools.lru_cache(maxsize=64)
def named_start(names: frozenset[str], at_end: bool = False) -> re.Pattern[str]:
    """Where a call in this notation may begin: one of ``names`` as a word of its own (OpenAI's
    ``functions.`` or a lone dot before it allowed, not ``obj.``), then ``{`` or ``(``, spaces
    between them allowed; with ``at_end``, also a name that ends the text (a streamed text may
    go on with the bracket)."""
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    after = r"(?:(?=[{(])|\Z)" if at_end else r"(?=[{(])"
    return re.compile(rf"(?<![\w$])(?<![\w$)\]]\.)(?:{re.escape(OPENAI_NAMESPACE)})?"
                      rf"({alternatives or '(?!)'})([ \t]*+)" + after)


def arguments_at(text: str, index: int) -> tuple[dict[str, Any], int]:
    """The arguments of a named call whose ``{`` or ``(`` is at ``index``, and where they end.

    Raises:
        NotLoose: where the text stops being such arguments (at its end while it is unfinished).
    """
    reader = Reader(text)
    if text.startswith("(", index):
        pos = reader.space(index + 1)
        if text.startswith("{", pos):
            value, pos = reader.object(pos, 1)
            return value, reader.expect(reader.space(pos), ")")
        return reader.keywords(pos)
    return reader.object(index, 1)


@functools.lru_cache(maxsize=64)
def element_start(names: frozenset[str], at_end: bool = False) -> re.Pattern[str]:
    """Where a call written as an element may begin: ``<`` and one of ``names``, then a space,
    ``/`` or ``>``; with ``at_end``, also the name ending the text."""
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    after = r"(?=[\s/>]|\Z)" if at_end else r"(?=[\s/>])"
    return re.compile(rf"<({alternatives or '(?!)'})" + after)


def element_at(text: str, start: re.Match[str]) -> tuple[dict[str, Any], int]:
    """The arguments of a call written as an element (``element_start`` matched ``start``):
    its attributes, and the object or the child elements inside it; and where it ends.

    Raises:
        NotLoose: where the text stops being such an element (its end while unfinished).
    """
    arguments: dict[str, Any] = {}
    pos = start.end()
    while (attribute := _ATTRIBUTE.match(text, pos)) is not None:
        raw = attribute[2] if attribute[2] is not None else attribute[3]
        arguments[attribute[1]] = _written_value(raw)
        pos = attribute.end()
    tag_end = _TAG_END.match(text, pos)
    if tag_end is None:
        raise NotLoose(pos if ">" in text[pos:] else len(text))
    if tag_end[1]:
        return arguments, tag_end.end()
    closing = f"</{start[1]}>"
    close = text.find(closing, tag_end.end())
    if close < 0:
        raise NotLoose(len(text))
    arguments.update(_element_body(text, tag_end.end(), close))
    return arguments, close + len(closing)


def _element_body(text: str, pos: int, close: int) -> dict[str, Any]:
    """What an element holds between its tags: nothing, an object, or child elements."""
    reader = Reader(text)
    pos = reader.space(pos)
    if text.startswith("{", pos):
        value, pos = reader.object(pos, 1)
        if reader.space(pos) != close:
            raise NotLoose(pos)
        return value
    children: dict[str, Any] = {}
    while (child := _CHILD.match(text, pos, close)) is not None:
        children[child[1]] = _written_value(child[2].strip())
        pos = child.end()
    if reader.space(pos) < close:
        raise NotLoose(pos)
    return children


def _written_value(raw: str) -> Any:
    """An attribute's or child's text as a value: an object or list when it reads as one
    (``condition='{"type": ...}'``), else the text, entities decoded."""
    text = html.unescape(raw)
    if text.startswith(("{", "[")):
        try:
            value, end = loose_value_at(text, 0)
        except NotLoose:
            return text
        if end == len(text.rstrip()):
            return value
    return text


COMMAND_LINE_MOST_CHARS = 2000  # of an answer read as a command line (names, quoted strings)
_QUOTED = re.compile(r""""([^"\n]*+)"|'([^'\n]*+)'|`([^`\n]*+)`""")
_QUOTED_ANY = r""""[^"\n]*+"|'[^'\n]*+'|`[^`\n]*+`"""
_IN_QUOTES = re.compile(r""""[^"\n]*+"|'[^'\n]*+'""")
_BETWEEN = r"[\s,:;.()\[\]]*+"


@functools.lru_cache(maxsize=64)
def _command_line(names: frozenset[str]) -> tuple[re.Pattern[str], re.Pattern[str],
                                                  re.Pattern[str]]:
    """A name then quoted strings; any mix of names and quoted strings; a name."""
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    name = rf"`?(?:{alternatives or '(?!)'})`?(?![\w-])"
    first = re.compile(rf"\s*+`?({alternatives or '(?!)'})`?(?![\w-])"
                       rf"((?:{_BETWEEN}(?:{_QUOTED_ANY}))*+){_BETWEEN}")
    mixed = re.compile(rf"(?:{_BETWEEN}(?:{_QUOTED_ANY}|{name}))*+{_BETWEEN}")
    return first, mixed, re.compile(rf"(?<![\w-]){name}")


def command_line(text: str, names: frozenset[str]) -> tuple[str | None, dict[str, str]] | None:
    """An answer that is nothing but tool names and quoted strings, written the way a command
    line is: the name and the strings (its arguments by place) when one name comes first
    (``ask_user "What's up?"``, `` `reply`: "Hello!" ``), the strings keyed by place (``*0``);
    None and no strings when it cannot be one call (`` `delegate` "ask_user", ask_user "Hi" ``);
    None for any other text."""
    if len(text) > COMMAND_LINE_MOST_CHARS:
        return None
    first, mixed, name = _command_line(names)
    found = first.fullmatch(text)
    if found is not None:
        strings = [next(part for part in quoted.groups() if part is not None)
                   for quoted in _QUOTED.finditer(found.group(2))]
        return found.group(1), {f"{POSITIONAL}{place}": value
                                for place, value in enumerate(strings)}
    if mixed.fullmatch(text) and name.search(_IN_QUOTES.sub(" ", text)):
        return None, {}
    return None


def may_be_command_line(text: str, names: frozenset[str]) -> bool:
    """Whether a streamed answer so far may still turn out a command line (``command_line``):
    it begins with a name, or the start of one, and holds only names and quoted strings, the
    last perhaps unfinished."""
    body = text.lstrip().removeprefix("`")
    if not text.strip() or len(text) > COMMAND_LINE_MOST_CHARS:
        return False
    if not body or body in name_prefixes(names):
        return True
    first, mixed, _name = _command_line(names)
    return any(first.match(text + closer) is not None and mixed.fullmatch(text + closer)
               is not None for closer in ("", '"', "'", "`"))


def mentioned(text: str, start: re.Match[str]) -> bool:
    """Whether a ``named_start`` match whose arguments cannot be read is a name in prose
    ("reply (soon)", "delegate {the rest}"): a space or a parenthesis before what follows,
    where a call written without them (``delegate{``) that cannot be read is a broken call."""
    return bool(start.group(2)) or text.startswith("(", start.end())


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
