"""Llama 3.1's other template: ``<function=reply>{"text": "hi"}</function>``."""

from __future__ import annotations

import re
from collections.abc import Collection

from mimikit.llm.formats.base import Span, decode, marker_opening, tagged_span, tool_name

OPENS = "<function="
_CALL = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|\Z)", re.DOTALL)


class FunctionTag:
    name = "function_tag"

    def find(self, text: str, names: Collection[str]) -> list[Span]:
        spans = []
        for found in _CALL.finditer(text):
            body = found[2].strip()
            value = decode(body) if body else {}
            calls = [(tool_name(found[1]), value)] if isinstance(value, dict) else None
            spans.append(tagged_span(found.start(), found.end(), calls, names, text))
        return spans

    def opening(self, text: str, names: Collection[str]) -> int | None:
        return marker_opening(text, OPENS)


FORMAT = FunctionTag()
