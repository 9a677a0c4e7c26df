"""One agent run in progress (``Session``), and what runs it (an ``Engine``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from mimikit.llm.journal import Journal
from mimikit.llm.record import Observer, RunRecord
from mimikit.llm.registry import Tool
from mimikit.spending.meter import Meter
from mimikit.store.runtime import Runtime
from mimikit.tools.context import ToolContext


@dataclass
class Session:
    """One agent run in progress: what an engine needs, and the record it fills."""

    runtime: Runtime
    ctx: ToolContext
    record: RunRecord
    meter: Meter
    system: str
    native_system: str  # the system prompt should the server refuse the answer's schema
    user: str
    deadline: float
    on_step: Callable[[RunRecord], None] | None = None
    observe: Observer | None = None
    cancel: threading.Event | None = None
    journal: Journal | None = None
    tools: tuple[Tool, ...] = ()  # this run's own, beside its role's (e.g. from MCP servers)


Engine = Callable[[Session], None]
