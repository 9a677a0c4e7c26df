"""The tools of every role, registered once with the permission matrix of the seeds."""

from __future__ import annotations

from functools import cache

from mimikit.tools.registry import Registry


@cache
def registry() -> Registry:
    """The process-wide registry with every role's tools."""
    from celery.exceptions import SoftTimeLimitExceeded

    from mimikit.execution import TaskCanceled, TaskTimedOut
    from mimikit.tools import planner_tools, shared, teller_tools, worker_tools

    built = Registry(propagate=(TaskCanceled, TaskTimedOut, SoftTimeLimitExceeded))
    for module in (shared, teller_tools, planner_tools, worker_tools):
        module.register(built)
    try:
        from mimikit.tools import eval_tools
    except ImportError:
        return built
    eval_tools.register(built)
    return built
