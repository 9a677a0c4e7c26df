"""How the Teller's inbox is shown to it: pending inputs and answers, task results (with what
a failure left unrun, and what a Planner asked), and notices."""

from __future__ import annotations

import json

from mimikit.agents.now import time_line
from mimikit.lifecycle.actions import RUN_DID, actions_of
from mimikit.memory.inject import MEMORY_HEADER
from mimikit.memory.tokenize import has_chinese
from mimikit.models import Result, Task
from mimikit.store.inbox import AnswerItem, InboxItem, InputItem, ResultItem
from mimikit.store.runtime import Runtime
from mimikit.tools.reply_checks import numbers_in
from mimikit.tools.teller_tools import asked_again, delegated_request

RESULT_CHARS = 6000
CHINESE_HINT = "(The user writes in Chinese: reply in Chinese.)"
# Said after results with nothing from the person: a small model otherwise tells the request
# again, as if the work were still to come.
REPORT_HINT = ("(Tell the user what these results say: what was done, with its facts and "
               "numbers, in the past tense.)")
# Said instead when a result failed: a small model told to say "what was done" says that it
# did it, or copies an earlier reply.
FAILURE_HINT = ("(Tell the user what failed and why: that work was not done. Say what these "
                "results say, in the past tense.)")
# A reply held to a schema begins with a Chinese character (anchored at both ends, as
# llama.cpp's grammar takes a pattern).
CHINESE_START = "^[\u4e00-\u9fff].*$"


def done_tasks(runtime: Runtime, items: list[InboxItem]) -> dict[str, Task]:
    """The tasks whose results are among ``items``, by id (read once for a pass)."""
    return {task.id: task for task in runtime.tasks.by_id(_done_ids(items))}


def done_results(runtime: Runtime, items: list[InboxItem]) -> dict[str, Result]:
    """The results among ``items``, by task id (read once for a pass)."""
    return runtime.tasks.results_by_id(_done_ids(items))


def _done_ids(items: list[InboxItem]) -> list[str]:
    return [item.taskId for item in items if isinstance(item, ResultItem)]


def worker_result_numbers(done: dict[str, Task], results: dict[str, Result]) -> set[str]:
    """The numbers the results (``results``) of the Worker tasks among ``done`` give in their
    own words."""
    return numbers_in(" ".join(json.dumps(result.result, ensure_ascii=False)
                               for task_id, result in results.items()
                               if task_id in done and done[task_id].role == "worker"))


def render_inbox(runtime: Runtime, items: list[InboxItem], done: dict[str, Task],
                 results_of: dict[str, Result]) -> str:
    """The Teller's user prompt: pending inputs, answers, task results (``done``: their
    tasks; ``results_of``: their results), notices."""
    inputs, results, notices = [], [], []
    for item in items:
        if isinstance(item, InputItem):
            inputs.append(f"- [{item.message['createdAt']}] user: {item.message['text']}")
        elif isinstance(item, AnswerItem):
            inputs.append(_render_answer(item))
        elif isinstance(item, ResultItem):
            results.append(_render_result(runtime, item.taskId, done.get(item.taskId),
                                          results_of.get(item.taskId)))
        else:
            notices.append(f"- {item.text}")
    blocks = []
    for title, lines in (("Pending inputs", inputs), ("Task results", results),
                         ("Notices", notices)):
        if lines:
            blocks.append(f"## {title}\n" + "\n".join(lines))
    chinese = writes_chinese(items)
    if inputs:  # before them ("what day is it?"): after them, a small model lost the request
        blocks.insert(0, time_line(runtime.settings, chinese=chinese))
    hint = report_hint(items)
    if hint:
        blocks.append(hint)
    if chinese:  # small models answer in English after an English prompt otherwise
        blocks.append(CHINESE_HINT)
    return "\n\n".join(blocks) or "## Pending inputs\n(none)"


def memory_by_inputs(sections: list[str], inbox: str) -> tuple[list[str], str]:
    """``sections`` without their ``## Memory`` block, and ``inbox`` with it right before its
    first heading (after the time line): what Memory recalls for the inputs is read next to
    them. Placed after the History, the 1.5B model answered "which programming language do I
    like best?" with "I'll ask you which…" though Memory said Rust, and "我喜欢喝什么茶？" with
    a reminder (9 of 12 kept facts recalled; 12 of 12 here). It changes with each message,
    too, and so no longer makes the server read again what follows it."""
    memory = [section for section in sections if section.startswith(MEMORY_HEADER)]
    if not memory:
        return sections, inbox
    heading = inbox.find("## ")
    at = heading if heading >= 0 else len(inbox)
    return [section for section in sections if section not in memory], \
        inbox[:at] + memory[0] + "\n\n" + inbox[at:]


def report_hint(items: list[InboxItem]) -> str | None:
    """The line a pass of results, with nothing from the person, ends with (None: another
    pass)."""
    if any(isinstance(item, InputItem | AnswerItem) for item in items):
        return None
    results = [item for item in items if isinstance(item, ResultItem)]
    if not results:
        return None
    return FAILURE_HINT if any(item.status == "failed" for item in results) else REPORT_HINT


def writes_chinese(items: list[InboxItem]) -> bool:
    """Whether the person's newest message (or answer) among ``items`` has Chinese in it."""
    said = [item.message["text"] for item in items if isinstance(item, InputItem)]
    said += [item.answer for item in items if isinstance(item, AnswerItem) and item.answer]
    return bool(said) and has_chinese(said[-1])


def reports_chinese(done: dict[str, Task]) -> bool:
    """Whether a task whose result is to be reported (``done``) was asked for in Chinese: a
    report alone has no message of the person's to go by (the 1.5B model reported "I used
    pnpm." to "我喜欢用什么包管理器？")."""
    return any(has_chinese(task.prompt) for task in done.values())


def _render_answer(item: AnswerItem) -> str:
    """An answer in words, not JSON: small models copy a JSON answer's keys into their calls."""
    asked = f"- Answer to your question {item.question!r}"
    if item.taskId:
        asked += f" (asked for task {item.taskId})"
    if item.source == "default":
        return f"{asked}: none in time, so its default applies: {item.answer}"
    if item.source == "timeout" or not item.answer:
        return f"{asked}: none; it timed out unanswered"
    return f"{asked}, from the user: {item.answer}"


def _render_result(runtime: Runtime, task_id: str, task: Task | None, result: Result | None
                   ) -> str:
    if task is None or result is None:
        return f"### {task_id}\n(result not found)"
    request = delegated_request(task.prompt) if task.role == "planner" else task.prompt
    label = task.title or request[:120]
    lines = [f"### {task_id} ({task.role}: {label}) — {result.status}, resultType "
             f"{result.resultType}", "```json", json.dumps(result.result, ensure_ascii=False,
                                                          indent=1)[:RESULT_CHARS], "```"]
    if result.error:
        lines.append(f"error: {result.error}")
    if task.role in ("worker", "planner"):
        did = actions_of(runtime, task_id)
        if did:
            lines.append(RUN_DID.lower() + " " + "; ".join(did))
    if result.question and asked_again(task.prompt, result.question):
        lines.append(f"it asked again what the user already answered ({result.question}): "
                     "the request was not done")
    elif result.question:
        lines.append(f"question for the user: {result.question}")
    retired = runtime.redis.get(runtime.keys.retired_by(task_id))
    if retired:
        lines.append("not run, since they waited on it: " + ", ".join(json.loads(retired)))
    if task.role == "planner":
        lines.append(f"original request: {request[:2000]}")
    return "\n".join(lines)
