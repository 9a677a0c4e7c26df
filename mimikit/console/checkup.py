"""``mimikit doctor``: whether an instance can work, one line a check. Apart from ``mimikit
status`` (``console.report``), which asks no model and so imports no LLM client."""

from __future__ import annotations

import json

from mimikit.config import Settings
from mimikit.doctor import format_check, healthy, run_checks
from mimikit.store.runtime import build_runtime


def print_doctor(settings: Settings, as_json: bool = False) -> int:
    """Run every check and print one line each; 1 when any check failed."""
    checks = run_checks(build_runtime(settings))
    ok = healthy(checks)
    if as_json:
        print(json.dumps({"ok": ok, "checks": [c.dump() for c in checks]}, indent=2))
    else:
        for check in checks:
            print(format_check(check))
        failed = sum(check.status == "fail" for check in checks)
        print("all checks passed" if ok else f"{failed} check{'s' * (failed != 1)} failed")
    return 0 if ok else 1
