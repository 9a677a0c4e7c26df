"""The figures each benchmark hands to ``run.py`` for its closing table of ratios.

A benchmark run by ``run.py`` finds the file to append to in ``MIMIKIT_BENCH_SUMMARY`` (one JSON
object per line); run alone, it prints only its own tables.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SUMMARY_ENV = "MIMIKIT_BENCH_SUMMARY"


def record(measure: str, value: str, *, baseline: str = "", ratio: float | None = None,
           target: str = "", met: bool | None = None) -> None:
    """Note one figure: its value, what it is compared with, the ratio and whether the target
    (if any) is met."""
    path = os.environ.get(SUMMARY_ENV)
    if not path:
        return
    row = {"measure": measure, "value": value, "baseline": baseline, "ratio": ratio,
           "target": target, "met": met}
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table."""
    head = ("measure", "Mimikit", "baseline", "ratio", "target", "")
    lines = [head]
    for row in rows:
        ratio = row["ratio"]
        verdict = {True: "met", False: "MISSED", None: ""}[row["met"]]
        lines.append((row["measure"], row["value"], row["baseline"],
                      "" if ratio is None else f"{ratio:.2f}", row["target"], verdict))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) + " |"
           for line in lines]
    out.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)
