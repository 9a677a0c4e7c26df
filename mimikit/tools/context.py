"""What a tool handler may use during one agent run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from mimikit.models import Task, Usage
from mimikit.store.runtime import Runtime


@dataclass
class ToolContext:
    """Passed to every tool handler of one run."""

    runtime: Runtime
    role: str
    trace_id: str | None = None
    task: Task | None = None
    workspace: Any = None
    started: float = field(default_factory=time.monotonic)
    usage: Usage = field(default_factory=Usage)
    replies: list[str] = field(default_factory=list)
    staged: list[Task] = field(default_factory=list)
    created: list[str] = field(default_factory=list)

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def add_usage(self, usage: Usage) -> None:
        """Count one completion's tokens toward this run (a reply carries the run's usage)."""
        self.usage = self.usage + usage
