"""A Worker's result told in its own words, without a model's report, where they are one as
they stand: the pass holds that result alone, done, in text; it is in the script its task was
asked in; every number it gives is one its run showed or its task gave; every file it names is
in the work directory; and its run made the calls it had to (none missing, nothing it named
absent). What its run did follows, in the runtime's words, as in every report the runtime
words. The 1.5B Teller took 21 s to retell "squares.py printed 1, 4, 9, 16, 25." with the run's
account (62 tokens, cut), and reported "backup.txt holds eggs\\nbread\\nmilk" as "it contains
eggs, bread, milk, and other items." A plan that only canceled work is told so in the
runtime's words of it (``only_canceled``), and a Planner's answer to a question it answered
itself (no work handed over, scheduled, canceled or kept) as it is. Any other result is the
model's to report, beside its run's account.
"""

from __future__ import annotations

from mimikit.lifecycle.actions import NO_CALL, absent_named, actions_of, with_account
from mimikit.llm.echoes import without_echoes
from mimikit.memory.tokenize import has_chinese
from mimikit.models import Result, Task
from mimikit.store.inbox import InboxItem, ResultItem
from mimikit.store.runtime import Runtime
from mimikit.tools.planner_tools import CANCELED
from mimikit.tools.reply_checks import numbers_in

# A Planner run that made only these calls answered the request itself ("kind": "answer"): its
# answer is the reply. Asked "我最喜欢什么运动？", the 1.5B Planner answered from Memory, and the
# Teller reported its answer as "任务已完成，你最喜欢什么运动？".
LOOK_UPS = {"submit_result", "search_memory", "list_tasks", "get_recent_history",
            "get_history_by_time"}
OWN_WORDS_CHARS = 400  # of a result told as it is: a longer one is the model's to shorten


def own_report(runtime: Runtime, items: list[InboxItem], done: dict[str, Task],
               results: dict[str, Result]) -> str | None:
    """The words that report the pass's one result by themselves, followed by what its run
    did in the runtime's words (``actions.with_account``); None where the model reports it
    (see above; ``done``: the pass's tasks, ``results``: their results)."""
    if len(items) != 1 or not isinstance(items[0], ResultItem):
        return None
    task, result = done.get(items[0].taskId), results.get(items[0].taskId)
    if task is None or result is None or result.status != "done" or result.resultType != "text":
        return None
    text = str(result.result.get("text") or "").strip()
    if not text or len(text) > OWN_WORDS_CHARS or without_echoes(text) != text or \
            has_chinese(text) != has_chinese(task.prompt):
        return None
    if task.role == "planner":
        made = calls_made(runtime, task.id)
        return text if only_canceled(text, made) or made <= LOOK_UPS else None
    if task.role != "worker":
        return None
    did = actions_of(runtime, task.id)
    if any(line.startswith(NO_CALL) for line in did) or \
            not numbers_in(text) <= numbers_in("\n".join([task.prompt, *did])):
        return None
    return None if absent_named(runtime, text) else with_account(text, did)


def calls_made(runtime: Runtime, task_id: str) -> set[str]:
    """The names of the calls a task's last run made that succeeded."""
    runs = runtime.runs.of(task_id)
    return {call.get("name") for call in (runs[-1].get("toolCalls") or []) if call.get("ok")} \
        if runs else set()


def only_canceled(text: str, made: set[str]) -> bool:
    """Whether a Planner's result is the runtime's words for the work its run canceled, and
    its run made nothing else (no work handed over or scheduled, no fact kept): the 1.5B
    Teller reported "cancel the laundry reminder" as "I canceled the laundry reminder. The
    user will be reminded to check the laundry in 45 minutes." (3 of 4 cancels in b2 with a
    sentence their results do not say)."""
    return text.startswith(CANCELED) and "cancel_task" in made and \
        not made & {"delegate", "schedule", "remember"}
