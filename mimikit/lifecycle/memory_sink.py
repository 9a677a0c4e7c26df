"""Step: the result of a memory summary task is written to ``memory/summary/``.

``supervisor.archival`` notes, before the task can run, which day or month a summary task
summarizes (``summary_target``); its result always lands in memory, never in the chat.
"""

from __future__ import annotations

import json

from mimikit.lifecycle.event import Completion
from mimikit.memory.archive import summary_path
from mimikit.store.runtime import Runtime


def summary_target(runtime: Runtime, task_id: str) -> tuple[str, str] | None:
    """``(kind, period)`` when ``task_id`` writes a memory summary."""
    raw = runtime.redis.get(runtime.keys.meta(f"summary:{task_id}"))
    return tuple(json.loads(raw)) if raw else None


def after(runtime: Runtime, completion: Completion) -> None:
    """Write a summary Worker's result to ``memory/summary/``."""
    result = completion.result
    if result is None or result.status != "done":
        return
    target = summary_target(runtime, completion.task.id)
    if target is None:
        return
    kind, period = target
    path = summary_path(runtime.settings.state_dir, kind, period)  # type: ignore[arg-type]
    body = result.result
    text = body.get("summary") or body.get("text") or json.dumps(body, ensure_ascii=False)
    points = "".join(f"- {p}\n" for p in body.get("keyPoints", []))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# Summary {period}\n\n{text}\n\n{points}", encoding="utf-8")
