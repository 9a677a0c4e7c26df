"""``mimikit failed [list|retry ID|dismiss ID]``: the Teller's inbox items that gave up after
their bounded tries (what ``/api/inbox/failed`` serves)."""

from __future__ import annotations

import json

import click

from mimikit.config import Settings
from mimikit.conversation import failed
from mimikit.store.runtime import Runtime, build_runtime


def run_failed(settings: Settings, action: str, item_id: str | None,
               include_dismissed: bool = False, as_json: bool = False) -> int:
    """List the items that gave up, or retry or dismiss one.

    Raises:
        click.UsageError: ``retry`` or ``dismiss`` without an id, or ``list`` with one.
        NotFound: No item with that id gave up.
    """
    runtime = build_runtime(settings)
    if action == "list":
        if item_id is not None:
            raise click.UsageError(f"`mimikit failed list` takes no ID (got {item_id!r}); "
                                   "use `mimikit failed retry ID` or `dismiss ID`")
        return print_failed(runtime, include_dismissed, as_json)
    if item_id is None:
        raise click.UsageError(f"`mimikit failed {action}` needs the ID of an item that gave "
                               "up; `mimikit failed list` shows them")
    if action == "retry":
        record = failed.retry(runtime, item_id)
        print(f"{record.id} is back in the inbox; the Teller tries it again now")
        return 0
    record, changed = failed.dismiss(runtime, item_id)
    print(f"{record.id} dismissed" if changed else f"{record.id} was dismissed already")
    return 0


def print_failed(runtime: Runtime, include_dismissed: bool, as_json: bool) -> int:
    """Print the items that gave up, oldest first, each with why."""
    found = failed.listing(runtime, include_dismissed=include_dismissed)
    if as_json:
        print(json.dumps({"failed": found}, indent=2))
        return 0
    if not found:
        print("no item gave up")
    for item in found:
        state = " (dismissed)" if item["state"] == "dismissed" else ""
        print(f"{item['id']}  {item['kind']}{state}  {item['failedAt']}  “{item['preview']}”\n"
              f"    {item['reason']} ({item['tries']} tries, {item['calls']} LLM calls)")
    return 0
