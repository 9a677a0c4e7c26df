"""What a small model copies from its prompt into a reply: the conversation's own lines
(``- [2026-11-25T03:21:15Z] user: ...``, ``[03:21] system: ...``), the chat
template's markup (``<tool_response>``, ``<|im_end|>``) and what the runtime told it during the
run (a correction, a tool's error: "Call 'reply' with your answer to the user.", "Field
required"). Taken out before a reply is shown: a line that begins with a bracketed time is such
a copy, and keeps its text only when it is the assistant's; a sentence or clause whose words
are, nearly all and in order, words of something the runtime told the model is one too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

_LINE = re.compile(r"^[ \t]*(?:[-*][ \t]*)?\[(?:\d{4}-\d\d-\d\d[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?\]"
                   r"[ \t]*(?:(\w+):[ \t]?)?|\d\d:\d\d\][ \t]*(user|assistant|system):[ \t]?)(.*)$",
                   re.MULTILINE)
# A tool's answer as the template shows it, up to its end or the end of the text.
_TOOL_RESPONSE = re.compile(r"<tool_response>.*?(?:</tool_response>|\Z)", re.DOTALL)
_TEMPLATE_TAGS = re.compile(r"</?tool_response>|<\|(?:im_start|im_end|endoftext|eot_id|"
                            r"start_header_id|end_header_id)\|>(?:assistant|user|system|tool)?")


# A sentence or clause, with the mark that ends it (a mark inside a word, "notes.txt", ends
# none: split there, "txt is not in the work directory" was taken out of a report as a copy,
# and "notes." left).
_PIECE = re.compile(r"(?:[^.!?;\n。！？；]|[.!?;](?=[^\s.!?;]))+[.!?;。！？；]*")
_WORD = re.compile(r"\w+")
TOLD_SHARE = 0.8  # of a piece's words found in order in what was told: a copy
TOLD_MIN_WORDS = 2


def without_echoes(text: str, told: Sequence[str] = ()) -> str:
    """``text`` without copied conversation lines, template markup and pieces of ``told``
    (what the runtime told the model in this run), blank runs closed."""
    text = _TEMPLATE_TAGS.sub("", _TOOL_RESPONSE.sub("", text))
    text = _LINE.sub(lambda line: line[3] if "assistant" in (line[1], line[2]) else "", text)
    if told:
        told_words = [_words(said) for said in told]
        text = _PIECE.sub(lambda piece: "" if _copied(piece.group(), told_words) else
                          piece.group(), text)
    return re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]{2,}", " ", text)).strip()


def _words(text: str) -> list[str]:
    return [word.casefold() for word in _WORD.findall(text)]


def _copied(piece: str, told_words: list[list[str]]) -> bool:
    words = _words(piece)
    if len(words) < TOLD_MIN_WORDS:
        return False
    for said in told_words:
        matcher = SequenceMatcher(None, words, said, autojunk=False)
        if sum(block.size for block in matcher.get_matching_blocks()) >= TOLD_SHARE * len(words):
            return True
    return False


def repeats(text: str, said: Sequence[str]) -> bool:
    """True when ``text`` says one of ``said`` again: nearly all the words of each, in order
    (a clarifying question that reuses some of a message's words does not)."""
    words = _words(text)
    return len(words) >= TOLD_MIN_WORDS and any(
        _copied(text, [_words(other)]) and _copied(other, [words]) for other in said)
