"""Llama 3.x: ``<|python_tag|>{"name": "reply", "parameters": {...}}``, several calls split
by ``;``, up to ``<|eom_id|>`` or ``<|eot_id|>``."""

from __future__ import annotations

from mimikit.llm.formats.base import Call, calls_in, decode, decode_prefix
from mimikit.llm.formats.marked import Marked


def _calls(body: str) -> list[Call] | None:
    found: list[Call] = []
    for part in body.split(";") if body.count("{") > 1 else [body]:
        calls = calls_in(decode(part))
        if calls is None:
            return calls_in(decode(body))
        found += calls
    return found or None


def _end(text: str, body_at: int) -> int | None:
    """Where a body that was not closed ends: after its last JSON value of those split by
    ``;``."""
    end = None
    read = decode_prefix(text, body_at)
    while read is not None:
        end = read[1]
        rest = text[end:].lstrip()
        if not rest.startswith(";"):
            break
        read = decode_prefix(text, len(text) - len(rest) + 1)
    return end


FORMAT = Marked("python_tag", "<|python_tag|>", ("<|eom_id|>", "<|eot_id|>"), _calls, _end)
