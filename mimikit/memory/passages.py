"""Cut markdown into search passages, and cut long text with a visible marker."""

from __future__ import annotations

import re

TRUNCATION_MARK = "……[truncated]"
PASSAGE_MAX_CHARS = 300

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_BLANK_LINES = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[。！？；!?;\n])|(?<=[.] )")


def truncate(text: str, max_chars: int) -> str:
    """``text`` itself if it fits in ``max_chars``, else its start plus the truncation mark.

    The result (mark included) is never longer than ``max_chars``.
    """
    if len(text) <= max_chars:
        return text
    keep = max(max_chars - len(TRUNCATION_MARK), 0)
    return text[:keep].rstrip() + TRUNCATION_MARK


def _is_heading(block: str) -> bool:
    return all(line.lstrip().startswith("#") for line in block.splitlines())


def _pack_sentences(block: str, max_chars: int) -> list[str]:
    """Split a long block at sentence ends into pieces of at most ``max_chars``."""
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(block):
        while len(sentence) > max_chars:  # one endless sentence: cut it hard
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence[:max_chars])
            sentence = sentence[max_chars:]
        if len(current) + len(sentence) > max_chars:
            pieces.append(current)
            current = ""
        current += sentence
    if current.strip():
        pieces.append(current)
    return [piece.strip() for piece in pieces if piece.strip()]


def split_passages(text: str, max_chars: int = PASSAGE_MAX_CHARS) -> list[str]:
    """Split markdown into passages: paragraphs, each heading kept with the paragraph under it.

    Paragraphs longer than ``max_chars`` are split at sentence ends, so that a search hit
    shows the passage that matched rather than the start of a long section; each piece
    but the last ends with the truncation mark.
    """
    passages: list[str] = []
    heading = ""
    for raw in _BLANK_LINES.split(_COMMENT.sub("", text)):
        block = raw.strip()
        if not block:
            continue
        if _is_heading(block):
            heading = f"{heading}\n{block}" if heading else block
            continue
        room = max(max_chars - len(heading) - 1 if heading else max_chars, max_chars // 2)
        if len(block) <= room:
            pieces = [block]
        else:
            pieces = _pack_sentences(block, room - len(TRUNCATION_MARK))
            # Every piece but the last continues in the file: say so, as a cut hit would.
            pieces = [piece + TRUNCATION_MARK for piece in pieces[:-1]] + pieces[-1:]
        if heading:
            pieces[0] = f"{heading}\n{pieces[0]}"
            heading = ""
        passages.extend(pieces)
    if heading:
        passages.append(heading)
    return passages
