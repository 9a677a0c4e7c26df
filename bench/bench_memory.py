"""Memory search benchmark (SPEC section 9, item 4), beside rank_bm25 on the same passages.

Builds 10,000 memory files (half Chinese, half English, ~500 chars each) in a temporary
state dir -- Chinese drawn from jieba's word frequencies, English from a Zipf-weighted
pseudo-word vocabulary, each file with 4 topic words -- and prints:

- build: a cold build (no term cache), a new process's start from the term cache, and
  ``warm()`` on a built index; beside them, cutting the corpus into terms alone and
  building ``rank_bm25.BM25Okapi`` from those terms;
- warm queries p50/p95: topic queries (1-4 topic words) and common-word queries (6 of the
  most frequent words, as the Teller's keyword injection sends); beside them,
  ``BM25Okapi.get_scores`` plus top 5 on the same terms (the raw library, Python over
  every passage);
- changes: a file added, changed in place or deleted, then the next query that must see
  it (several rounds); beside it, rebuilding ``BM25Okapi`` with the one new file;
- a summary line per target.

    python bench/bench_memory.py [--files 10000] [--queries 200] [--changes 20]
"""

from __future__ import annotations

import argparse
import logging
import math
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jieba
import numpy as np
from rank_bm25 import BM25Okapi
from summary import record

from mimikit.memory import MemoryIndex, tokenize
from mimikit.memory.corpus import Corpus
from mimikit.memory.passages import TRUNCATION_MARK, split_passages
from mimikit.memory.search import FULL_SCAN_INTERVAL_SECONDS

FILE_CHARS = 500
TOPIC_WORDS_PER_FILE = 4
EN_VOCABULARY = 5_000
ZH_VOCABULARY = 20_000
COMMON_WORDS = 300
TARGET_QUERY_P50_MS = 20.0
TARGET_CHANGE_MS = 30.0
EN_TOPICS = (
    "deploy timeout redis queue worker cluster cache memory search index token budget "
    "release rollback database migration schema backup restore latency throughput "
    "incident alert dashboard metric config secret upload storage bucket region network "
    "proxy certificate domain lunch dinner meeting travel flight hotel book novel garden "
    "music concert coffee weather weekend project roadmap design review feedback customer "
    "invoice payment pricing contract python rust golang docker kubernetes terraform "
    "celery flask pydantic logging retry backoff scheduler cron trigger condition"
).split()
ZH_TOPICS = (
    "部署 超时 队列 缓存 数据库 迁移 备份 恢复 延迟 吞吐 告警 监控 配置 密钥 存储 网络 代理 证书 "
    "域名 午饭 晚饭 会议 出差 航班 酒店 小说 花园 音乐 咖啡 天气 周末 项目 路线 设计 评审 反馈 "
    "客户 发票 付款 价格 合同 日志 重试 调度 定时 触发 条件 用户 偏好 方案 版本 发布 回滚 "
    "服务器 集群 任务 记忆 检索 索引 预算"
).split()


