"""Memory search benchmark (SPEC section 9, item 4).

Builds 10,000 memory files (half Chinese, half English, ~500 chars each) in a temporary
state dir -- Chinese drawn from jieba's word frequencies, English from a Zipf-weighted
pseudo-word vocabulary, each file with 4 topic words the queries use -- and prints: index build time, warm query p50/p95 over 200 queries, and the cost
of adding one file (the time of the next query).

    python bench/bench_memory.py [--files 10000] [--queries 200]
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jieba

from mimikit.memory import MemoryIndex

FILE_CHARS = 500
TOPIC_WORDS_PER_FILE = 4
EN_VOCABULARY = 5_000
ZH_VOCABULARY = 20_000
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


def build_corpus(state: Path, count: int, rng: random.Random, vocabulary: Vocabulary) -> None:
    folder = state / "memory"
    folder.mkdir(parents=True)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(count):
        day = start + timedelta(days=i % 365)
        text = vocabulary.text(rng, chinese=i % 2 == 0)
        (folder / f"{day:%Y-%m-%d}-note-{i}.md").write_text(text, encoding="utf-8")


def query_for(rng: random.Random) -> str:
    return " ".join(rng.sample(ZH_TOPICS, rng.randint(1, 2)) + rng.sample(EN_TOPICS, rng.randint(1, 2)))


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(42)
    with tempfile.TemporaryDirectory() as tmp:
        state, work = Path(tmp) / "state", Path(tmp) / "work"
        vocabulary = Vocabulary(rng)
        build_corpus(state, args.files, rng, vocabulary)
        index = MemoryIndex(state, work)

        began = time.perf_counter()
        index.search("warm up 部署")
        build_s = time.perf_counter() - began

        timings, hits = [], 0
        for _ in range(args.queries):
            began = time.perf_counter()
            hits += len(index.search(query_for(rng)))
            timings.append(time.perf_counter() - began)

        new_file = state / "memory" / "2026-01-28-new-file.md"
        new_file.write_text("新增的记忆：zanzibar 部署超时。" + vocabulary.text(rng, True), encoding="utf-8")
        began = time.perf_counter()
        found = index.search("zanzibar")
        add_s = time.perf_counter() - began
        assert found and found[0].source == "memory/2026-01-28-new-file.md", found

    rows = [
        ("files", f"{args.files:,} (~{FILE_CHARS} chars, half Chinese)"),
        ("index build (first query)", f"{build_s:.2f} s"),
        (f"warm query p50 ({args.queries} queries)", f"{statistics.median(timings) * 1000:.1f} ms"),
        (f"warm query p95 ({args.queries} queries)", f"{percentile(timings, 95) * 1000:.1f} ms"),
        ("mean hits per query", f"{hits / args.queries:.1f}"),
        ("add one file: next query", f"{add_s * 1000:.1f} ms"),
        ("full rebuilds / file updates", f"{index.rebuild_count} / {index.update_count}"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'memory search':<{width}}  value")
    print(f"{'-' * width}  {'-' * 30}")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
