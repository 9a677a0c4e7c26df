"""Memory search benchmark (SPEC section 9, item 4).

Builds 10,000 memory files (half Chinese, half English, ~500 chars each) in a temporary
state dir and prints: index build time, warm query p50/p95 over 200 queries, and the cost
of adding one file (the time of the next query).

    python bench/bench_memory.py [--files 10000] [--queries 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mimikit.memory import MemoryIndex

FILE_CHARS = 500
EN_WORDS = (
    "deploy timeout redis queue worker cluster cache memory search index token budget "
    "release rollback database migration schema backup restore latency throughput "
    "incident alert dashboard metric config secret upload storage bucket region network "
    "proxy certificate domain lunch dinner meeting travel flight hotel book novel garden "
    "music concert coffee weather weekend project roadmap design review feedback customer "
    "invoice payment pricing contract python rust golang docker kubernetes terraform "
    "celery flask pydantic logging retry backoff scheduler cron trigger condition"
).split()
ZH_WORDS = (
    "部署 超时 队列 缓存 数据库 迁移 备份 恢复 延迟 吞吐 告警 监控 配置 密钥 存储 网络 代理 证书 "
    "域名 午饭 晚饭 会议 出差 航班 酒店 小说 花园 音乐 咖啡 天气 周末 项目 路线 设计 评审 反馈 "
    "客户 发票 付款 价格 合同 日志 重试 调度 定时 触发 条件 用户 偏好 问题 方案 版本 发布 回滚 "
    "服务器 集群 任务 记忆 检索 索引 预算"
).split()
ZH_FILLER = "我们 今天 讨论 了 关于 然后 决定 需要 继续 处理 已经 完成".split()


def text_for(rng: random.Random, chinese: bool) -> str:
    words: list[str] = []
    size = 0
    while size < FILE_CHARS:
        pool = (ZH_WORDS + ZH_FILLER) if chinese else EN_WORDS
        word = rng.choice(pool)
        words.append(word)
        size += len(word) + (0 if chinese else 1)
        if rng.random() < 0.08:
            words.append("。\n\n" if chinese else ".\n\n")
    return ("" if chinese else " ").join(words)


def build_corpus(state: Path, count: int, rng: random.Random) -> None:
    folder = state / "memory"
    folder.mkdir(parents=True)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(count):
        day = start + timedelta(days=i % 365)
        text = text_for(rng, chinese=i % 2 == 0)
        (folder / f"{day:%Y-%m-%d}-note-{i}.md").write_text(text, encoding="utf-8")


def query_for(rng: random.Random) -> str:
    return " ".join(rng.sample(ZH_WORDS, rng.randint(1, 2)) + rng.sample(EN_WORDS, rng.randint(1, 2)))


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
        build_corpus(state, args.files, rng)
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
        new_file.write_text("新增的记忆：zanzibar 部署超时。" + text_for(rng, True), encoding="utf-8")
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
