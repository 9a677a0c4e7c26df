"""The ``mimikit`` command: run an instance's processes, talk to it, look into it, check it.

Every failure is one line on stderr, ``mimikit: <what failed, and the fix>``, and exit status 1
(2 for a command line that does not parse).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, get_args

import click
from pydantic import ValidationError
from redis.exceptions import RedisError

from mimikit.config import LogLevel, Settings, load_settings
from mimikit.console.errors import describe_usage, describe_validation, fail, redis_url
from mimikit.console.processes import (
    CELERY_PASSTHROUGH,
    WORKER_DEFAULTS,
    celery_command,
    default_pool,
)
from mimikit.delivery.queues import QUEUES
from mimikit.exceptions import MimikitError
from mimikit.logs import celery_flags
from mimikit.roles import ROLES
from mimikit.tasks.listing import MAX_PAGE, RECENT_FINISHED, SCOPES

ALL_QUEUES = ",".join(QUEUES)
PROMPT_MODES = ("full", "minimal", "none")
SHELLS = ("bash", "zsh", "fish")
COMPLETE_VARIABLE = "_MIMIKIT_COMPLETE"
# Options that override a setting: exported, so the children of `mimikit up` see them too.
OVERRIDES = {"port": "MIMIKIT_PORT", "state_dir": "MIMIKIT_STATE_DIR",
             "work_dir": "MIMIKIT_WORK_DIR", "host": "MIMIKIT_HOST",
             "loglevel": "MIMIKIT_LOG_LEVEL"}


Command = Callable[..., int]


def instance_options(command: Command) -> Command:
    """Add ``--state-dir`` and ``--work-dir``; export every override option before running.

    Options named in ``OVERRIDES`` (also ``--port`` and ``--host`` where a command has them)
    are set as their ``MIMIKIT_*`` variable only when the command runs, not while parsing.
    """
    @functools.wraps(command)
    def with_overrides(**options: Any) -> int:
        for name, variable in OVERRIDES.items():
            value = options.pop(name, None)
            if value is not None:
                os.environ[variable] = str(value)
        return command(**options)

    with_overrides = click.option(
        "--work-dir", type=click.Path(file_okay=False),
        help="where Workers run their tools (overrides MIMIKIT_WORK_DIR)")(with_overrides)
    return click.option(
        "--state-dir", type=click.Path(file_okay=False),
        help="memory, logs and embedded Redis data (overrides MIMIKIT_STATE_DIR)"
    )(with_overrides)


def json_option(command: Command) -> Command:
    """Add ``--json`` (passed as ``as_json``), which every read command has."""
    return click.option("--json", "as_json", is_flag=True,
                        help="print JSON (for scripts) instead of text")(command)


def port_option(command: Command) -> Command:
    """Add ``--port``, the web port (exported as ``MIMIKIT_PORT``)."""
    return click.option("--port", type=click.IntRange(1, 65535),
                        help="web port (overrides MIMIKIT_PORT, default 8787)")(command)


class InOrder(click.Group):
    """A group that lists its commands in the order they are defined, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


def _settings() -> Settings:
    """The settings, read after the options were exported."""
    return load_settings()


@click.group(cls=InOrder, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="mimikit", prog_name="mimikit",
                      message="%(prog)s %(version)s", help="print the version and exit")
def cli() -> None:
    """Mimikit: a Teller that answers at once, a Planner that splits work into tasks, and
    Workers that run them on Celery over Redis.

    Start everything with `mimikit up`, or each process on its own (worker, beat, web).
    Settings come from MIMIKIT_* variables or a .env file.
    """


# --- processes ------------------------------------------------------------------------------


@cli.command()
@port_option
@instance_options
def up() -> int:
    """Run everything in the foreground: Redis (embedded if none answers), a worker for the
    agents, a worker for tasks, beat and web. Ctrl-C stops them all."""
    from mimikit.launcher import run_up

    return run_up(_settings())