class Vocabulary:
    """Zipf-like word draws: English pseudo-words by rank, Chinese words by jieba frequency."""

    def __init__(self, rng: random.Random) -> None:
        syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
        english = {"".join(rng.choices(syllables, k=rng.randint(1, 3))) for _ in range(EN_VOCABULARY * 2)}
        self.english = sorted(english)[:EN_VOCABULARY]
        rng.shuffle(self.english)
        self.english_weights = [1 / (rank + 1) for rank in range(len(self.english))]
        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        common = sorted(((f, w) for w, f in jieba.dt.FREQ.items() if f > 0), reverse=True)
        self.chinese = [w for _, w in common[:ZH_VOCABULARY]]
        self.chinese_weights = [f for f, _ in common[:ZH_VOCABULARY]]

    def text(self, rng: random.Random, chinese: bool) -> str:
        if chinese:
            words = rng.choices(self.chinese, self.chinese_weights, k=FILE_CHARS // 2)
            topics = rng.sample(ZH_TOPICS, TOPIC_WORDS_PER_FILE)
        else:
            words = rng.choices(self.english, self.english_weights, k=FILE_CHARS // 6)
            topics = rng.sample(EN_TOPICS, TOPIC_WORDS_PER_FILE)
        for topic in topics:
            words.insert(rng.randrange(len(words)), topic)
        for _ in range(len(words) // 30):  # a few paragraphs per file
            words.insert(rng.randrange(len(words)), "。\n\n" if chinese else ".\n\n")
        text = ("" if chinese else " ").join(words)
        return text[:FILE_CHARS]

    def common_words(self) -> list[str]:
        """The most frequent words that survive as search terms, Chinese and English."""
        words = self.chinese[:COMMON_WORDS] + self.english[:COMMON_WORDS]
        return [word for word in words if tokenize(word) == [word]]


class Okapi(BM25Okapi):
    """rank_bm25's Okapi with the idf Mimikit uses, log(1 + (N - n + 0.5) / (n + 0.5))."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {t: math.log(1 + (self.corpus_size - n + 0.5) / (n + 0.5)) for t, n in nd.items()}


def build_corpus(state: Path, count: int, rng: random.Random, vocabulary: Vocabulary) -> None:
    folder = state / "memory"
    folder.mkdir(parents=True)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(count):
        day = start + timedelta(days=i % 365)
        text = vocabulary.text(rng, chinese=i % 2 == 0)
        (folder / f"{day:%Y-%m-%d}-note-{i}.md").write_text(text, encoding="utf-8")


def cut_corpus(state: Path) -> list[list[str]]:
    """Every passage's terms, cut as Mimikit cuts them (the raw library's input)."""
    return [
        tokenize(passage.removesuffix(TRUNCATION_MARK))
        for path in sorted((state / "memory").glob("*.md"))
        for passage in split_passages(path.read_text(encoding="utf-8"))
    ]


def topic_query(rng: random.Random) -> str:
    return " ".join(rng.sample(ZH_TOPICS, rng.randint(1, 2)) + rng.sample(EN_TOPICS, rng.randint(1, 2)))


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def timed(action: Callable[[], object]) -> float:
    """Seconds ``action`` took."""
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def ms(values: list[float]) -> str:
    """p50 / p95 of ``values`` (seconds) in milliseconds."""
    return f"{statistics.median(values) * 1000:.1f} / {percentile(values, 95) * 1000:.1f} ms"


def raw_search(model: BM25Okapi, query: str) -> list[int]:
    """The raw library's answer: terms cut the same way, every passage scored, top 5."""
    scores = model.get_scores(list(dict.fromkeys(tokenize(query))))
    best = np.argpartition(scores, -5)[-5:]
    return best[np.argsort(-scores[best])].tolist()


def bench_queries(index: MemoryIndex, model: BM25Okapi, queries: list[str]) -> tuple[list, list]:
    """Seconds per query for Mimikit and for the raw library, interleaved per query."""
    mimikit, raw = [], []
    for query in queries:
        mimikit.append(timed(lambda q=query: index.search(q)))
        raw.append(timed(lambda q=query: raw_search(model, q)))
    return mimikit, raw


def bench_changes(index: MemoryIndex, state: Path, rounds: int, rng: random.Random,
                  vocabulary: Vocabulary) -> dict[str, list[float]]:
    """Seconds from a file added / changed / deleted to the next query that must see it."""
    folder = state / "memory"
    timings: dict[str, list[float]] = {"added": [], "changed": [], "deleted": []}
    for n in range(rounds):
        marker, changed_marker = f"zanzibar{n}", f"quixotic{n}"
        path = folder / f"2026-01-28-new-file-{n}.md"
        path.write_text(f"新增的记忆：{marker} 部署超时。" + vocabulary.text(rng, True), encoding="utf-8")
        timings["added"].append(_until(index, marker, path.name, present=True))
        path.write_text(f"改过的记忆：{changed_marker}。" + vocabulary.text(rng, True), encoding="utf-8")
        timings["changed"].append(_until(index, changed_marker, path.name, present=True))
        path.unlink()
        timings["deleted"].append(_until(index, changed_marker, path.name, present=False))
    return timings


def _until(index: MemoryIndex, query: str, name: str, present: bool) -> float:
    began = time.perf_counter()
    hits = index.search(query)
    took = time.perf_counter() - began
    found = [hit.source for hit in hits] == [f"memory/{name}"]
    assert found == present, (query, hits)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--changes", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(42)
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        state, work = Path(tmp) / "state", Path(tmp) / "work"
        vocabulary = Vocabulary(rng)
        build_corpus(state, args.files, rng, vocabulary)

        index = MemoryIndex(state, work)
        cold = timed(index.warm)
        restart = timed(MemoryIndex(state, work).warm)  # a new process, same state dir
        again = timed(index.warm)
        scan = timed(Corpus(state, work).scan)  # what a check of every file costs
        corpus: list[list[str]] = []
        cut = timed(lambda: corpus.extend(cut_corpus(state)))
        model = Okapi(corpus)
        raw_build = timed(lambda: Okapi(corpus))
        rows += [
            ("index build, cold (no term cache)", f"{cold:.2f} s", f"cut into terms {cut:.2f} s + BM25Okapi {raw_build:.2f} s"),
            ("index build, new process (term cache)", f"{restart:.2f} s", ""),
            ("warm() on a built index", f"{again * 1000:.2f} ms", ""),
            ("re-check of every file (mtime, size)", f"{scan * 1000:.1f} ms", f"every {FULL_SCAN_INTERVAL_SECONDS:.0f} s, or per query without inotify"),
        ]

        topic = [topic_query(rng) for _ in range(args.queries)]
        common_words = vocabulary.common_words()
        common = [" ".join(rng.sample(common_words, 6)) for _ in range(args.queries)]
        topic_s, topic_raw = bench_queries(index, model, topic)
        common_s, common_raw = bench_queries(index, model, common)
        hits = sum(len(index.search(query)) for query in topic) / len(topic)
        rows += [
            ("warm query p50/p95, topic words", ms(topic_s), f"get_scores + top 5: {ms(topic_raw)}"),
            ("warm query p50/p95, 6 common words", ms(common_s), f"get_scores + top 5: {ms(common_raw)}"),
            ("mean hits per topic query", f"{hits:.1f}", ""),
        ]

        changes = bench_changes(index, state, args.changes, rng, vocabulary)
        raw_add = timed(lambda: Okapi([*corpus, tokenize(vocabulary.text(rng, True))]))
        for kind, values in changes.items():
            beside = f"BM25Okapi rebuilt: {raw_add * 1000:.0f} ms" if kind == "added" else ""
            rows.append((f"file {kind} -> next query p50/max ({args.changes}x)",
                         f"{statistics.median(values) * 1000:.1f} / {max(values) * 1000:.1f} ms", beside))
        rows.append(("full rebuilds / file updates", f"{index.rebuild_count} / {index.update_count}", ""))
        term_count = sum(len(terms) for terms in corpus)

    print_table(args.files, len(corpus), term_count, rows)
    print_summary(statistics.median(topic_s), statistics.median(common_s),
                  max(max(values) for values in changes.values()), cold, restart)
    record("memory: warm query p50, topic words", f"{statistics.median(topic_s) * 1000:.1f} ms",
           baseline=f"rank_bm25: {statistics.median(topic_raw) * 1000:.1f} ms",
           ratio=statistics.median(topic_s) / statistics.median(topic_raw),
           target=f"<= {TARGET_QUERY_P50_MS:.0f} ms",
           met=statistics.median(topic_s) * 1000 <= TARGET_QUERY_P50_MS)
    added = changes["added"]
    record("memory: file added -> searchable, p50", f"{statistics.median(added) * 1000:.1f} ms",
           baseline=f"rank_bm25 rebuilt: {raw_add * 1000:.0f} ms",
           ratio=statistics.median(added) / raw_add, target=f"<= {TARGET_CHANGE_MS:.0f} ms",
           met=statistics.median(added) * 1000 <= TARGET_CHANGE_MS)


def print_table(files: int, passages: int, terms: int, rows: list[tuple[str, str, str]]) -> None:
    print(f"files: {files:,} (~{FILE_CHARS} chars, half Chinese); passages: {passages:,}; terms: {terms:,}")
    width = max(len(name) for name, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    print(f"{'memory search':<{width}}  {'Mimikit':<{value_width}}  raw rank_bm25 on the same passages")
    print(f"{'-' * width}  {'-' * value_width}  {'-' * 40}")
    for name, value, beside in rows:
        print(f"{name:<{width}}  {value:<{value_width}}  {beside}")


def print_summary(topic_p50: float, common_p50: float, worst_change: float, cold: float,
                  restart: float) -> None:
    def verdict(value_ms: float, target_ms: float) -> str:
        return "met" if value_ms <= target_ms else "MISSED"

    print()
    for name, value_ms, target in (
        ("warm query p50, topic words", topic_p50 * 1000, TARGET_QUERY_P50_MS),
        ("warm query p50, common words", common_p50 * 1000, TARGET_QUERY_P50_MS),
        ("change -> searchable (worst)", worst_change * 1000, TARGET_CHANGE_MS),
    ):
        print(f"summary: {name}: {value_ms:.1f} ms (target <= {target:.0f} ms): {verdict(value_ms, target)}")
    print(f"summary: index build: cold {cold:.2f} s, from the term cache {restart:.2f} s (no target)")


if __name__ == "__main__":
    main()
