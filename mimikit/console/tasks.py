"""``mimikit tasks``, ``mimikit task show`` and ``mimikit cancel``."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from mimikit.config import Settings
from mimikit.conversation.gate import wake
from mimikit.exceptions import ConfigError, InvalidValue
from mimikit.lifecycle.cancel import cancel_task
from mimikit.scheduling import control
from mimikit.store.runtime import build_runtime
from mimikit.tasks.checks import problems
from mimikit.tasks.edit import TriggerEdit, edit, run_now
from mimikit.tasks.listing import RECENT_FINISHED, detail, list_page

LINE_CHARS = 240  # a transcript message longer than this is cut in the text view


def print_tasks(settings: Settings, scope: str = "all", as_json: bool = False,
                limit: int = RECENT_FINISHED, before: str | None = None) -> int:
    """Print the tasks of ``scope``; finished ones a page at a time (``limit``, and ``before``:
    an ISO 8601 time, naive in ``MIMIKIT_TIMEZONE``, or the task id a previous page ended with).

    Raises:
        ConfigError: ``before`` with a scope other than finished.
        NotFound: ``before`` names a task that is not kept as finished.
    """
    if before and scope != "finished":
        raise ConfigError("--before pages finished tasks: use it with --scope finished")
    page = list_page(build_runtime(settings), scope, limit=limit,
                     before=(_time(before, settings) or before) if before else None)
    if as_json:
        print(json.dumps(page.tasks, indent=2))  # the next page: --before the last id
        return 0
    if not page.tasks:
        print("no tasks")
    for task in page.tasks:
        label = task.get("title") or task["prompt"]
        when = f"  next {task['nextRunAt']}" if task.get("nextRunAt") else ""
        print(f"{task['id']}  {task['status']:<8} p{task['priority']}  {task['type']:<11} "
              f"{label[:60]}{when}")
    if page.next_before:
        print(f"older: mimikit tasks --scope finished --limit {limit} "
              f"--before {page.next_before}")
    return 0


def _time(value: str, settings: Settings) -> datetime | None:
    """``value`` as an ISO 8601 time (naive: in ``MIMIKIT_TIMEZONE``); None when it is not."""
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=settings.tz)


def show_task(settings: Settings, task_id: str, as_json: bool = False) -> int:
    """Print one task (status, result, events, run transcripts); 1 when there is none."""
    found = detail(build_runtime(settings), task_id)
    if found is None:
        print(f"mimikit: no task with id {task_id!r}; see `mimikit tasks`", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps(found, indent=2, ensure_ascii=False))
        return 0
    for line in (*_task_lines(found["task"]), *_attempt_lines(found["attempts"]),
                 *_result_lines(found["result"]), *_event_lines(found["events"]),
                 *_run_lines(found["runs"]), *_live_lines(found["live"])):
        print(line)
    return 0


def _live_lines(steps: list[dict[str, Any]]) -> list[str]:
    """The steps of the run in progress, one line each."""
    if not steps:
        return []
    lines = ["", f"running now: {len(steps)} steps"]
    for step in steps:
        if step.get("kind") == "tool":
            what = f"{step['name']}({_one_line(step.get('arguments', ''))}) -> " \
                   f"{'ok' if step.get('ok') else 'error'}: {_one_line(step.get('output', ''))}"
        else:
            what = f"LLM {step.get('model', '')}: {_one_line(step.get('text') or '')}" \
                   f" calls {', '.join(step.get('calls') or []) or 'none'}"
        lines.append(f"  step {step.get('step', '?')}  {what}")
    return lines


def _task_lines(task: dict[str, Any]) -> list[str]:
    lines = [f"{task['id']}  {task['status']}  {task['role']} {task['type']}  "
             f"priority {task['priority']}  attempts {task.get('attempts', 0)}"]
    fields = ("title", "prompt", "createdAt", "startedAt", "completedAt", "deferUntil",
              "waitingSince", "schedule", "condition", "lastTriggeredAt", "traceId", "parentId",
              "triggerId", "error")
    for name in fields:
        value = task.get(name)
        if value not in (None, ""):
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            lines.append(f"{name + ':':<16}{_indent(shown)}")
    return lines


def _attempt_lines(attempts: dict[str, Any]) -> list[str]:
    """The attempts used of the allowed, and each run: when, how it ended, why."""
    lines = ["", f"attempts: {attempts['used']} of {attempts['max']}"]
    for run in attempts["history"]:
        ended = run.get("outcome", "running")
        reason = f": {_one_line(run['reason'])}" if run.get("reason") else ""
        lines.append(f"  #{run.get('attempt', '?')}  {run.get('startedAt', '')}  "
                     f"{ended}{reason}")
    return lines


def _result_lines(result: dict[str, Any] | None) -> list[str]:
    if result is None:
        return ["", "result: none yet"]
    lines = ["", f"result: {result['status']} ({result.get('resultType', 'text')})"]
    body = result.get("result") or {}
    text = body.get("text") if set(body) == {"text"} else None
    if body:
        lines.append("  " + _indent(text or json.dumps(body, indent=2, ensure_ascii=False), 2))
    for name in ("error", "question"):
        if result.get(name):
            lines.append(f"  {name}: {_indent(str(result[name]), 2)}")
    return lines


def _event_lines(events: list[dict[str, Any]]) -> list[str]:
    lines = ["", f"events: {len(events)}"]
    for event in events:
        extra = {k: v for k, v in event.items() if k not in ("type", "at", "taskId")}
        details = "  ".join(f"{k}={_one_line(v)}" for k, v in extra.items())
        lines.append(f"  {event.get('at', '')}  {event.get('type', '?')}  {details}".rstrip())
    return lines


def _run_lines(runs: list[dict[str, Any]]) -> list[str]:
    lines = ["", f"runs: {len(runs)}"]
    for run in runs:
        usage = run.get("usage") or {}
        lines.append(f"  {run.get('id')}  {run.get('role')}  model {run.get('model')}  "
                     f"{run.get('status')}  {run.get('steps', 0)} steps  "
                     f"{usage.get('totalTokens', 0)} tokens  {run.get('durationMs', 0)} ms"
                     + (f"  error: {_one_line(run['error'])}" if run.get("error") else ""))
        lines.extend(f"    {_message_line(message)}" for message in run.get("messages", []))
    if runs:
        lines.append(f"(messages are cut at {LINE_CHARS} characters; --json shows them whole)")
    return lines


def _message_line(message: dict[str, Any]) -> str:
    """One transcript message on one line: who said it, its text, the tools it called."""
    role = message.get("role", "?")
    calls = [f"{call['function']['name']}({call['function'].get('arguments', '')})"
             for call in message.get("tool_calls") or [] if call.get("function")]
    text = " ".join(filter(None, [str(message.get("content") or ""), *calls]))
    return f"{role}: {_one_line(text)}"


def _one_line(value: Any) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= LINE_CHARS else text[:LINE_CHARS - 1] + "…"


def _indent(text: str, spaces: int = 16) -> str:
    return text.replace("\n", "\n" + " " * spaces)


def cancel(settings: Settings, task_id: str) -> int:
    runtime = build_runtime(settings)
    success, message = cancel_task(runtime, task_id, stop_running=True, source="user")
    print(message)
    if success:
        wake(runtime)
    return 0 if success else 1


def steer(settings: Settings, task_id: str, action: str) -> int:
    """Pause, resume or run now a trigger; prints what happened; 1 when it could not."""
    runtime = build_runtime(settings)
    if action == "run":
        try:
            child = run_now(runtime, task_id)
        except InvalidValue as error:
            print(f"mimikit: {error}", file=sys.stderr)
            return 1
        print(f"running now as {child.id}")
        return 0
    switch = control.pause if action == "pause" else control.resume
    args = ("paused from the command line",) if action == "pause" else ()
    success, message = switch(runtime, task_id, *args)
    print(message if success else f"mimikit: {message}", file=sys.stdout if success else sys.stderr)
    return 0 if success else 1


def edit_trigger(settings: Settings, task_id: str, changes: dict[str, Any],
                 as_json: bool = False) -> int:
    """Apply the options given to a trigger; prints the trigger's next runs (cron) or status."""
    given = {k: v for k, v in changes.items() if v is not None}
    if "condition" in given:
        try:
            given["condition"] = json.loads(given["condition"])
        except json.JSONDecodeError as error:
            print(f"mimikit: --condition is not JSON ({error.msg} at column {error.colno}); give "
                  'e.g. \'{"type": "file_changed", "params": {"path": "src/*.py"}}\'',
                  file=sys.stderr)
            return 1
    try:
        edited, about = edit(build_runtime(settings), task_id, TriggerEdit.model_validate(given))
    except ValidationError as error:
        print(f"mimikit: {problems(error)}", file=sys.stderr)
        return 1
    except InvalidValue as error:
        print(f"mimikit: {error}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps({"task": edited.dump(), **about}, indent=2, ensure_ascii=False))
    else:
        print(f"edited {edited.id}" + "".join(f"\n  next run {r}" for r in about.get("nextRuns", [])))
    return 0
