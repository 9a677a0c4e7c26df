"""What a small model copies from its prompt into a reply: the conversation's own lines
(``- [2026-11-25T03:21:15Z] user: ...``, ``[2026-11-25 03:21] system: ...``) and the chat
template's markup (``<tool_response>``, ``<|im_end|>``). Taken out before a reply is shown: a
line that begins with a bracketed time is such a copy, and keeps its text only when it is the
assistant's."""

from __future__ import annotations

import re

_LINE = re.compile(r"^[ \t]*(?:[-*][ \t]*)?\[\d{4}-\d\d-\d\d[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?\]"
                   r"[ \t]*(?:(\w+):[ \t]?)?(.*)$", re.MULTILINE)
# A tool's answer as the template shows it, up to its end or the end of the text.
_TOOL_RESPONSE = re.compile(r"<tool_response>.*?(?:</tool_response>|\Z)", re.DOTALL)
_TEMPLATE_TAGS = re.compile(r"</?tool_response>|<\|(?:im_start|im_end|endoftext|eot_id|"
                            r"start_header_id|end_header_id)\|>(?:assistant|user|system|tool)?")


def without_echoes(text: str) -> str:
    """``text`` without copied conversation lines and template markup, blank runs closed."""
    text = _TEMPLATE_TAGS.sub("", _TOOL_RESPONSE.sub("", text))
    text = _LINE.sub(lambda line: line[2] if line[1] == "assistant" else "", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
