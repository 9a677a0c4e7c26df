"""MemoryIndex: BM25 over memory files and docs, time filters, incremental updates, fallback."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mimikit.memory import MemoryIndex
from mimikit.memory.passages import TRUNCATION_MARK


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_index(tmp_path: Path, files: dict[str, str]) -> MemoryIndex:
    state, work = tmp_path / "state", tmp_path / "work"
    for name, text in files.items():
        root = work if name.startswith("docs/") else state
        write(root / name, text)
    return MemoryIndex(state, work)


@pytest.fixture(autouse=True)
def bm25_is_used(request, caplog):
    """Every test but the fallback one must be answered by BM25, never by the fallback."""
    caplog.set_level(logging.WARNING, logger="mimikit.memory")
    yield
    if "falls_back" not in request.node.name:
        assert "falling back" not in caplog.text


CORPUS = {
    "memory/2026-01-28-deploy.md": "上次部署使用了 Cloudflare Workers，遇到了超时问题，最后改成分批发布。",
    "memory/2026-01-20-lunch.md": "Lunch with Alice at the noodle place on Fifth Avenue was great.",
    "memory/2026-01-21-park.md": "周末去公园散步，天气很好，拍了很多照片。",
    "memory/2026-01-22-books.md": "I finished reading a novel about sailing across the Pacific.",
}


def test_chinese_query_ranks_chinese_deploy_file_before_english_lunch_file(tmp_path):
    hits = make_index(tmp_path, CORPUS).search("部署 超时")
    assert hits[0].source == "memory/2026-01-28-deploy.md"
    assert "超时" in hits[0].content
    assert "memory/2026-01-20-lunch.md" not in [hit.source for hit in hits]


def test_english_query_finds_english_text(tmp_path):
    hits = make_index(tmp_path, CORPUS).search("Where did we have noodles for lunch?")
    assert [hit.source for hit in hits] == ["memory/2026-01-20-lunch.md"]


def test_mixed_query_ranks_files_matching_both_languages_first(tmp_path):
    index = make_index(tmp_path, {
        "memory/2026-01-01-chinese-only.md": "部署的时候又超时了，需要再看一下日志。",
        "memory/2026-01-02-english-only.md": "Cloudflare pricing changed for Workers this year.",
        "memory/2026-01-03-both.md": "Cloudflare 部署超时，重试后成功。",
    })
    hits = index.search("cloudflare 超时")
    assert hits[0].source == "memory/2026-01-03-both.md"
    assert {hit.source for hit in hits[1:]} == {
        "memory/2026-01-01-chinese-only.md", "memory/2026-01-02-english-only.md"}
    assert hits[0].score > max(hit.score for hit in hits[1:])


def test_time_filters_exclude_files_outside_the_range(tmp_path):
    index = make_index(tmp_path, {
        "memory/2026-01-10-deploy.md": "deploy failed with a timeout",
        "memory/2026-03-10-deploy.md": "deploy succeeded after the timeout fix",
        "memory/summary/2026-02.md": "February: several deploy incidents",
    })
    feb = datetime(2026, 2, 15, tzinfo=UTC)
    assert {h.source for h in index.search("deploy", after=feb)} == {
        "memory/2026-03-10-deploy.md", "memory/summary/2026-02.md"}
    assert {h.source for h in index.search("deploy", before=feb)} == {
        "memory/2026-01-10-deploy.md", "memory/summary/2026-02.md"}
    window = index.search("deploy", after=datetime(2026, 3, 1), before=datetime(2026, 3, 31))
    assert [h.source for h in window] == ["memory/2026-03-10-deploy.md"]


def test_missing_memory_folders_give_no_hits_rather_than_errors(tmp_path):
    assert MemoryIndex(tmp_path / "nowhere", tmp_path / "nowork").search("deploy") == []


def test_query_matching_nothing_returns_empty_list(tmp_path):
    index = make_index(tmp_path, CORPUS)
    assert index.search("kubernetes helm chart") == []
    assert index.search("的 了 the and") == []  # stop words only


def test_two_document_corpus_scores_real_matches_above_zero(tmp_path):
    # Okapi's idf is log(1.5/1.5) = 0 for a term in 1 of 2 documents, negative for 2 of 2.
    index = make_index(tmp_path, {
        "memory/2026-01-01-a.md": "redis restart lost the queue",
        "memory/2026-01-02-b.md": "redis upgrade went fine",
    })
    one = index.search("queue")
    assert [h.source for h in one] == ["memory/2026-01-01-a.md"]
    assert one[0].score > 0
    both = index.search("redis")
    assert len(both) == 2 and all(h.score > 0 for h in both)


def test_added_file_is_found_by_next_query_without_full_rebuild(tmp_path):
    index = make_index(tmp_path, CORPUS)
    assert index.search("kubernetes") == []
    assert (index.rebuild_count, index.update_count) == (1, 0)
    write(tmp_path / "state/memory/2026-01-29-k8s.md", "We moved the staging cluster to Kubernetes.")
    hits = index.search("kubernetes")
    assert [h.source for h in hits] == ["memory/2026-01-29-k8s.md"]
    assert (index.rebuild_count, index.update_count) == (1, 1)


def test_changed_and_removed_files_are_updated_incrementally(tmp_path):
    index = make_index(tmp_path, CORPUS)
    index.search("lunch")
    write(tmp_path / "state/memory/2026-01-20-lunch.md", "Dinner with Bob, sushi downtown, much longer text.")
    (tmp_path / "state/memory/2026-01-22-books.md").unlink()
    assert index.search("lunch") == []
    assert [h.source for h in index.search("sushi")] == ["memory/2026-01-20-lunch.md"]
    assert index.search("novel sailing") == []
    assert (index.rebuild_count, index.update_count) == (1, 2)


def test_unchanged_files_are_not_reread_between_queries(tmp_path):
    index = make_index(tmp_path, CORPUS)
    for query in ("部署", "lunch", "公园", "novel"):
        assert index.search(query)
    assert (index.rebuild_count, index.update_count) == (1, 0)


def test_sources_cover_long_term_memory_summaries_and_docs(tmp_path):
    index = make_index(tmp_path, {
        "memory.md": "用户偏好使用 pnpm 而非 npm。\n\nThe user prefers dark mode.\n",
        "memory/summary/2026-01-05.md": "Discussed pnpm workspaces and lockfiles.",
        "docs/guide/dev-conventions.md": "# Conventions\n\nUse pnpm for every package; commits follow conventional commits.",
    })
    hits = index.search("pnpm")
    assert {h.source for h in hits} == {
        "memory.md", "memory/summary/2026-01-05.md", "docs/guide/dev-conventions.md"}
    long_term = next(h for h in hits if h.source == "memory.md")
    assert long_term.content == "用户偏好使用 pnpm 而非 npm。"  # the matching paragraph only


def test_hit_content_is_the_matching_passage_cut_to_300_chars(tmp_path):
    filler = "\n\n".join(f"Paragraph {i} talks about gardening and tomatoes." for i in range(30))
    long_para = "The database migration " + "kept running for hours without progress " * 20
    index = make_index(tmp_path, {"memory/2026-01-01-notes.md": f"{filler}\n\n{long_para}\n\nEnd."})
    hits = index.search("database migration")
    assert hits and all(len(h.content) <= 300 for h in hits)
    assert hits[0].content.startswith("The database migration")
    oneline = make_index(tmp_path / "x", {"memory/2026-01-01-a.md": "migration " * 100})
    contents = [hit.content for hit in oneline.search("migration")]
    assert len(contents) == 4 and all(len(content) <= 300 for content in contents)
    assert sum(content.endswith(TRUNCATION_MARK) for content in contents) == 3


def test_limit_caps_the_number_of_hits_best_first(tmp_path):
    files = {f"memory/2026-01-{d:02d}-x.md": "deploy " * d + "filler words here" for d in range(1, 10)}
    hits = make_index(tmp_path, files).search("deploy", limit=3)
    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


class BrokenBM25Index(MemoryIndex):
    """An index whose BM25 step fails, as it would on a corrupt model."""

    def _bm25_scores(self, terms, span, limit):
        raise RuntimeError("corrupt model")


def test_search_falls_back_to_substring_scan_and_warns_when_bm25_fails(tmp_path, caplog):
    state, work = tmp_path / "state", tmp_path / "work"
    for name, text in CORPUS.items():
        write(state / name, text)
    index = BrokenBM25Index(state, work)
    with caplog.at_level(logging.WARNING, logger="mimikit.memory"):
        hits = index.search("超时 cloudflare")
    assert [h.source for h in hits] == ["memory/2026-01-28-deploy.md"]
    assert hits[0].score > 0
    assert "falling back" in caplog.text and "corrupt model" in caplog.text
    assert index.search("nothing-like-this") == []
    assert index.search("的 the and") == []  # stop words never match, even in the fallback


def test_concurrent_queries_and_writes_do_not_corrupt_the_index(tmp_path):
    index = make_index(tmp_path, CORPUS)
    errors: list[BaseException] = []

    def writer() -> None:
        for i in range(30):
            write(tmp_path / f"state/memory/2026-02-01-t{i}.md", f"topic{i} deploy notes")

    def reader() -> None:
        try:
            for _ in range(30):
                index.search("deploy 部署")
        except BaseException as error:  # collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [h.source for h in index.search("topic29")] == ["memory/2026-02-01-t29.md"]
    assert index.rebuild_count == 1
