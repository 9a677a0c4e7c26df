"""The agent roles, declared once: everything that lists roles reads ``ROLES``.

Each role says where its runs are queued and under which Celery task name, which prompt files
make its system prompt, which tools it may call (the permission matrix of ``seeds/tools.md``),
which settings give its model, default timeout and answer length, how it reports a finished
task, and whether a plain text answer ends its run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# How a finished task of the role reaches the person (``lifecycle.notify``):
# ``plan``: a Planner result, unless its delegations report for themselves;
# ``policy``: by the task's (or its trigger's) ``notify`` setting;
# ``never``: not at all (the ``llm_eval`` verdicts are the supervisor's).
Report = Literal["none", "plan", "policy", "never"]
# How a role answers where the server holds answers to a schema (``llm.turns``): ``turn``, one
# object with a field per tool, several filled at once; ``step``, one call an answer; ``plan``,
# one call an answer, the finisher may come with it.
Shape = Literal["turn", "step", "plan"]


# Kinds of a Planner's answer that a run may withhold (``agents.planner``).
ANSWER = "answer"  # a request answered in words alone
ASK_THE_USER = "ask the user"  # a question put to the person
CANCEL_WORK = "cancel work"  # tasks or schedules canceled
# A schedule, by the form its time is given in: a delay, a time of day (once or on days), and
# again and again at an interval or on a cron.
WORK_LATER = ("work later, after a delay", "work later, at a time of day",
              "work later, repeating")


@dataclass(frozen=True)
class Kind:
    """One kind of answer a role may give where its answers are held to a schema, in the words
    its model picks it by: the tool the answer calls and, for the finisher alone, the status it
    reports. A small model chooses among a few words for what a request is better than among
    its tools' names (``llm.turns``). ``filled`` and ``empty``: the role's notes an answer of
    this kind must fill, and leave empty. ``ways``: where several kinds call one tool, the
    ways of giving its arguments each keeps (``Args.alternatives``)."""

    words: str
    tool: str
    status: str | None = None
    filled: tuple[str, ...] = ()
    empty: tuple[str, ...] = ()
    ways: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Role:
    """One agent role."""

    name: str
    title: str
    queue: str
    task_name: str
    prompt_files: tuple[str, ...]
    # its prompt where answers are held to its schema (``answer.md`` says the object's fields)
    answer_files: tuple[str, ...]
    tools: tuple[str, ...]
    timeout_setting: str
    model_setting: str | None
    report: Report
    text_ends_run: bool = False
    is_task: bool = True
    # A text answer becomes a ``text`` result once corrections did not get submit_result.
    text_is_result: bool = False
    # Its answer as one object, where the server holds answers to a schema (``llm.turns``):
    # the shape, the tools it holds (None: all), the fields every answer must give (null
    # allowed), and those it must fill (null not allowed).
    turn: Shape = "step"
    turn_tools: tuple[str, ...] | None = None
    turn_required: tuple[str, ...] = ()
    turn_filled: tuple[str, ...] = ()
    # The kinds of a ``plan`` answer, named first in it; the first kind of the finisher alone
    # is also the only status the finisher may report beside an action.
    turn_kinds: tuple[Kind, ...] = ()
    # Text fields the answer fills before anything else and the runtime does not read: what
    # the model considers before it chooses (with their own description in ``answer.md``).
    turn_notes: tuple[str, ...] = ()
    # Words that end the answer where the model writes them into the text a person reads
    # (``reply``), not shown: the runtime's own, which it copies from its prompt.
    turn_text_ends: tuple[str, ...] = ()


# How the runtime's account of a run begins (``lifecycle.actions``). The 1.5B model copied it
# into its reports, 27 s of writing on two CPU cores: a report ends where it writes it, and the
# results are told in their own words, with the account.
RUN_DID = "What its run did:"

TELLER = Role(
    name="teller", title="Teller", queue="teller", task_name="mimikit.teller",
    prompt_files=tuple(f"agents/teller/{part}.md"
                       for part in ("identity", "voice", "tools", "rules", "output")),
    answer_files=tuple(f"agents/teller/{part}.md"
                       for part in ("identity", "voice", "answer", "rules", "output")),
    tools=("reply", "delegate", "remember", "show", "ask_user", "list_tasks",
           "cancel_task", "update_backlog", "manage_trigger"),
    timeout_setting="teller_timeout", model_setting="teller_model", report="none",
    text_ends_run=True, is_task=False, turn="turn",
    # where answers are held to a schema, a turn decides four things, in this order (the
    # work first, so that what it says follows from it); the Planner does the rest. Asked
    # "what reminders do I have?", the 1.5B model said "I'll list your reminders." and
    # nothing more in every run, or named one of two: the runtime lists them (or the work
    # directory's files) where it says ``show`` (bench/README.md).
    turn_tools=("delegate", "remember", "show", "reply"),
    turn_required=("delegate", "remember", "show", "reply"), turn_filled=("show", "reply"),
    turn_text_ends=(RUN_DID,))
PLANNER = Role(
    name="planner", title="Planner", queue="planner", task_name="mimikit.planner",
    prompt_files=tuple(f"agents/planner/{part}.md"
                       for part in ("identity", "tools", "rules", "output")),
    answer_files=tuple(f"agents/planner/{part}.md" for part in ("identity", "answer")),
    tools=("delegate", "schedule", "get_recent_history", "get_history_by_time",
           "search_memory", "remember", "list_tasks", "cancel_task", "submit_result"),
    timeout_setting="planner_timeout", model_setting="planner_model", report="plan",
    text_is_result=True, turn="plan",
    turn_tools=("delegate", "schedule", "remember", "cancel_task", "list_tasks",
                "search_memory", "get_recent_history", "get_history_by_time", "submit_result"),
    # first the request's own words for what only the user knows ("my favorite color"), then
    # what History or Memory says of what it asks or needs, then what kind of request it is:
    # choosing among tool names, the 1.5B model asked for none of ten requests that needed the
    # person's choice and kept 1 of 16 stated preferences; with "unknown" and "kind" first, it
    # asked for 7 and kept 15, but asked for what Memory held ("which package manager do I
    # use?": answered 3 of 16); with "given" too, and asking only with nothing given, 15 of
    # 16 (bench/README.md).
    turn_notes=("unknown", "given"),
    # work later by the form its time is given in, chosen before its timing: told "once" or
    # "repeating" first, the 1.5B model made "remind me to check the laundry in 45 minutes"
    # repeat every 45 minutes and "每天晚上10点提醒我关灯" once today (63 of 80 replayed
    # schedules right); with a delay, a time of day whose days say once or again, and an
    # interval, 77 of 80 (bench/README.md). With one kind of a delay and an interval both, it
    # made "can you remind me to stretch in 10 minutes?" repeat every 10 minutes (4 of 10 runs)
    turn_kinds=(Kind("work now", "delegate"),
                Kind(WORK_LATER[0], "schedule", ways=(("in",),)),
                Kind(WORK_LATER[1], "schedule", ways=(("at", "days"), ("runAt",))),
                Kind(WORK_LATER[2], "schedule", ways=(("interval",), ("cron",), ("condition",))),
                Kind("keep a fact about the user", "remember"), Kind(CANCEL_WORK, "cancel_task"),
                *(Kind("look up", name) for name in ("list_tasks", "search_memory",
                                                     "get_recent_history", "get_history_by_time")),
                Kind(ANSWER, "submit_result", "done"),
                Kind(ASK_THE_USER, "submit_result", "needs_input", filled=("unknown",),
                     empty=("given",)),
                Kind("fail", "submit_result", "failed")))
WORKER = Role(
    name="worker", title="Worker", queue="worker", task_name="mimikit.worker",
    prompt_files=tuple(f"agents/worker/{part}.md"
                       for part in ("identity", "tools", "rules", "output")),
    answer_files=tuple(f"agents/worker/{part}.md" for part in ("identity", "answer", "rules")),
    tools=("shell", "read_file", "write_file", "append_file", "rename", "copy", "remove",
           "make_dir", "list_files", "submit_result"),
    timeout_setting="worker_timeout", model_setting="worker_model", report="policy",
    text_is_result=True,
    # each step first holds the last result against the task: the 1.5B model's fib.py printed
    # fib(10) alone ("55") in 5 of 9 benchmark runs without it, 4 of 11 with it (bench/README.md)
    turn_notes=("check",))
LLM_EVAL = Role(
    name="llm_eval", title="llm_eval", queue="worker", task_name="mimikit.llm_eval_batch",
    prompt_files=("llm-eval-batch.md",), answer_files=("llm-eval-batch.md",), tools=("submit_verdicts", "read_file", "list_files"),
    timeout_setting="worker_timeout", model_setting=None, report="never")

ROLES: dict[str, Role] = {role.name: role for role in (TELLER, PLANNER, WORKER, LLM_EVAL)}
TASK_ROLES: tuple[str, ...] = tuple(name for name, role in ROLES.items() if role.is_task)
CHAT_ROLES: tuple[str, ...] = ("teller", "planner", "worker")  # with a model setting of their own


def role(name: str) -> Role:
    """The role called ``name``.

    Raises:
        KeyError: No such role (the message lists the roles).
    """
    try:
        return ROLES[name]
    except KeyError:
        raise KeyError(f"unknown role {name!r}; roles: {', '.join(ROLES)}") from None
