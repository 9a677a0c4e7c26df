"""Checking a schedule or a condition as a model or a person writes it, before it is stored.

What real models send is read the way they mean it where that is unambiguous (a time without
an offset is local time in ``MIMIKIT_TIMEZONE``; an absolute path inside the work directory is
made relative), and refused with a reason the model can act on where it is not (an invalid cron,
a ``runAt`` already past, a path outside the work directory).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any
from zoneinfo import ZoneInfo

from mimikit.models import AllOf, AnyOf, FileChanged, FileExists
from mimikit.scheduling.cron import Cron
from mimikit.scheduling.slots import MISFIRE_GRACE_SECONDS


def local_time(value: datetime, zone: ZoneInfo) -> datetime:
    """``value`` as an aware time: one without an offset is read in ``zone``."""
    return value if value.tzinfo is not None else value.replace(tzinfo=zone)


def check_run_at(run_at: datetime, zone: ZoneInfo, now: datetime) -> datetime:
    """The aware ``runAt`` of a scheduled task; refused when it passed beyond the grace.

    Raises:
        ValueError: ``runAt`` lies more than the misfire grace in the past.
    """
    when = local_time(run_at, zone)
    if when < now - timedelta(seconds=MISFIRE_GRACE_SECONDS):
        local_now = now.astimezone(zone).isoformat(timespec="seconds")
        raise ValueError(
            f"runAt {when.isoformat()} is in the past (now is {local_now}, time zone "
            f"{zone.key}); give a future time, or delegate a oneshot task to run it now")
    return when


def describe_cron(expression: str, zone: str, now: datetime) -> dict[str, Any]:
    """What a cron expression means, for the tool result: its next runs, in its zone.

    Raises:
        ValueError: The expression or the zone is invalid (the message says how to write one).
    """
    cron = Cron.parse(expression, zone)
    described: dict[str, Any] = {
        "timezone": zone,
        "nextRuns": [t.isoformat(timespec="minutes") for t in cron.upcoming(now)],
    }
    if cron.both_days_restricted():
        described["note"] = ("day-of-month and day-of-week are both set: like standard cron it "
                             "runs on days matching EITHER one")
    return described


def relative_paths(condition: Any, work_dir: Path) -> Any:
    """``condition`` with every file path made relative to ``work_dir`` (a copy).

    Raises:
        ValueError: A path or glob points outside the work directory.
    """
    if isinstance(condition, AllOf | AnyOf):
        children = [relative_paths(child, work_dir) for child in condition.conditions]
        return condition.model_copy(update={"conditions": children})
    if isinstance(condition, FileChanged | FileExists):
        path = inside_work_dir(condition.params.path, work_dir)
        params = condition.params.model_copy(update={"path": path})
        return condition.model_copy(update={"params": params})
    return condition


def inside_work_dir(pattern: str, work_dir: Path) -> str:
    """A path or glob relative to ``work_dir``, normalised (``a/../b`` is ``b``).

    Raises:
        ValueError: The pattern is absolute outside the work dir, or climbs out of it.
    """
    root = PurePosixPath(os.path.abspath(work_dir))
    raw = PurePosixPath(pattern)
    if raw.is_absolute():
        if not _is_within(raw, root):
            raise ValueError(_outside(pattern, work_dir))
        raw = PurePosixPath(os.path.relpath(raw, root))
    normal = PurePosixPath(os.path.normpath(raw))
    if normal.parts[:1] == ("..",) or str(normal) in ("", "."):
        raise ValueError(_outside(pattern, work_dir))
    return str(normal)


def _is_within(path: PurePosixPath, root: PurePosixPath) -> bool:
    normal = PurePosixPath(os.path.normpath(path))
    return normal == root or root in normal.parents


def _outside(pattern: str, work_dir: Path) -> str:
    return (f"path {pattern!r} is outside the work directory {work_dir}; give a path or glob "
            "relative to it, e.g. 'src/**/*.py' or 'reports/today.md'")
