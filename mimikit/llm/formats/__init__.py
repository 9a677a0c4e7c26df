"""The ways a model writes a tool call into its text, for servers that neither return calls
nor hold an answer to a schema: one module per format behind one interface (``base``), and
one table. A new format is one module and one line here.

The stream shown to a person and the answer read at the end both go through this table
(``llm.reading``), so they cannot disagree.
"""

from __future__ import annotations

from mimikit.llm.formats import (
    elements,
    function_tag,
    hermes,
    json_calls,
    mistral,
    python_tag,
)
from mimikit.llm.formats.base import CallFormat

FORMATS: tuple[CallFormat, ...] = (
    hermes.FORMAT,        # <tool_call>{...}</tool_call>       Hermes, Qwen
    python_tag.FORMAT,    # <|python_tag|>{...}                 Llama 3.x
    mistral.FORMAT,       # [TOOL_CALLS][{...}]                 Mistral
    function_tag.FORMAT,  # <function=name>{...}</function>     Llama 3.1 (other template)
    elements.FORMAT,      # <tools><name attr="..."/></tools>   small models copying a tool list
    json_calls.FORMAT,    # {"name": ..., "arguments": ...}     bare or fenced JSON, any model
)

__all__ = ["FORMATS", "CallFormat"]
