"""MemoryIndex: BM25 over memory files and docs, time filters, incremental updates, fallback."""

from __future__ import annotations

import json
import logging
import math
import multiprocessing
import os
import random
import shutil
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi

from mimikit.config import Settings
from mimikit.memory import MemoryIndex, tokenize
from mimikit.memory.cache import CACHE_FILE
from mimikit.memory.passages import PASSAGE_MAX_CHARS, TRUNCATION_MARK, split_passages, truncate
from mimikit.memory.service import MAX_INDEXES_PER_PROCESS, index_for, warm

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


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


# --- the scorer ranks as rank_bm25 does ---------------------------------------------------


class LuceneIdfOkapi(BM25Okapi):
    """rank_bm25's Okapi model with the idf the index documents: log(1 + (N - n + .5) / (n + .5))."""

    def _calc_idf(self, nd):
        self.idf = {term: math.log(1 + (self.corpus_size - n + 0.5) / (n + 0.5)) for term, n in nd.items()}


ZH_WORDS = "部署 超时 队列 缓存 数据库 迁移 备份 告警 监控 配置 午饭 会议 天气 项目 发布 回滚".split()
EN_WORDS = "deploy timeout redis queue worker cache backup alert config lunch meeting release".split()


def random_note(rng: random.Random) -> str:
    """Mixed Chinese and English paragraphs from a small vocabulary, so terms repeat a lot."""
    paragraphs = []
    for _ in range(rng.randint(1, 4)):
        words = rng.choices(ZH_WORDS, k=rng.randint(0, 12)) + rng.choices(EN_WORDS, k=rng.randint(0, 12))
        rng.shuffle(words)
        paragraphs.append(" ".join(words) or "。")  # some passages hold no term at all
    return "\n\n".join(paragraphs)


def reference_ranking(root: Path, query: str) -> list[tuple[str, str, float]]:
    """Every passage with a score > 0 by rank_bm25 over the files now under ``root/state``."""
    passages = []
    for path in sorted((root / "state").rglob("*.md")):
        source = path.relative_to(root / "state").as_posix()
        passages += [(source, p) for p in split_passages(path.read_text(encoding="utf-8"))]
    model = LuceneIdfOkapi([tokenize(p.removesuffix(TRUNCATION_MARK)) for _, p in passages])
    scores = model.get_scores(list(dict.fromkeys(tokenize(query))))
    ranked = [(source, truncate(p, PASSAGE_MAX_CHARS), float(score))
              for (source, p), score in zip(passages, scores, strict=True) if score > 0]
    return sorted(ranked, key=lambda hit: (-hit[2], hit[0], hit[1]))


def index_ranking(index: MemoryIndex, query: str) -> list[tuple[str, str, float]]:
    hits = index.search(query, limit=100_000)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    return sorted(((h.source, h.content, h.score) for h in hits), key=lambda hit: (-hit[2], hit[0], hit[1]))


def assert_same_ranking(index: MemoryIndex, root: Path, queries: list[str]) -> None:
    for query in queries:
        expected = reference_ranking(root, query)
        ranked = index_ranking(index, query)
        assert [(s, c) for s, c, _ in ranked] == [(s, c) for s, c, _ in expected], query
        assert [score for *_, score in ranked] == pytest.approx([score for *_, score in expected], rel=1e-12)
        top = index.search(query)
        assert [h.score for h in top] == pytest.approx([score for *_, score in expected[:5]], rel=1e-12)


QUERIES = ["部署 超时", "redis queue", "回滚 release 告警", "lunch", "监控", "deploy 部署 cache 缓存 alert 会议"]


def test_ranking_equals_rank_bm25_okapi_on_the_same_passages_after_incremental_changes(tmp_path):
    rng = random.Random(3)
    files = {f"memory/2026-01-{1 + i % 28:02d}-note-{i}.md": random_note(rng) for i in range(60)}
    files["memory.md"] = random_note(rng)
    index = make_index(tmp_path, files)
    assert_same_ranking(index, tmp_path, QUERIES)
    state = tmp_path / "state"
    for i in range(60, 75):
        write(state / f"memory/2026-02-01-added-{i}.md", random_note(rng))
    for i in range(0, 20, 2):
        write(state / f"memory/2026-01-{1 + i % 28:02d}-note-{i}.md", random_note(rng))
    for i in range(1, 20, 4):
        (state / f"memory/2026-01-{1 + i % 28:02d}-note-{i}.md").unlink()
    with (state / "memory.md").open("a", encoding="utf-8") as handle:
        handle.write("\n\nredis 部署 redis 部署 告警\n")
    assert_same_ranking(index, tmp_path, QUERIES)
    assert index.rebuild_count == 1


# --- changes are seen by the next search ------------------------------------------------------


class UnwatchedIndex(MemoryIndex):
    """An index without change notifications, as on a system without inotify."""

    def _open_watcher(self):
        self._watcher = None


