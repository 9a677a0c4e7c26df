"""Search without BM25: substring matching, with ``rg`` choosing the files when installed."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from pathlib import Path

from mimikit.memory.files import file_period, in_span
from mimikit.memory.passages import split_passages
from mimikit.memory.tokenize import is_stop_word, tokenize

logger = logging.getLogger("mimikit.memory")

RG_TIMEOUT_SECONDS = 10
_RAW_TERMS = re.compile("[a-z0-9_]{2,}|[\u4e00-\u9fff]{2,}", re.IGNORECASE)


def substring_search(
    query: str, corpus: dict[str, tuple[str, tuple]], roots: list[Path], span: tuple, error: Exception
) -> list[tuple[float, str, str]]:
    """Search ``corpus`` by substring when BM25 failed with ``error`` (logged as a warning).

    Args:
        query: The search text.
        corpus: path -> (source, signature), as the index scans it.
        roots: Folders and files to hand to ``rg``, which picks the files when installed.
        span: (after, before), either None.
        error: Why BM25 failed.

    Returns:
        (score, source, passage) for passages containing a query word; the score is the
        number of distinct words found.
    """
    rg = shutil.which("rg")
    logger.warning(
        "memory search: BM25 failed (%s: %s); falling back to %s",
        type(error).__name__, error, "rg" if rg else "a plain substring scan",
    )
    terms = _fallback_terms(query)
    if not terms:
        return []
    found = _rg_files(rg, terms, roots, corpus) if rg else None
    paths = list(corpus) if found is None else found
    scored = []
    for path in paths:
        try:
            if not in_span(file_period(Path(path)), span):
                continue
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        for passage in split_passages(text):
            lowered = passage.lower()
            hits = sum(1 for term in terms if term in lowered)
            if hits:
                scored.append((float(hits), corpus[path][0], passage))
    return scored


def _fallback_terms(query: str) -> list[str]:
    """The query's words for a substring scan; the regex alone if the tokenizer is broken."""
    try:
        return list(dict.fromkeys(tokenize(query)))
    except Exception:  # the tokenizer may be what made BM25 fail; the regex has no deps
        words = (word.lower() for word in _RAW_TERMS.findall(query))
        return [word for word in dict.fromkeys(words) if not is_stop_word(word)]


def _rg_files(rg: str, terms: list[str], roots: list[Path], corpus: dict) -> list[str] | None:
    """The corpus files under ``roots`` that contain any term (case-insensitive), by ripgrep.

    None when ripgrep itself fails, so that the caller scans every file instead.
    """
    existing = [str(root) for root in roots if root.exists()]
    if not existing:
        return []
    args = [rg, "--files-with-matches", "--ignore-case", "--fixed-strings", "--glob", "*.md"]
    for term in terms:
        args += ["-e", term]
    try:
        done = subprocess.run(
            [*args, "--", *existing],
            capture_output=True, text=True, timeout=RG_TIMEOUT_SECONDS, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        logger.warning("memory search: rg failed (%s); scanning every file", error)
        return None
    if done.returncode not in (0, 1):  # 1 means "no match", 2 an error
        logger.warning("memory search: rg exited %s: %s", done.returncode, done.stderr.strip())
        return None
    return [line for line in done.stdout.splitlines() if line in corpus]
