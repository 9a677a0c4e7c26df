"""The ``mimikit`` command: up, worker, beat, web, flower, status, send, tasks, cancel, prompt."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from pydantic import ValidationError
from redis.exceptions import RedisError

from mimikit.config import Settings, load_settings
from mimikit.exceptions import MimikitError

OVERRIDES = {"port": "MIMIKIT_PORT", "state_dir": "MIMIKIT_STATE_DIR",
             "work_dir": "MIMIKIT_WORK_DIR", "host": "MIMIKIT_HOST"}


def _settings(args: argparse.Namespace) -> Settings:
    """Apply command-line overrides to the environment (children inherit them), then load."""
    for name, variable in OVERRIDES.items():
        value = getattr(args, name, None)
        if value is not None:
            os.environ[variable] = str(value)
    return load_settings()


def cmd_up(args: argparse.Namespace) -> int:
    from mimikit.launcher import run_up

    return run_up(_settings(args))


def cmd_worker(args: argparse.Namespace) -> int:
    _settings(args)
    from mimikit.celery_app import app

    argv = ["worker", "--queues", args.queues, "--concurrency", str(args.concurrency),
            "--loglevel", args.loglevel, "--hostname", args.name, "-E"]
    app.worker_main(argv)
    return 0


def cmd_beat(args: argparse.Namespace) -> int:
    _settings(args)
    from mimikit.celery_app import app

    app.start(["beat", "--loglevel", args.loglevel])
    return 0


def cmd_web(args: argparse.Namespace) -> int:
    from web import create_app
    from web.server import serve

    return serve(_settings(args), create_app, debug=args.debug)


def cmd_flower(args: argparse.Namespace) -> int:
    from mimikit.flower import run_flower

    return run_flower(_settings(args), address=args.address, port=args.flower_port)


def cmd_status(args: argparse.Namespace) -> int:
    from mimikit.console import print_status

    return print_status(_settings(args), as_json=args.json)


def cmd_send(args: argparse.Namespace) -> int:
    from mimikit.console import send

    return send(_settings(args), " ".join(args.text), timeout=args.timeout)


def cmd_tasks(args: argparse.Namespace) -> int:
    from mimikit.console import print_tasks

    return print_tasks(_settings(args), scope=args.scope, as_json=args.json)


def cmd_cancel(args: argparse.Namespace) -> int:
    from mimikit.console import cancel

    return cancel(_settings(args), args.task_id)


def cmd_prompt(args: argparse.Namespace) -> int:
    from mimikit.console import print_prompt

    # Only full mode reads this instance's history and memory: the others need no settings.
    settings = _settings(args) if args.mode == "full" else None
    return print_prompt(settings, args.role, mode=args.mode)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", help="state directory (MIMIKIT_STATE_DIR)")
    parser.add_argument("--work-dir", help="work directory (MIMIKIT_WORK_DIR)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mimikit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help_: str
            ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        _common(p)
        p.set_defaults(func=func)
        return p

    up = add("up", cmd_up, "run everything in the foreground (embedded Redis if none answers)")
    up.add_argument("--port", type=int, help="web port (MIMIKIT_PORT, default 8787)")
    worker = add("worker", cmd_worker, "run a Celery worker")
    worker.add_argument("--queues", default="teller,planner,worker,supervisor")
    worker.add_argument("--concurrency", type=int, default=None)
    worker.add_argument("--name", default="mimikit@%h")
    worker.add_argument("--loglevel", default="INFO")
    beat = add("beat", cmd_beat, "run the RedBeat scheduler (one per instance)")
    beat.add_argument("--loglevel", default="INFO")
    web = add("web", cmd_web, "serve the chat page and the API")
    web.add_argument("--host", help="bind address (MIMIKIT_HOST, default 127.0.0.1)")
    web.add_argument("--port", type=int, help="port (MIMIKIT_PORT, default 8787)")
    web.add_argument("--debug", action="store_true", help="Flask's reloading debug server")
    flower = add("flower", cmd_flower, "run Flower against the same broker")
    flower.add_argument("--address", default="127.0.0.1")
    flower.add_argument("--port", dest="flower_port", type=int, default=5555)
    status = add("status", cmd_status, "workers, queues, Teller, pending question")
    status.add_argument("--json", action="store_true")
    send = add("send", cmd_send, "post a message and print the replies as they come")
    send.add_argument("text", nargs="+")
    send.add_argument("--timeout", type=float, default=120.0)
    tasks = add("tasks", cmd_tasks, "list tasks")
    tasks.add_argument("--scope", default="all", choices=["queue", "running", "triggers", "all"])
    tasks.add_argument("--json", action="store_true")
    cancel = add("cancel", cmd_cancel, "cancel a task (also stops a running one)")
    cancel.add_argument("task_id")
    prompt = add("prompt", cmd_prompt, "print the system prompt a role gets")
    prompt.add_argument("role", choices=["teller", "planner", "worker", "llm_eval"])
    prompt.add_argument("--mode", default="minimal", choices=["full", "minimal", "none"])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "concurrency", 0) is None:
        args.concurrency = _settings(args).concurrency
    try:
        return int(args.func(args) or 0)
    except MimikitError as error:
        print(f"mimikit: {error}", file=sys.stderr)
    except RedisError as error:
        reason = str(error).rstrip(".")
        print(f"mimikit: cannot reach Redis at {_redis_url()}: {reason}; start it or run "
              "`mimikit up`", file=sys.stderr)
    except ValidationError as error:
        print(f"mimikit: {describe_validation(error)}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    return 1


def describe_validation(error: ValidationError) -> str:
    """One line naming each invalid field, e.g. ``invalid text: String should have ...``."""
    return "; ".join(
        f"invalid {'.'.join(str(part) for part in item['loc']) or 'value'}: {item['msg']}"
        for item in error.errors())


def _redis_url() -> str:
    """The configured Redis URL with any credentials hidden."""
    from mimikit.status import safe_url

    return safe_url(load_settings())


if __name__ == "__main__":
    sys.exit(main())
