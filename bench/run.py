"""Run every benchmark of SPEC section 9 and print their tables.

    python bench/run.py [--quick]

Each benchmark starts what it needs (its own redis-server, Celery workers, the scripted LLM
answering instantly) and prints a table; nothing here is a test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FULL = {
    "bench_e2e.py": ["--requests", "200", "--tasks", "2000"],
    "bench_triggers.py": [],
    "bench_memory.py": [],
}
QUICK = {
    "bench_e2e.py": ["--requests", "50", "--tasks", "300"],
    "bench_triggers.py": ["--triggers", "1000", "--entries", "200", "--seconds", "10"],
    "bench_memory.py": ["--files", "2000"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args()
    failed = 0
    for script, extra in (QUICK if args.quick else FULL).items():
        path = HERE / script
        if not path.exists():
            print(f"\n## {script}: missing", flush=True)
            failed += 1
            continue
        print(f"\n## {script} {' '.join(extra)}", flush=True)
        failed += subprocess.call([sys.executable, str(path), *extra]) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