@cli.command(epilog=CELERY_PASSTHROUGH,
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option("--queues", default=ALL_QUEUES, show_default=True,
              help="comma-separated queues to consume")
@click.option("--concurrency", type=click.IntRange(1, 256),
              help="runs at once: threads, or processes with --pool prefork "
                   "(default: MIMIKIT_CONCURRENCY)")
@click.option("--name", default="mimikit@%h", show_default=True,
              help="the worker's node name (%h: this host's name)")
@click.option("--loglevel", type=click.Choice(get_args(LogLevel), case_sensitive=False),
              help="overrides MIMIKIT_LOG_LEVEL (default INFO)")
@click.option("--beat", is_flag=True, help="also run beat, on a thread of this worker (run "
                                           "exactly one beat per instance)")
@click.argument("celery_options", nargs=-1, type=click.UNPROCESSED, metavar="[CELERY OPTIONS]")
@instance_options
def worker(queues: str, concurrency: int | None, name: str, beat: bool,
           celery_options: tuple[str, ...]) -> int:
    """Run one Celery worker (default: every queue)."""
    settings = _settings()
    argv = ["--queues", queues, "--concurrency", str(concurrency or settings.concurrency),
            "--hostname", name, "-E", *WORKER_DEFAULTS, *default_pool(celery_options),
            *celery_options]
    return celery_command("worker", argv, quiet=bool(celery_flags(settings)), beat_thread=beat)


@cli.command()
@click.option("--loglevel", type=click.Choice(get_args(LogLevel), case_sensitive=False),
              help="overrides MIMIKIT_LOG_LEVEL (default INFO)")
@instance_options
def beat() -> int:
    """Run the RedBeat scheduler (run exactly one; a second one waits as a standby)."""
    settings = _settings()
    return celery_command("beat", [], quiet=bool(celery_flags(settings)))


@cli.command()
@click.option("--host", help="bind address (overrides MIMIKIT_HOST, default 127.0.0.1)")
@port_option
@click.option("--debug", is_flag=True, help="Flask's reloading debug server (loopback only)")
@instance_options
def web(debug: bool) -> int:
    """Serve the chat page and the JSON/SSE API (gunicorn)."""
    from mimikit.web import create_app
    from mimikit.web.server import serve

    return serve(_settings(), create_app, debug=debug)


@cli.command()
@click.option("--address", default="127.0.0.1", show_default=True,
              help="bind address (beyond loopback MIMIKIT_FLOWER_BASIC_AUTH is required)")
@click.option("--port", "flower_port", type=click.IntRange(1, 65535), default=5555,
              show_default=True, help="Flower's port")
@instance_options
def flower(address: str, flower_port: int) -> int:
    """Run Flower, Celery's monitor, on the same broker."""
    from mimikit.flower import run_flower

    return run_flower(_settings(), address=address, port=flower_port)


# --- talking to an instance -------------------------------------------------------------------


@cli.command()
@json_option
@instance_options
def status(as_json: bool) -> int:
    """Show Redis, workers, queue depths, the Teller, beat, the LLM and the pending question."""
    from mimikit.console.report import print_status

    return print_status(_settings(), as_json=as_json)


@cli.command()
@click.argument("text", nargs=-1, required=True)
@click.option("--timeout", type=click.FloatRange(0, min_open=True), default=120.0,
              show_default=True, help="seconds to wait for the replies")
@instance_options
def send(text: tuple[str, ...], timeout: float) -> int:
    """Post a message and print the replies as they come.

    Stops when the work it started is done, or at a question (answer it with `mimikit answer`).
    """
    from mimikit.console.chat import send as send_message

    return send_message(_settings(), " ".join(text), timeout=timeout)


@cli.command()
@click.argument("text", nargs=-1, required=True)
@click.option("--wait", is_flag=True, help="then print the replies as they come, like `send`")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), default=120.0,
              show_default=True, help="with --wait: seconds to wait for the replies")
@instance_options
def answer(text: tuple[str, ...], wait: bool, timeout: float) -> int:
    """Answer the pending question (see `mimikit status`)."""
    from mimikit.console.chat import answer as answer_pending

    return answer_pending(_settings(), " ".join(text), wait=wait, timeout=timeout)


@cli.command()
@click.option("--scope", type=click.Choice(SCOPES), default="all", show_default=True,
              help="queue, running, triggers, finished, or all (with the newest finished)")
@click.option("--limit", type=click.IntRange(1, MAX_PAGE), default=RECENT_FINISHED,
              show_default=True, help="finished tasks to show, newest first")
@click.option("--before", metavar="TIME|ID", help="with --scope finished: those finished "
              "before an ISO 8601 time, or after the task ID a previous page ended with")
@json_option
@instance_options
def tasks(scope: str, limit: int, before: str | None, as_json: bool) -> int:
    """List tasks."""
    from mimikit.console.tasks import print_tasks

    return print_tasks(_settings(), scope=scope, as_json=as_json, limit=limit, before=before)


@cli.group()
def task() -> None:
    """Look into one task, or steer a trigger (`mimikit tasks` lists them)."""


@task.command("show")
@click.argument("task_id")
@json_option
@instance_options
def task_show(task_id: str, as_json: bool) -> int:
    """Show a task: its status, result, events and run transcripts."""
    from mimikit.console.tasks import show_task

    return show_task(_settings(), task_id, as_json=as_json)


@task.command("pause")
@click.argument("task_id")
@instance_options
def task_pause(task_id: str) -> int:
    """Pause a trigger: it keeps its schedule or condition but does not fire."""
    from mimikit.console.tasks import steer

    return steer(_settings(), task_id, "pause")


@task.command("resume")
@click.argument("task_id")
@instance_options
def task_resume(task_id: str) -> int:
    """Resume a paused trigger (from its next slot on)."""
    from mimikit.console.tasks import steer

    return steer(_settings(), task_id, "resume")


