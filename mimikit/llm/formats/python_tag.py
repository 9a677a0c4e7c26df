"""Llama 3.x: ``<|python_tag|>{"name": "reply", "parameters": {...}}``, several calls split
by ``;``, up to ``<|eom_id|>`` or ``<|eot_id|>``."""

from __future__ import annotations

from mimikit.llm.formats.base import Call, calls_in, decode
from mimikit.llm.formats.marked import Marked


def _calls(body: str) -> list[Call] | None:
    found: list[Call] = []
    for part in body.split(";") if body.count("{") > 1 else [body]:
        calls = calls_in(decode(part))
        if calls is None:
            return calls_in(decode(body))
        found += calls
    return found or None


FORMAT = Marked("python_tag", "<|python_tag|>", ("<|eom_id|>", "<|eot_id|>"), _calls)
