"""The migrations of the stored data, one per schema version (see ``store.schema``)."""

from __future__ import annotations

from functools import partial

from mimikit.models import utcnow
from mimikit.scheduling import triggers
from mimikit.store.runtime import Runtime
from mimikit.store.schema import Migration, migrate
from mimikit.supervisor.retention import expire_old_runs, index_finished


def cron_entries_carry_their_expression(runtime: Runtime) -> None:
    """Version 2: a cron trigger's beat entry names its expression and zone (cron is read as
    standard cron, in a zone); entries written before are replaced."""
    for trigger in runtime.triggers.all():
        schedule = trigger.schedule
        if not trigger.finished and getattr(schedule, "cron", None):
            triggers.guarded(runtime, trigger.id, "migration to schema 2",
                             partial(triggers.install, runtime, trigger), None)


def finished_tasks_come_under_retention(runtime: Runtime) -> None:
    """Version 3: finished tasks and run transcripts are kept ``MIMIKIT_RETENTION_DAYS``; those
    written before are indexed and given their time to live (the tick deletes what is due)."""
    index_finished(runtime, utcnow())
    expire_old_runs(runtime)


def inbox_items_have_ids(runtime: Runtime) -> None:
    """Version 4: the Teller's inbox items are typed and acknowledged by id, with their trace
    at the top level; items queued before get theirs."""
    runtime.inbox.name_legacy_items()


MIGRATIONS: dict[int, Migration] = {2: cron_entries_carry_their_expression,
                                    3: finished_tasks_come_under_retention,
                                    4: inbox_items_have_ids}


def upgrade(runtime: Runtime) -> list[int]:
    """Bring the stored data up to this version's schema (at worker and beat start)."""
    return migrate(runtime, MIGRATIONS)