@pytest.mark.parametrize("index_class", [MemoryIndex, UnwatchedIndex])
def test_add_change_and_delete_are_each_visible_to_the_next_search(tmp_path, index_class):
    state = tmp_path / "state"
    write(state / "memory/2026-01-01-base.md", "baseline note about gardening")
    index = index_class(state, tmp_path / "work")
    assert index.search("kubernetes") == []
    note = write(state / "memory/2026-01-02-k8s.md", "The staging cluster runs kubernetes now.")
    assert [h.source for h in index.search("kubernetes")] == ["memory/2026-01-02-k8s.md"]
    write(note, "The staging cluster moved to nomad.")
    assert index.search("kubernetes") == []
    assert [h.source for h in index.search("nomad")] == ["memory/2026-01-02-k8s.md"]
    note.unlink()
    assert index.search("nomad") == []
    assert (index.rebuild_count, index.update_count) == (1, 3)


@linux_only
def test_rewrite_keeping_size_and_mtime_is_still_seen(tmp_path):
    # A (mtime, size) comparison cannot see this change; the kernel's events do.
    state = tmp_path / "state"
    note = write(state / "memory/2026-01-01-a.md", "alpha bravo")
    index = MemoryIndex(state, tmp_path / "work")
    assert [h.source for h in index.search("alpha")] == ["memory/2026-01-01-a.md"]
    stat = note.stat()
    write(note, "delta bravo")
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert note.stat().st_size == stat.st_size and note.stat().st_mtime_ns == stat.st_mtime_ns
    assert index.search("alpha") == []
    assert [h.source for h in index.search("delta")] == ["memory/2026-01-01-a.md"]


def test_folders_created_after_the_first_search_are_searched(tmp_path):
    state, work = tmp_path / "state", tmp_path / "work"
    index = MemoryIndex(state, work)
    assert index.search("pnpm") == []  # neither the state dir nor the docs exist yet
    write(state / "memory/2026-01-01-a.md", "pnpm in the recent notes")
    write(state / "memory/summary/2026-01.md", "pnpm in the monthly summary")
    write(work / "docs/guide/deep/setup.md", "pnpm in a nested doc")
    assert {h.source for h in index.search("pnpm")} == {
        "memory/2026-01-01-a.md", "memory/summary/2026-01.md", "docs/guide/deep/setup.md"}
    write(work / "docs/guide/deeper/more.md", "pnpm in a folder made after the last search")
    assert "docs/guide/deeper/more.md" in {h.source for h in index.search("pnpm")}
    shutil.rmtree(state / "memory")
    assert {h.source for h in index.search("pnpm")} == {
        "docs/guide/deep/setup.md", "docs/guide/deeper/more.md"}
    write(state / "memory/2026-02-01-b.md", "pnpm again")
    assert "memory/2026-02-01-b.md" in {h.source for h in index.search("pnpm")}
    assert index.rebuild_count == 1


def test_a_renamed_memory_folder_is_followed_by_name_not_by_inode(tmp_path):
    state = tmp_path / "state"
    write(state / "memory/2026-01-01-a.md", "zebra crossing")
    index = MemoryIndex(state, tmp_path / "work")
    assert index.search("zebra")
    (state / "memory").rename(state / "old-memory")
    assert index.search("zebra") == []
    write(state / "old-memory/2026-01-02-b.md", "zebra in the moved folder")
    assert index.search("zebra") == []
    write(state / "memory/2026-01-03-c.md", "zebra back home")
    assert [h.source for h in index.search("zebra")] == ["memory/2026-01-03-c.md"]


def _search_in_child(index: MemoryIndex, state: Path, results) -> None:
    write(state / "memory/2026-03-01-child.md", "written by the child: okapi")
    results.put([h.source for h in index.search("okapi")])


@linux_only
def test_a_forked_process_neither_misses_changes_nor_takes_them_from_its_parent(tmp_path):
    state = tmp_path / "state"
    write(state / "memory/2026-01-01-a.md", "okapi in the parent")
    index = MemoryIndex(state, tmp_path / "work")
    assert len(index.search("okapi")) == 1
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=_search_in_child, args=(index, state, results))
    child.start()
    child_sources = results.get(timeout=60)
    child.join(timeout=60)
    assert sorted(child_sources) == ["memory/2026-01-01-a.md", "memory/2026-03-01-child.md"]
    assert len(index.search("okapi")) == 2  # the parent still got the event for the child's file
    assert (index.rebuild_count, index.update_count) == (1, 1)


# --- time filters ---------------------------------------------------------------------------


