"""Hermes and Qwen: ``<tool_call>{"name": "reply", "arguments": {...}}</tool_call>``."""

from mimikit.llm.formats.marked import Marked

FORMAT = Marked("hermes", "<tool_call>", ("</tool_call>",))
