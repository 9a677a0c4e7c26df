"""The terminal side of the CLI: status, send, tasks, cancel."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from redis.exceptions import RedisError

from mimikit.agents.context import context_sections
from mimikit.agents.prompts import PromptMode, build_system_prompt
from mimikit.config import Settings
from mimikit.conversation.gate import teller_state, wake
from mimikit.conversation.input import UserInput, post_input
from mimikit.status import status
from mimikit.store.runtime import build_runtime
from mimikit.tasks.cancel import cancel_task
from mimikit.tasks.listing import list_tasks

QUIET_SECONDS = 1.5  # idle this long after the last reply: the answer is complete


def print_status(settings: Settings, as_json: bool = False) -> int:
    report = status(build_runtime(settings))
    if as_json:
        print(json.dumps(report, indent=2))
        return 0 if report["ok"] else 1
    redis = report["redis"]
    print(f"redis     {'ok' if redis['ok'] else 'DOWN'}  {redis.get('url', '')}"
          + (f"  ({redis['error']})" if redis.get("error") else ""))
    if not report["ok"]:
        return 1
    workers = report["workers"]
    print(f"workers   {len(workers)}" + "".join(
        f"\n          {w['name']}  queues={','.join(w.get('queues', []))}" for w in workers))
    print("queues    " + "  ".join(f"{q}={n}" for q, n in report["queues"].items()))
    print(f"teller    {report['teller']['state']}")
    beat = report.get("beat", {})
    print(f"beat      {'running' if beat.get('alive') else 'NOT RUNNING'}"
          f"  (last seen {beat.get('at') or 'never'}; last supervisor tick "
          f"{beat.get('lastTick') or 'never'})")
    llm = report["llm"]
    print(f"llm       {'configured' if llm['configured'] else 'NOT CONFIGURED'}  "
          f"{llm.get('baseUrl', '')} "
          + " ".join(f"{role}={model}" for role, model in llm.get("models", {}).items())
          + (f"\n          {llm['error']}" if llm.get("error") else ""))
    question = report.get("pendingQuestion")
    print(f"question  {question['question'] if question else '-'}")
    return 0


def send(settings: Settings, text: str, timeout: float = 120.0) -> int:
    """Post a user message and print the replies as they come.

    Returns once the Teller is idle and no task started for this message is still active,
    or when it asks a question (answer it in the page).

    Raises:
        pydantic.ValidationError: ``text`` is empty or longer than the API accepts.
    """
    UserInput(text=text)  # the same limits as POST /api/input, checked before anything is sent
    runtime = build_runtime(settings)
    state = runtime.state
    cursor = _latest_event(runtime)
    message = post_input(runtime, text)
    deadline, quiet_since = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        for entry_id, event, data in state.read_events(cursor, block_ms=500):
            cursor = entry_id
            if event == "message" and _show_message(json.loads(data), message.id):
                quiet_since = None
            elif event == "question" and _show_question(json.loads(data)):
                return 0
        if _busy(runtime, message.id):
            quiet_since = None
        else:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > QUIET_SECONDS:
                return 0
    print("mimikit: no answer within the timeout; see `mimikit status`", file=sys.stderr)
    return 1


def _busy(runtime: Any, trace_id: str) -> bool:
    """The Teller is queued or running, has input waiting, or this message's tasks are active."""
    if teller_state(runtime)["state"] != "idle" or runtime.state.read_inbox():
        return True
    active = runtime.state.tasks_with_status("queued", "running", "deferred")
    return any(t.traceId == trace_id and not t.is_trigger for t in active)


def _latest_event(runtime: Any) -> str:
    entries = runtime.redis.xrevrange(runtime.keys.events, count=1)
    return entries[0][0].decode() if entries else "0-0"


def _show_message(message: dict[str, Any], own_id: str) -> bool:
    if message.get("id") == own_id or message.get("role") == "user":
        return False
    prefix = {"assistant": "", "system": "[system] "}.get(message["role"], "")
    print(prefix + message["text"], flush=True)
    return True


def _show_question(data: dict[str, Any]) -> bool:
    question = data.get("question")
    if not question:
        return False
    options = question.get("options") or []
    print(f"[question] {question['question']}"
          + (f"  (options: {', '.join(options)})" if options else "")
          + "\n[question] answer it in the web page", flush=True)
    return True


def print_tasks(settings: Settings, scope: str = "all", as_json: bool = False) -> int:
    found = list_tasks(build_runtime(settings), scope, include_finished=True)
    if as_json:
        print(json.dumps(found, indent=2))
        return 0
    if not found:
        print("no tasks")
    for task in found:
        label = task.get("title") or task["prompt"]
        when = f"  next {task['nextRunAt']}" if task.get("nextRunAt") else ""
        print(f"{task['id']}  {task['status']:<8} p{task['priority']}  {task['type']:<11} "
              f"{label[:60]}{when}")
    return 0


def cancel(settings: Settings, task_id: str) -> int:
    runtime = build_runtime(settings)
    success, message = cancel_task(runtime, task_id, stop_running=True, source="user")
    print(message)
    if success:
        wake(runtime)
    return 0 if success else 1


def print_prompt(settings: Settings | None, role: str, mode: PromptMode = "minimal") -> int:
    """Print a role's system prompt; ``full`` adds this instance's memory and history.

    ``settings`` is needed (and Redis read) only in ``full`` mode.
    """
    sections = None
    if mode == "full":
        sections = _context_sections(settings) if settings is not None else None
        if sections is None:
            mode = "minimal"
    print(build_system_prompt(role, mode=mode, context_sections=sections))
    return 0


def _context_sections(settings: Settings) -> list[str] | None:
    """The context sections a run would get now, or None (with a note) when Redis is down."""
    try:
        return context_sections(build_runtime(settings), [])
    except RedisError as error:
        print(f"mimikit: cannot reach Redis ({error}); showing the minimal prompt without "
              "memory and history", file=sys.stderr)
        return None
