"""``mimikit send`` and ``mimikit answer``: talk to the Teller and print its replies as they come."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from mimikit.config import Settings
from mimikit.conversation.gate import teller_state
from mimikit.conversation.input import UserInput, post_input
from mimikit.conversation.question import answer_question
from mimikit.store.runtime import Runtime, build_runtime

QUIET_SECONDS = 1.5  # idle this long after the last reply: the answer is complete
ANSWER_MAX_CHARS = 4000  # the limit of POST /api/question/answer


def send(settings: Settings, text: str, timeout: float = 120.0) -> int:
    """Post a user message and print the replies as they come.

    Returns once the Teller is idle and no task started for this message is still active,
    or when it asks a question (answer it with ``mimikit answer``).

    Raises:
        pydantic.ValidationError: ``text`` is empty or longer than the API accepts.
    """
    UserInput(text=text)  # the same limits as POST /api/input, checked before anything is sent
    runtime = build_runtime(settings)
    cursor = _latest_event(runtime)
    message = post_input(runtime, text)
    return follow(runtime, cursor, message.id, timeout)


def answer(settings: Settings, text: str, wait: bool = False, timeout: float = 120.0) -> int:
    """Answer the pending question; with ``wait``, then print the replies like ``send``.

    Returns 1, with a one-line reason on stderr, when no question is pending or ``text`` is
    empty or too long.
    """
    if not text.strip() or len(text) > ANSWER_MAX_CHARS:
        print(f"mimikit: invalid answer: it must have 1 to {ANSWER_MAX_CHARS} characters",
              file=sys.stderr)
        return 1
    runtime = build_runtime(settings)
    question = runtime.conversation.question()
    cursor = _latest_event(runtime)
    if question is None or not answer_question(runtime, text):
        print("mimikit: no question is pending; see `mimikit status`, or talk to it with "
              "`mimikit send`", file=sys.stderr)
        return 1
    print(f"answered: {question.question}")
    if not wait:
        return 0
    return follow(runtime, cursor, question.traceId or "", timeout)


def follow(runtime: Runtime, cursor: str, trace_id: str, timeout: float) -> int:
    """Print the replies after event ``cursor`` until the work of ``trace_id`` is done.

    Returns 0 when it is done or a question is asked, 1 (said on stderr) after ``timeout``.
    """
    deadline, quiet_since = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        for entry_id, event, data in runtime.events.read(cursor, block_ms=500):
            cursor = entry_id
            if event == "message" and _show_message(json.loads(data), trace_id):
                quiet_since = None
            elif event == "question" and _show_question(json.loads(data)):
                return 0
        if _busy(runtime, trace_id):
            quiet_since = None
        else:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > QUIET_SECONDS:
                return 0
    print("mimikit: no answer within the timeout; see `mimikit status`", file=sys.stderr)
    return 1


def _busy(runtime: Runtime, trace_id: str) -> bool:
    """The Teller is queued or running, has input waiting, or this trace's tasks are active."""
    if teller_state(runtime)["state"] != "idle" or runtime.inbox.read():
        return True
    active = runtime.tasks.with_status("queued", "running", "deferred")
    return any(t.traceId == trace_id and not t.is_trigger for t in active)


def _latest_event(runtime: Runtime) -> str:
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
    example = options[0] if options else "your answer"
    print(f"[question] {question['question']}"
          + (f"  (options: {', '.join(options)})" if options else "")
          + f'\n[question] answer it with: mimikit answer "{example}"', flush=True)
    return True
