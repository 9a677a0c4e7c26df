"""What the Teller is shown of the person's world, so that it answers what it can see instead
of inventing it: the open items of the backlog (``## Backlog``), the work that will run later
(``## Scheduled``) and the names in the work directory (``## Work directory``). Asked "what
reminders do I have?" with neither, the 1.5B model named a reminder that was a fact in its
history and left out one it had set; asked which files there were, it named a file that did
not exist.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mimikit.memory import backlog
from mimikit.memory.tokenize import has_chinese
from mimikit.models import IntervalSchedule, Task
from mimikit.store.runtime import Runtime
from mimikit.summaries import timing_words
from mimikit.tools.context import ToolContext
from mimikit.tools.teller_tools import post_reply

SCHEDULED_SHOWN = 12  # the oldest first; more are counted
SCHEDULED_CHARS = 100  # of each one's title or prompt
WORK_DIR_NAMES = 40  # names shown, in order; more are counted
SHOWN_TO_THE_PERSON = 50  # of the triggers listed where the Teller shows them
NOTHING_SCHEDULED = {False: "Nothing is scheduled.", True: "目前没有安排任何提醒或任务。"}
NO_FILES = {False: "The work directory is empty.", True: "工作目录里没有文件。"}


def surroundings(runtime: Runtime) -> list[str]:
    """The ``## Backlog``, ``## Scheduled`` and ``## Work directory`` sections of a Teller
    run, those that have anything in them."""
    return [section for section in (backlog_section(runtime), scheduled(runtime),
                                    work_directory(runtime)) if section]


def backlog_section(runtime: Runtime) -> str:
    """``## Backlog`` with the open items; '' when there is none."""
    items = [entry for entry in backlog.read(runtime.settings.state_dir) if not entry["done"]]
    return "## Backlog\n" + "\n".join(f"- [ ] {entry['item']}" for entry in items) \
        if items else ""


def scheduled(runtime: Runtime) -> str:
    """``## Scheduled``, with a line per trigger; '' when there is none."""
    lines = scheduled_lines(runtime)
    return "## Scheduled\n" + "\n".join(lines) if lines else ""


def scheduled_lines(runtime: Runtime, shown: int = SCHEDULED_SHOWN) -> list[str]:
    """One line per trigger (recurring, scheduled or conditional work), the oldest first, with
    when it runs; past ``shown`` of them, how many more there are."""
    triggers = sorted(runtime.triggers.all(), key=lambda task: task.createdAt)
    lines = [f"- {task.type}{timing_words(task)}{_next_run(task)}: "
             f"{' '.join((task.title or task.prompt).split())[:SCHEDULED_CHARS]}"
             for task in triggers[:shown]]
    if len(triggers) > shown:
        lines.append(f"- and {len(triggers) - shown} more")
    return lines


def show(ctx: ToolContext) -> None:
    """What a Teller pass's answer said to show (``show``: "scheduled" or "files"; nothing for
    "nothing"), listed below its reply in the runtime's words: asked "what reminders do I
    have?", the 1.5B model named one of two, or said it would list them and did not; asked to
    "list everything in my workspace", it handed that over, and the Planner scheduled the
    listing for 15:00. Not beside work the pass handed over, which may change what is listed."""
    if ctx.created or ctx.listed not in LISTINGS:
        return
    lines, nothing = LISTINGS[ctx.listed](ctx.runtime)
    chinese = has_chinese(" ".join(ctx.heard))
    post_reply(ctx, "\n".join(lines) or nothing[chinese], may_repeat=True,
               effect=f"show {ctx.listed}")


def _scheduled_listing(runtime: Runtime) -> tuple[list[str], dict[bool, str]]:
    return scheduled_lines(runtime, SHOWN_TO_THE_PERSON), NOTHING_SCHEDULED


def _files_listing(runtime: Runtime) -> tuple[list[str], dict[bool, str]]:
    return [f"- {name}" for name in work_dir_names(runtime) or []], NO_FILES


# What a pass may show, by the name its answer gives: the lines, and what is said for none
# (in English, in Chinese).
LISTINGS: dict[str, Callable[[Runtime], tuple[list[str], dict[bool, str]]]] = {
    "scheduled": _scheduled_listing,
    "files": _files_listing,
}


def _next_run(task: Task) -> str:
    """When a repeating one runs next, with its day's name (a small model reading "cron 0 17 *
    * 5" on a Sunday said "tomorrow at 5 PM")."""
    schedule = task.schedule
    if not isinstance(schedule, IntervalSchedule) or schedule.nextRunAt is None:
        return ""
    try:
        zone = ZoneInfo(schedule.timezone or "UTC")
    except (ValueError, ZoneInfoNotFoundError):
        zone = ZoneInfo("UTC")
    return f" (next: {schedule.nextRunAt.astimezone(zone):%A %Y-%m-%d %H:%M})"


def work_directory(runtime: Runtime) -> str:
    """The names at the top of the work directory (``work_dir_names``); '' where it cannot
    be read."""
    names = work_dir_names(runtime)
    if names is None:
        return ""
    shown = ", ".join(names[:WORK_DIR_NAMES]) or "(empty)"
    more = f", and {len(names) - WORK_DIR_NAMES} more" if len(names) > WORK_DIR_NAMES else ""
    return f"## Work directory\n{shown}{more}"


def work_dir_names(runtime: Runtime) -> list[str] | None:
    """The names at the top of the work directory, in order (a folder's with a ``/``),
    Mimikit's own state and hidden names left out; None where it cannot be read."""
    root = Path(runtime.settings.work_dir).resolve()
    state = Path(runtime.settings.state_dir).resolve()
    own = state.name if state.parent == root else None
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return None
    return [entry.name + ("/" if entry.is_dir() else "") for entry in entries
            if not entry.name.startswith(".") and entry.name != own]
