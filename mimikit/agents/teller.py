"""The Teller: answers the user at once and hands real work to the Planner.

One run at a time cluster-wide (``teller_gate``); each pass handles everything in the inbox
(inputs, task results, answers, notices) and acknowledges exactly those items, by id, only
after the run.
"""

from __future__ import annotations

import json
import logging
import time

from redis.exceptions import RedisError

from mimikit.agents.common import run_role
from mimikit.agents.context import context_sections
from mimikit.agents.prompts import build_system_prompt, choose_mode
from mimikit.conversation import gate as teller_gate
from mimikit.conversation import outage
from mimikit.exceptions import LLMUnavailable
from mimikit.memory import backlog
from mimikit.models import Result, Task
from mimikit.store.identity import owner_alive
from mimikit.store.inbox import AnswerItem, InboxItem, InputItem, ResultItem
from mimikit.store.outage import when_back
from mimikit.store.runtime import Runtime
from mimikit.tools.context import ToolContext
from mimikit.tools.teller_tools import post_reply

log = logging.getLogger("mimikit.teller")
MAX_PASSES = 10
RESULT_CHARS = 6000


def run_teller(runtime: Runtime, owner: str) -> str:
    """One Teller delivery: take the lease, handle the inbox until no wake is pending."""
    if not teller_gate.acquire(runtime, owner, owner_alive):
        return "busy"
    try:
        for _ in range(MAX_PASSES):
            if not teller_gate.renew(runtime, owner) or not teller_gate.take_wake(runtime):
                break
            items = runtime.inbox.read()
            if not items:
                continue
            if not _guarded_pass(runtime, items):
                break  # the LLM is away: keep the items; the supervisor retries with backoff
            runtime.inbox.ack([item.id for item in items])
    finally:
        # Also after a Redis outage broke the run: a lease left behind would keep every other
        # Teller run out until it expired.
        again = when_back(lambda: teller_gate.release(runtime, owner), "releasing the Teller")
    if again:
        teller_gate.wake(runtime)
    return "ran"


def _guarded_pass(runtime: Runtime, items: list[InboxItem]) -> bool:
    """One pass; False when the items must stay (LLM away). A crash is reported in the chat
    instead of retrying the same items forever."""
    try:
        return teller_pass(runtime, items)
    except RedisError:
        raise  # nothing acknowledged: the items wait for the next run
    except Exception as error:
        log.exception("Teller pass failed on %d items", len(items))
        runtime.conversation.system(
            f"The assistant hit an internal error and skipped {len(items)} pending item(s): "
            f"{type(error).__name__}: {error}")
        return True


def answered_trace(items: list[InboxItem]) -> str | None:
    """The trace a pass's replies and calls belong to: the newest message the person sent (or
    answered), else the newest item's."""
    for item in reversed(items):
        if isinstance(item, InputItem | AnswerItem) and item.traceId:
            return item.traceId
    return next((item.traceId for item in reversed(items) if item.traceId), None)


def teller_pass(runtime: Runtime, items: list[InboxItem]) -> bool:
    """One Teller run over ``items``; False when the LLM could not be reached."""
    trace_id = answered_trace(items)
    ctx = ToolContext(runtime=runtime, role="teller", trace_id=trace_id)
    inputs = [item for item in items if isinstance(item, InputItem)]
    pending_texts = [item.message["text"] for item in inputs]
    sections = context_sections(runtime, pending_texts,
                                exclude_ids={item.message["id"] for item in inputs})
    sections += backlog_section(runtime)
    system = build_system_prompt("teller", choose_mode("teller", bool(sections)), sections)
    try:
        record = run_role(runtime, ctx, system, render_inbox(runtime, items),
                          runtime.settings.teller_timeout,
                          owners=("teller", *(t for t in {trace_id} if t)),
                          stream_to=lambda run, n: ReplyStream(runtime, f"{run.id}-{n}",
                                                               trace_id))
    except LLMUnavailable as error:
        runtime.events.log("llm_unavailable", role="teller", error=str(error), traceId=trace_id)
        if outage.record_failure(runtime, str(error), len(pending_texts)):
            runtime.conversation.system(
                f"The assistant cannot answer right now: {error}. Your messages are kept and "
                "will be answered when the LLM is back.", traceId=trace_id)
        return False
    outage.record_success(runtime)
    if record.status == "done" and record.finalText and not ctx.replies:
        post_reply(ctx, record.finalText.strip())
    elif record.status == "failed":
        runtime.conversation.system(f"The assistant's run failed: {record.error}",
                                    traceId=trace_id)
    return True