def test_time_filters_use_day_and_month_bounds_and_follow_mtime_changes(tmp_path):
    index = make_index(tmp_path, {
        "memory/2026-02-14-day.md": "deploy on valentine's day",
        "memory/summary/2026-02.md": "deploy in february",
        "memory.md": "deploy notes kept long term",
    })
    long_term = tmp_path / "state/memory.md"
    jan = datetime(2026, 1, 10, tzinfo=UTC).timestamp()
    os.utime(long_term, (jan, jan))
    sources = lambda **span: {h.source for h in index.search("deploy", **span)}  # noqa: E731
    # The day file ends at midnight; the February summary runs to March 1st.
    assert sources(after=datetime(2026, 2, 15, tzinfo=UTC)) == {"memory/summary/2026-02.md"}
    assert sources(after=datetime(2026, 2, 14, 23, 59, tzinfo=UTC)) == {
        "memory/2026-02-14-day.md", "memory/summary/2026-02.md"}
    assert sources(before=datetime(2026, 2, 1, tzinfo=UTC)) == {"memory/summary/2026-02.md", "memory.md"}
    assert sources(before=datetime(2026, 1, 31, tzinfo=UTC)) == {"memory.md"}
    march = datetime(2026, 3, 5, tzinfo=UTC).timestamp()
    os.utime(long_term, (march, march))  # memory.md is dated by its mtime
    assert sources(before=datetime(2026, 1, 31, tzinfo=UTC)) == set()
    assert sources(after=datetime(2026, 3, 1, tzinfo=UTC)) == {"memory.md"}


# --- warm start and the term cache ------------------------------------------------------------


def test_warm_builds_the_process_index_once_and_then_only_takes_in_changes(tmp_path):
    settings = Settings(state_dir=tmp_path / "state", work_dir=tmp_path / "work")
    write(tmp_path / "state/memory/2026-01-01-a.md", "warm start note about pelicans")
    index = warm(settings)
    assert index is index_for(settings)
    assert (index.rebuild_count, index.update_count) == (1, 0)
    warm(settings)
    assert (index.rebuild_count, index.update_count) == (1, 0)
    write(tmp_path / "state/memory/2026-01-02-b.md", "second note about pelicans")
    warm(settings)
    assert (index.rebuild_count, index.update_count) == (1, 1)
    assert len(index.search("pelicans")) == 2


def test_the_process_keeps_few_indexes_and_a_dropped_one_still_answers(tmp_path):
    settings = [Settings(state_dir=tmp_path / f"state{i}", work_dir=tmp_path / "work")
                for i in range(MAX_INDEXES_PER_PROCESS + 1)]
    write(tmp_path / "state0/memory/2026-01-01-a.md", "heron sighting")
    first = index_for(settings[0])
    assert first.search("heron")
    for other in settings[1:]:
        index_for(other)
    assert index_for(settings[0]) is not first  # the least recently used was closed
    assert [h.source for h in first.search("heron")] == ["memory/2026-01-01-a.md"]
    assert first.rebuild_count == 2


def _tamper_cache(state: Path, fingerprint: str | None = None) -> None:
    """Swap the cached terms of every file for "cachedterm", as only a cache could."""
    cache_path = state / CACHE_FILE
    saved = json.loads(cache_path.read_text(encoding="utf-8"))
    for entry in saved["files"].values():
        entry[3] = ["cachedterm" for _ in entry[3]]
    saved["fingerprint"] = fingerprint or saved["fingerprint"]
    cache_path.write_text(json.dumps(saved), encoding="utf-8")


def test_a_new_index_takes_terms_from_the_cache_only_for_the_same_file_version(tmp_path):
    index = make_index(tmp_path, CORPUS)
    assert index.search("超时")
    state, work = tmp_path / "state", tmp_path / "work"
    assert (state / CACHE_FILE).is_file()
    _tamper_cache(state)
    write(state / "memory/2026-01-22-books.md", "I finished reading a long novel about whales.")
    restarted = MemoryIndex(state, work)
    found = {h.source for h in restarted.search("cachedterm", limit=10)}
    assert found == set(CORPUS) - {"memory/2026-01-22-books.md"}  # the changed file was read again
    assert [h.source for h in restarted.search("whales")] == ["memory/2026-01-22-books.md"]


def test_a_cache_written_by_other_tokenizer_code_is_ignored(tmp_path):
    make_index(tmp_path, CORPUS).search("超时")
    state = tmp_path / "state"
    _tamper_cache(state, fingerprint="made-by-an-older-release")
    restarted = MemoryIndex(state, tmp_path / "work")
    assert restarted.search("cachedterm") == []
    assert restarted.search("超时")[0].source == "memory/2026-01-28-deploy.md"


def test_an_unreadable_cache_is_ignored_and_rewritten(tmp_path, caplog):
    make_index(tmp_path, CORPUS).search("超时")
    cache_path = tmp_path / "state" / CACHE_FILE
    cache_path.write_text("{not json", encoding="utf-8")
    restarted = MemoryIndex(tmp_path / "state", tmp_path / "work")
    assert restarted.search("超时")[0].source == "memory/2026-01-28-deploy.md"
    assert "unreadable cache" in caplog.text
    assert json.loads(cache_path.read_text(encoding="utf-8"))["files"]


def test_searching_a_missing_state_dir_creates_nothing(tmp_path):
    write(tmp_path / "work/docs/a.md", "docs only")
    assert MemoryIndex(tmp_path / "state", tmp_path / "work").search("docs")
    assert not (tmp_path / "state").exists()
