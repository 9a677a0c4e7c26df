"""Triggers: recurring, scheduled and conditional tasks."""

from __future__ import annotations

from mimikit.models import Task
from mimikit.runtime import Runtime


def unschedule(runtime: Runtime, trigger: Task) -> None:
    """Remove a trigger's beat entry and indexes (its task is already canceled)."""
