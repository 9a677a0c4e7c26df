"""Where an answer starts going round in a loop, so that it ends there and not at
``max_tokens``, minutes later on a local server.

Small models fall into two loops: one line again and again (a fence, a brace, a blank, a
sentence), and a block of lines again and again (a heading and a sentence; a whole call written
out, the same each time). A run of a short line is taken out whole; of the others, the first
copy is kept. Blank lines between the copies of a block do not count: models vary them.
Inside one text with no line break (a JSON string field, the reply of an answer held to a
schema) a loop is a phrase said again and again; the first copy is kept (``phrase_cut``).
"""

from __future__ import annotations

import re

REPEATED_LINES = 8  # of one line in a row
SHORT_LINE_CHARS = 40  # a run of a line no longer than this is taken out whole
REPEATED_BLOCKS = 3  # copies in a row of a block of 2 to BLOCK_LINES lines
BLOCK_LINES = 16
TAIL_CHARS = 8192  # the end of an answer read for a loop: two runs of the longest passage
_LINE = re.compile(r"[^\n]*\n")
REPEATED_PHRASES = 4  # copies in a row of a phrase of PHRASE_CHARS characters
PHRASE_CHARS = (12, 400)  # shorter ones, or with no letter or digit, are tables and rules
# Copies in a row of a longer passage, up to PASSAGE_CHARS: fewer fit in an answer (the 1.5B
# model's report of a failed command said one 595-character passage over and over until
# max_tokens, twice, for 396 s).
REPEATED_PASSAGES = 3
PASSAGE_CHARS = 1000


def loop_cut(tail: str) -> int | None:
    """Where to cut ``tail`` (the end of an answer, at a line break) that ends in a loop: before
    a run of one short line, after the first of a run of one long line or of repeated blocks;
    None when it ends in none."""
    lines = [(found.group()[:-1], found.start(), found.end()) for found in _LINE.finditer(tail)]
    cut = _line_run(lines)
    return cut if cut is not None else _block_run([line for line in lines if line[0].strip()])


def _line_run(lines: list[tuple[str, int, int]]) -> int | None:
    """Before a run of one short line; after the first of a run of one long line."""
    last = lines[-REPEATED_LINES:]
    if len(last) < REPEATED_LINES or len({text for text, _s, _e in last}) != 1:
        return None
    first = len(lines) - REPEATED_LINES
    while first > 0 and lines[first - 1][0] == last[0][0]:
        first -= 1
    return lines[first][1] if len(last[0][0]) <= SHORT_LINE_CHARS else lines[first][2]


def _block_run(filled: list[tuple[str, int, int]]) -> int | None:
    texts = [text.strip() for text, _s, _e in filled]
    for size in range(2, BLOCK_LINES + 1):
        span = size * REPEATED_BLOCKS
        if len(texts) < span:
            return None
        run = texts[-span:]
        if all(run[index] == run[index - size] for index in range(size, span)) and \
                len(set(run[:size])) > 1:
            return filled[len(filled) - span + size - 1][2]
    return None


def phrase_cut(text: str) -> int | None:
    """Where to cut ``text`` that ends in ``REPEATED_PHRASES`` or more copies of one phrase in
    a row (``REPEATED_PASSAGES`` of a longer one), at whatever point of the phrase it ends:
    after the first copy of the run; None when it ends in none."""
    shortest, longest = PHRASE_CHARS
    for size in range(shortest, min(PASSAGE_CHARS, len(text) // REPEATED_PASSAGES) + 1):
        copies = REPEATED_PHRASES if size <= longest else REPEATED_PASSAGES
        phrase = text[-size:]
        if size * copies <= len(text) and any(char.isalnum() for char in phrase) and \
                text.endswith(phrase * copies):
            start = len(text) - size * copies
            while start > 0 and text[start - 1] == text[start - 1 + size]:
                start -= 1  # back to where the run begins, wherever in the phrase that is
            word = next((at for at in range(start, start + size)
                         if at == 0 or text[at - 1].isspace()), start)
            return word + size  # a copy from a word's beginning
    return None
