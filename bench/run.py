"""Run every benchmark of SPEC section 9 and print their tables.

    python bench/run.py [--quick]

Each benchmark starts what it needs (its own redis-server, Celery workers, the scripted LLM
answering instantly) and prints a table; nothing here is a test. At the end, one table of every
figure against its raw-Celery or raw-library baseline measured in the same run, and its target.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from summary import SUMMARY_ENV, read, table

HERE = Path(__file__).resolve().parent
FULL = {
    "bench_e2e.py": ["--requests", "200", "--tasks", "2000", "--starts", "5"],
    "bench_triggers.py": [],
    "bench_memory.py": [],
    "bench_fanout.py": ["--tasks", "200", "--levels", "3,24,100", "--latencies", "1,5"],
}
QUICK = {
    "bench_e2e.py": ["--requests", "50", "--tasks", "300", "--starts", "2"],
    "bench_triggers.py": ["--triggers", "1000", "--entries", "200", "--seconds", "10"],
    "bench_memory.py": ["--files", "2000"],
    "bench_fanout.py": ["--tasks", "48", "--levels", "3,24", "--latencies", "1", "--rounds", "2"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="mimikit-bench-summary-") as tmp:
        summary = Path(tmp) / "summary.jsonl"
        env = {**os.environ, SUMMARY_ENV: str(summary)}
        for script, extra in (QUICK if args.quick else FULL).items():
            print(f"\n## {script} {' '.join(extra)}", flush=True)
            failed += subprocess.call([sys.executable, str(HERE / script), *extra], env=env) != 0
        rows = read(summary)
    print("\n## summary: Mimikit against the baseline measured in the same run\n")
    print(table(rows) if rows else "(no figures recorded)")
    if failed:
        print(f"\n{failed} benchmark(s) failed; their figures are missing above")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
