"""What a new or edited trigger must satisfy: one set of checks for the Planner's tools, the
Teller's, the API and the CLI, each failure a reason to act on (``ValueError``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from mimikit.exceptions import InvalidValue
from mimikit.models import Task
from mimikit.scheduling import conditions, validation
from mimikit.store.runtime import Runtime


def checked_condition(runtime: Runtime, condition: Any, known_ids: Iterable[str] = ()) -> Any:
    """``condition`` as its atoms check it (paths made relative to the work dir).

    Raises:
        InvalidValue: A task id it names does not exist, a path leaves the work dir or is not
            a glob the tick can evaluate.
    """
    return conditions.check(condition, conditions.CheckContext(runtime, known_ids))


def timed_schedule(runtime: Runtime, kind: str, now: datetime, *, interval: float | None = None,
                   cron: str | None = None, run_at: datetime | None = None
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``schedule`` of a recurring or scheduled task, and what to say of it (its next runs).

    Raises:
        InvalidValue: No ``runAt`` for a scheduled task, a past ``runAt``, an invalid cron,
            not exactly one of ``interval`` and ``cron`` for a recurring one.
    """
    settings = runtime.settings
    if kind == "scheduled":
        if run_at is None:
            raise InvalidValue("a scheduled task needs 'runAt' (ISO 8601 time)")
        when = validation.check_run_at(run_at, settings.tz, now)
        return {"runAt": when}, {"runAt": when.isoformat()}
    if (interval is None) == (cron is None):
        raise InvalidValue("a recurring task needs exactly one of 'interval' (seconds between "
                           "runs) or 'cron' (e.g. '0 9 * * *' for every day at 9:00); it has "
                           + ("both" if cron else "neither"))
    if cron is None:
        return {"interval": interval}, {}
    about = validation.describe_cron(cron, settings.timezone, now)
    return {"interval": interval, "cron": cron, "timezone": settings.timezone}, about


def built(**fields: Any) -> Task:
    """The task ``fields`` make.

    Raises:
        InvalidValue: The fields break a rule of the task model, each named.
    """
    try:
        return Task(**fields)
    except ValidationError as error:
        raise InvalidValue(problems(error)) from None


def problems(error: ValidationError) -> str:
    """One line naming each invalid field of ``error``."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'task'}: {e['msg']}"
                     for e in error.errors())
