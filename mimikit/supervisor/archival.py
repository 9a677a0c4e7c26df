"""Archival and flush of the conversation into memory, as supervisor work.

Run from the tick when history exceeds 100 messages or 6 h passed since the last run, and by the
6-hourly beat entry ``mimikit.memory.archive``. Summaries of older days and months are written by
Worker tasks, whose results land in ``memory/summary/``.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from mimikit.lifecycle.submit import submit
from mimikit.memory.archive import archive, flush, should_archive
from mimikit.models import Message, Task, utcnow
from mimikit.store import lease
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.memory")
LOCK_SECONDS = 300
SUMMARY_PROMPT = """Summarize this conversation {what} for Mimikit's long-term memory.
Keep decisions, facts about the user and their projects, preferences, open questions and
outcomes; drop small talk. Answer with submit_result, resultType "summary":
{{"summary": "...", "keyPoints": ["...", ...]}}.

{transcript}"""


def _time(runtime: Runtime, name: str) -> datetime | None:
    raw = runtime.redis.get(runtime.keys.meta(name))
    return datetime.fromisoformat(raw.decode()) if raw else None


def maybe_archive(runtime: Runtime, force: bool = False) -> dict[str, Any]:
    """Archive and flush when their thresholds are met (cheap when they are not)."""
    now = utcnow()
    # "More than 100 messages" counts the ones since the last run: the history is never
    # trimmed, so its total would keep the archival running on every tick.
    new_messages = runtime.conversation.count() - int(
        runtime.redis.get(runtime.keys.meta("archive_last_count")) or 0)
    last_run = _time(runtime, "archive_last_run")
    if not force and not should_archive(new_messages, last_run, now):
        return {}
    lock = runtime.keys.meta("archive_lock")
    if not runtime.redis.set(lock, "1", nx=True, ex=LOCK_SECONDS):
        return {}
    try:
        return _archive_and_flush(runtime, now)
    finally:
        runtime.redis.delete(lock)


def _archive_and_flush(runtime: Runtime, now: datetime) -> dict[str, Any]:
    state_dir = runtime.settings.state_dir
    history = runtime.conversation.between(None, None)
    # A claim expires, so a summary whose Worker failed is asked for again by a later run
    # (one whose file exists is never asked for again).
    claim_ttl = 2 * runtime.settings.worker_timeout + 3600
    report = archive(history, state_dir, now,
                     claim=lambda key: lease.claim(runtime.redis, runtime.keys.claim(key), claim_ttl),
                     request_summary=lambda kind, period, msgs: request_summary(
                         runtime, kind, period, msgs))
    runtime.redis.mset({runtime.keys.meta("archive_last_run"): now.isoformat(),
                        runtime.keys.meta("archive_last_count"): len(history)})
    flushed = flush(history, state_dir, now, _time(runtime, "flush_last_run"))
    if flushed is not None:
        runtime.redis.set(runtime.keys.meta("flush_last_run"), now.isoformat())
    done = {"copied": len(report.copied), "requested": len(report.requested),
            "flushed": str(flushed) if flushed else None}
    if report.copied or report.requested or flushed:
        runtime.events.log("memory_archived", **done)
    return done


def request_summary(runtime: Runtime, kind: str, period: str, messages: list[Message]) -> Task:
    """Queue the Worker task that writes one daily or monthly summary."""
    transcript = "\n".join(f"[{m.createdAt:%Y-%m-%d %H:%M}] {m.role}: {m.text[:2000]}"
                           for m in messages)[:60_000]
    what = f"of {period}" if kind == "daily" else f"of the month {period}"
    # Memory upkeep is system work: its result goes to memory/summary/ (``lifecycle.memory_sink``),
    # never to the chat.
    task = Task(prompt=SUMMARY_PROMPT.format(what=what, transcript=transcript), priority=2,
                title=f"Memory summary ({kind} {period})", notify="never")
    # The target is noted before the task can run, so its result always lands in memory.
    runtime.redis.set(runtime.keys.meta(f"summary:{task.id}"), json.dumps([kind, period]))
    return submit(runtime, [task], note="memory summary")[0]
