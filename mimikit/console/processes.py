"""Running Celery's ``worker`` and ``beat`` commands for ``mimikit worker`` and ``mimikit beat``.

Only the command run is imported: the whole ``celery`` command line (its shell, its REPL) would
cost each worker some 12 MB for nothing. A worker runs Celery's threads pool unless told
otherwise: runs mostly wait for the LLM, so one process holds many of them.
"""

from __future__ import annotations

from collections.abc import Sequence

# Mimikit keeps its own record of canceled tasks and of live workers in Redis, so a starting
# worker need not sync revokes with its peers (mingle, ~1 s) nor gossip with them.
WORKER_DEFAULTS = ("--without-mingle", "--without-gossip")
DEFAULT_POOL = "threads"
CELERY_PASSTHROUGH = (
    "Any other option goes to Celery's worker unchanged, e.g. --pool prefork, --autoscale 10,2, "
    "--max-tasks-per-child 100, --prefetch-multiplier 1 (see `celery worker --help`). "
    "The pool is Celery's threads pool unless --pool says otherwise: runs mostly wait for the "
    "LLM, so one process holds many; their shell commands take turns in the host's slots "
    "(MIMIKIT_SHELL_CONCURRENCY).")


def default_pool(celery_options: Sequence[str]) -> list[str]:
    """``--pool threads`` unless the options name a pool."""
    named = any(option in ("-P", "--pool") or option.startswith(("-P", "--pool="))
                for option in celery_options)
    return [] if named else ["--pool", DEFAULT_POOL]


def celery_command(name: str, argv: list[str], quiet: bool, beat_thread: bool = False) -> int:
    """Run Celery's ``worker`` or ``beat`` command on Mimikit's app with ``argv`` (a worker
    with beat on a thread of its own, with ``beat_thread``); returns its exit status."""
    from celery.bin.base import CLIContext

    from mimikit.celery_app import app

    if beat_thread:
        from mimikit.scheduling.embedded import run_beat_in

        run_beat_in(app)
    if name == "worker":
        from celery.bin.worker import worker as command
    else:
        from celery.bin.beat import beat as command
    context = CLIContext(app=app, no_color=None, workdir=None, quiet=quiet)
    return int(command.main(args=argv, prog_name=f"celery {name}", obj=context,
                            standalone_mode=False) or 0)