def backlog_section(runtime: Runtime) -> list[str]:
    """``## Backlog`` with the open items, when there are any."""
    items = [entry for entry in backlog.read(runtime.settings.state_dir) if not entry["done"]]
    if not items:
        return []
    return ["## Backlog\n" + "\n".join(f"- [ ] {entry['item']}" for entry in items)]


class ReplyStream:
    """Publishes a reply's text as it streams in: a ``reply`` event with the text so far, at
    most every ``EVERY_SECONDS`` (the page shows it growing; the stored message replaces it)."""

    EVERY_SECONDS = 0.08

    def __init__(self, runtime: Runtime, stream_id: str, trace_id: str | None) -> None:
        self.runtime, self.stream_id, self.trace_id = runtime, stream_id, trace_id
        self.text = ""
        self.sent_at = 0.0

    def __call__(self, piece: str) -> None:
        self.text += piece
        now = time.monotonic()
        if now - self.sent_at >= self.EVERY_SECONDS and self.text.strip():
            self.sent_at = now
            self.runtime.events.publish("reply", {"id": self.stream_id,
                                                  "traceId": self.trace_id, "text": self.text})


def render_inbox(runtime: Runtime, items: list[InboxItem]) -> str:
    """The Teller's user prompt: pending inputs, answers, task results, notices."""
    inputs, results, notices = [], [], []
    done_ids = [item.taskId for item in items if isinstance(item, ResultItem)]
    done_tasks = {task.id: task for task in runtime.tasks.by_id(done_ids)}
    done_results = runtime.tasks.results_by_id(done_ids)
    for item in items:
        if isinstance(item, InputItem):
            inputs.append(f"- [{item.message['createdAt']}] user: {item.message['text']}")
        elif isinstance(item, AnswerItem):
            inputs.append(f"- Answer to your question {item.question!r}: "
                          f"{json.dumps({'answer': item.answer, 'source': item.source})}")
        elif isinstance(item, ResultItem):
            results.append(_render_result(runtime, item.taskId, done_tasks.get(item.taskId),
                                          done_results.get(item.taskId)))
        else:
            notices.append(f"- {item.text}")
    blocks = []
    for title, lines in (("Pending inputs", inputs), ("Task results", results),
                         ("Notices", notices)):
        if lines:
            blocks.append(f"## {title}\n" + "\n".join(lines))
    return "\n\n".join(blocks) or "## Pending inputs\n(none)"


def _render_result(runtime: Runtime, task_id: str, task: Task | None, result: Result | None
                   ) -> str:
    if task is None or result is None:
        return f"### {task_id}\n(result not found)"
    label = task.title or task.prompt[:120]
    lines = [f"### {task_id} ({task.role}: {label}) — {result.status}, resultType "
             f"{result.resultType}", "```json", json.dumps(result.result, ensure_ascii=False,
                                                          indent=1)[:RESULT_CHARS], "```"]
    if result.error:
        lines.append(f"error: {result.error}")
    if result.question:
        lines.append(f"question for the user: {result.question}")
    retired = runtime.redis.get(runtime.keys.retired_by(task_id))
    if retired:
        lines.append("not run, since they waited on it: " + ", ".join(json.loads(retired)))
    if task.role == "planner":
        lines.append(f"original request: {task.prompt[:2000]}")
    return "\n".join(lines)
