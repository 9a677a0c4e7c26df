"""Calls written as elements named after a tool, as small models copy the ``<tools>`` list of
their prompt: ``<delegate prompt="..."/>``, ``<reply>{"text": "hi"}</reply>``,
``<reply><text>hi</text></reply>``; the ``<tools>`` wrapper around them is markup."""

from __future__ import annotations

import html
import re
from collections.abc import Collection
from functools import cache
from typing import Any

from mimikit.llm.formats.base import OPENINGS_TRIED, Span, decode

_ATTRIBUTE = re.compile(r"""([\w-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_CHILD = re.compile(r"<([\w-]+)>(.*?)</\1\s*>", re.DOTALL)
WRAPPER = "tools"
BODY_CHARS = 20_000  # the longest element body looked for


@cache
def _patterns(names: frozenset[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Where an element may begin, and the element (matched at such a place)."""
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    begins = re.compile(rf"</?(?:{WRAPPER}|{alternatives})\b")
    element = re.compile(rf"</?{WRAPPER}\s*>|<({alternatives})((?:\s+[\w-]+\s*=\s*(?:\"[^\"]*\""
                         rf"|'[^']*'))*)\s*(?:/>|>(.{{0,{BODY_CHARS}}}?)</\1\s*>)", re.DOTALL)
    return begins, element


class Elements:
    name = "elements"

    def find(self, text: str, names: Collection[str]) -> list[Span]:
        if "<" not in text or not names:
            return []
        spans: list[Span] = []
        begins, element = _patterns(frozenset(names))
        pos, tries = 0, OPENINGS_TRIED
        while tries and (begun := begins.search(text, pos)) is not None:
            tries -= 1
            found = element.match(text, begun.start())
            pos = found.end() if found else begun.end()
            if found is None:
                continue
            if found[1] is None:  # the wrapper: markup, no call
                spans.append(Span(found.start(), found.end()))
                continue
            arguments = _arguments(found[2] or "", found[3])
            if arguments is not None:
                spans.append(Span(found.start(), found.end(), calls=[(found[1], arguments)]))
        return spans


def _arguments(attributes: str, body: str | None) -> dict[str, Any] | None:
    """The arguments of an element: its attributes, or the JSON object or the child elements
    it holds; None when it holds words only (not a call)."""
    arguments: dict[str, Any] = {}
    for name, double, single in _ATTRIBUTE.findall(attributes):
        value = html.unescape(double or single)
        decoded = decode(value) if value.lstrip()[:1] in "{[" else None
        arguments[name] = decoded if decoded is not None else value
    inner = (body or "").strip()
    if not inner:
        return arguments
    held = decode(inner) if inner.startswith("{") else None
    if isinstance(held, dict):
        return {**arguments, **held}
    children = {name: html.unescape(text.strip()) for name, text in _CHILD.findall(inner)}
    return {**arguments, **children} if children else None


FORMAT = Elements()