@task.command("run")
@click.argument("task_id")
@instance_options
def task_run(task_id: str) -> int:
    """Run a trigger's work once now, whatever its schedule or condition says."""
    from mimikit.console.tasks import steer

    return steer(_settings(), task_id, "run")


@task.command("edit")
@click.argument("task_id")
@click.option("--prompt", help="what the trigger's runs do")
@click.option("--title", help="a short label")
@click.option("--interval", help="seconds between runs, or e.g. 5m, 2h (recurring)")
@click.option("--cron", help="five-field cron, e.g. '0 9 * * 1-5' (recurring)")
@click.option("--run-at", "runAt", help="ISO 8601 time (scheduled; no offset: MIMIKIT_TIMEZONE)")
@click.option("--condition", help="the condition as JSON (conditional)")
@click.option("--cooldown", help="seconds between firings (conditional)")
@click.option("--budget", type=float, help="the most all runs may spend")
@click.option("--notify", type=click.Choice(["always", "on_change", "on_failure", "never"]),
              help="when you hear of a result")
@click.option("--priority", type=click.IntRange(0, 10), help="0-10, larger runs first")
@json_option
@instance_options
def task_edit(task_id: str, as_json: bool, **changes: Any) -> int:
    """Change a trigger; only the options given change (checked as the Planner's are)."""
    from mimikit.console.tasks import edit_trigger

    return edit_trigger(_settings(), task_id, changes, as_json=as_json)


@cli.command()
@click.argument("task_id")
@instance_options
def cancel(task_id: str) -> int:
    """Cancel a task (also stops a running one)."""
    from mimikit.console.tasks import cancel as cancel_one

    return cancel_one(_settings(), task_id)


@cli.command()
@click.argument("action", type=click.Choice(["list", "retry", "dismiss"]), default="list")
@click.argument("item_id", required=False, metavar="[ID]")
@click.option("--all", "include_dismissed", is_flag=True, help="list: dismissed ones too")
@json_option
@instance_options
def failed(action: str, item_id: str | None, include_dismissed: bool, as_json: bool) -> int:
    """The messages, answers and task results the Teller gave up on after their bounded
    tries: list them, `retry ID` (back in the inbox, its tries unused) or `dismiss ID` (kept,
    marked dismissed). API: GET /api/inbox/failed, POST /api/inbox/failed/ID/retry|dismiss."""
    from mimikit.console.failed import run_failed

    return run_failed(_settings(), action, item_id, include_dismissed, as_json)


@cli.command()
@click.argument("role", type=click.Choice(tuple(ROLES)))
@click.option("--mode", type=click.Choice(PROMPT_MODES), default="minimal", show_default=True,
              help="full adds this instance's memory and history (reads Redis)")
@instance_options
def prompt(role: str, mode: str) -> int:
    """Print the exact system prompt a role gets."""
    from mimikit.console.prompt import print_prompt

    # Only full mode reads this instance's history and memory: the others need no settings.
    settings = _settings() if mode == "full" else None
    return print_prompt(settings, role, mode=mode)  # type: ignore[arg-type]


@cli.command()
@json_option
@instance_options
def doctor(as_json: bool) -> int:
    """Check Redis and its persistence, workers per queue, beat, the LLM and its models, the
    state dir and clocks; each problem comes with its fix. Exit 1 when a check fails."""
    from mimikit.console.checkup import print_doctor

    return print_doctor(_settings(), as_json=as_json)


@cli.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> int:
    """Print the shell completion script.

    \b
    bash: echo 'eval "$(mimikit completion bash)"' >> ~/.bashrc
    zsh:  echo 'eval "$(mimikit completion zsh)"' >> ~/.zshrc
    fish: mimikit completion fish > ~/.config/fish/completions/mimikit.fish
    """
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    assert completer is not None  # every name in SHELLS is one of click's
    click.echo(completer(cli, {}, "mimikit", COMPLETE_VARIABLE).source())
    return 0


# --- running the command ----------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mimikit ARGV``; returns the exit status (errors are one line on stderr)."""
    try:
        return int(cli.main(args=list(argv) if argv is not None else None, prog_name="mimikit",
                            complete_var=COMPLETE_VARIABLE, standalone_mode=False) or 0)
    except click.exceptions.NoArgsIsHelpError as error:
        error.show()  # `mimikit` alone: the help, as click shows it
    except click.UsageError as error:
        fail(describe_usage(error))
    except click.ClickException as error:
        fail(error.format_message())
    except MimikitError as error:
        fail(str(error))
    except RedisError as error:
        reason = str(error).rstrip(".")
        fail(f"cannot reach Redis at {redis_url()}: {reason}; start it or run `mimikit up`")
    except ValidationError as error:
        fail(describe_validation(error))
    except (click.Abort, KeyboardInterrupt):
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
