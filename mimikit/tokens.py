"""Offline token estimate: the one measure every budget in Mimikit uses."""

from __future__ import annotations

import re

# CJK ideographs, kana, hangul and full-width forms, and digits: roughly one token per
# character in the tokenizers of current models (Qwen's and Llama 2's split numbers into
# digits: a history line's "[2026-11-26 21:20]" is 12 tokens of digits); everything else is
# roughly four characters a token.
_WIDE = re.compile(
    "[0-9\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimate how many tokens ``text`` costs, without a tokenizer or network.

    Args:
        text: Any text.

    Returns:
        CJK characters and digits count one token each; other characters one token per
        four (rounded up). The empty string costs 0.
    """
    if not text:
        return 0
    wide = len(_WIDE.findall(text))
    narrow = len(text) - wide
    return wide + -(-narrow // CHARS_PER_TOKEN)
