"""Memory files (remember, dates), the token estimate and the tokenizer."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from mimikit.memory import estimate_tokens, file_date, remember, tokenize

NOW = datetime(2026, 1, 28, 9, 30, tzinfo=UTC)


def test_remember_writes_a_dated_recent_file_with_a_readable_slug(tmp_path):
    path = remember(tmp_path, "Deploy to Cloudflare Workers timed out!", now=NOW)
    assert path == tmp_path / "memory/2026-01-28-deploy-to-cloudflare-workers-timed-out.md"
    assert path.read_text(encoding="utf-8") == "Deploy to Cloudflare Workers timed out!\n"


def test_chinese_content_gives_a_valid_file_name(tmp_path):
    path = remember(tmp_path, "上次部署遇到了超时问题/原因未知", now=NOW)
    assert path.parent == tmp_path / "memory"
    assert path.name.startswith("2026-01-28-上次部署遇到了超时问题") and path.suffix == ".md"
    assert "/" not in path.name[:-3].replace("2026-01-28-", "") and path.is_file()


def test_remember_never_overwrites_an_existing_file(tmp_path):
    paths = [remember(tmp_path, f"deploy notes\n\nversion {i}", now=NOW) for i in range(3)]
    assert [p.name for p in paths] == [
        "2026-01-28-deploy-notes.md", "2026-01-28-deploy-notes-2.md", "2026-01-28-deploy-notes-3.md"]
    assert [p.read_text(encoding="utf-8").split()[-1] for p in paths] == ["0", "1", "2"]


def test_long_term_memory_is_appended_to_memory_md(tmp_path):
    remember(tmp_path, "用户偏好使用 pnpm 而非 npm。", long_term=True)
    path = remember(tmp_path, "The user prefers dark mode.", long_term=True)
    assert path == tmp_path / "memory.md"
    assert path.read_text(encoding="utf-8") == "用户偏好使用 pnpm 而非 npm。\n\nThe user prefers dark mode.\n\n"


def test_the_same_fact_kept_again_is_kept_once(tmp_path):
    """A turn tried again after a reply it copied keeps its fact again: one file, one entry."""
    first = remember(tmp_path, "The user uses vim.", now=NOW)
    assert remember(tmp_path, "The user uses vim.", now=NOW) == first
    other = remember(tmp_path, "The user uses vim!", now=NOW)  # the same name, not the text
    assert other != first and remember(tmp_path, "The user uses vim!", now=NOW) == other
    assert len(list((tmp_path / "memory").iterdir())) == 2
    for text in ("用户偏好使用 pnpm。", "The user prefers dark mode.", "The user prefers dark mode."):
        remember(tmp_path, text, long_term=True)
    remember(tmp_path, "dark mode.", long_term=True)  # the end of the last entry, not all of it
    assert (tmp_path / "memory.md").read_text(encoding="utf-8") == \
        "用户偏好使用 pnpm。\n\nThe user prefers dark mode.\n\ndark mode.\n\n"


def test_remember_rejects_empty_content(tmp_path):
    try:
        remember(tmp_path, "   ")
    except ValueError as error:
        assert "content" in str(error)
    else:
        raise AssertionError("empty content was accepted")


def test_file_date_comes_from_the_name_else_the_mtime(tmp_path):
    assert file_date(tmp_path / "2026-01-28-deploy.md") == datetime(2026, 1, 28, tzinfo=UTC)
    assert file_date(tmp_path / "2025-12.md") == datetime(2025, 12, 1, tzinfo=UTC)
    undated = tmp_path / "memory.md"
    undated.write_text("x", encoding="utf-8")
    os.utime(undated, (NOW.timestamp(), NOW.timestamp()))
    assert file_date(undated) == NOW


def test_token_estimate_counts_cjk_per_char_and_latin_per_four_chars():
    assert estimate_tokens("") == 0
    assert estimate_tokens("部署超时") == 4
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("部署 timeout") == 2 + 2  # " timeout" is 8 chars


def test_tokenize_splits_chinese_with_jieba_and_lowers_latin_words():
    assert tokenize("上次部署使用了 Cloudflare Workers，遇到了超时问题！") == [
        "上次", "部署", "使用", "cloudflare", "workers", "遇到", "超时"]
    assert tokenize("The deploy_v2 of API, and the rest.") == ["deploy_v2", "api", "rest"]
    assert tokenize("，。！  ...") == []
