"""Split Chinese and Latin text into search terms (jieba for Chinese, words for the rest)."""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

_CJK_RUN = "[\u4e00-\u9fff]+"
_TOKEN_RUNS = re.compile(f"{_CJK_RUN}|[a-z0-9_]+", re.IGNORECASE)
_CJK = re.compile(_CJK_RUN)

STOP_WORDS: frozenset[str] = frozenset(
    # English
    "a an and are as at be been but by can could did do does for from had has have he her his "
    "how i if in into is it its me my no not of on or our she so than that the their them then "
    "there these they this to too up us was we were what when where which who why will with "
    "would you your yes ok okay please just also about".split()
    # Chinese
    + "的 了 是 在 和 与 及 或 也 就 都 而 着 把 被 让 给 对 从 到 为 以 之 其 于 这 那 我 你 他 她 它 "
    "我们 你们 他们 这个 那个 这些 那些 一个 一下 一些 吗 呢 吧 啊 呀 哦 嗯 有 没有 不 没 很 还 又 "
    "要 会 能 可以 什么 怎么 如何 为什么 请 帮 帮我 一 个 上 下 中 里 得 地 过 等 看看 看下 现在 "
    "然后 因为 所以 但是 如果 已经 就是 还是 这样 那样 时候 怎样 一样 问题 东西".split()
)

_init_lock = threading.Lock()
_jieba: Any = None  # the module, imported and its dictionary loaded on first need (~60 MB)


def prepare_tokenizer() -> None:
    """Load jieba's dictionary now rather than at the first Chinese text; cheap when loaded."""
    _ensure_jieba()


def _ensure_jieba() -> Any:
    """jieba with its dictionary loaded, once per process, quietly (it logs at INFO by
    default). Processes that never see Chinese text never load it."""
    global _jieba
    if _jieba is not None:
        return _jieba
    with _init_lock:
        if _jieba is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _jieba = jieba
    return _jieba


def cut_chinese(run: str, hmm: bool = True) -> list[str]:
    """Split a run of Chinese characters into words with jieba.

    Args:
        run: Chinese text.
        hmm: Let jieba guess words missing from its dictionary (names, jargon). Search
            terms turn it off: twice as fast, and a word is cut the same way in every
            context, which is what matching a query against documents needs.
    """
    words: list[str] = _ensure_jieba().lcut(run, HMM=hmm)
    return words


def has_chinese(text: str) -> bool:
    """True when ``text`` has a Chinese character (which needs jieba to be cut)."""
    return _CJK.search(text) is not None


def is_stop_word(token: str) -> bool:
    """True for the small built-in list of Chinese and English stop words."""
    return token.lower() in STOP_WORDS


def tokenize(text: str) -> list[str]:
    """Turn ``text`` into search terms.

    Args:
        text: Chinese, Latin or mixed text.

    Returns:
        Lower-cased terms in text order: Chinese runs cut by jieba, Latin text split into
        words; punctuation, whitespace and stop words are dropped.
    """
    terms: list[str] = []
    for match in _TOKEN_RUNS.finditer(text):
        run = match.group(0)
        if _CJK.fullmatch(run):
            terms.extend(word for word in cut_chinese(run, hmm=False) if word not in STOP_WORDS)
        else:
            word = run.lower()
            if word not in STOP_WORDS:
                terms.append(word)
    return terms
