"""The Planner: splits a request into Worker tasks and triggers, committed when it is done."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from mimikit.agents import answered, copied_prompts
from mimikit.agents.answered import Given, answered_already, remembered_answer, said_across
from mimikit.agents.common import run_role
from mimikit.agents.context import MEMORY_TOKENS, context_sections, first_request_room
from mimikit.agents.copied_prompts import copied_kind, copied_unasked, without_example_prompts
from mimikit.agents.now import time_line
from mimikit.agents.prompts import build_prompts, choose_mode
from mimikit.agents.servers import planner_view
from mimikit.agents.unasked_times import scheduled_now
from mimikit.lifecycle.actions import json_object
from mimikit.lifecycle.execution import RunControl, execute
from mimikit.llm.record import RunRecord
from mimikit.memory.inject import MEMORY_HEADER, memory_passages
from mimikit.memory.tokenize import has_chinese, tokenize
from mimikit.models import Result, Task, utcnow
from mimikit.roles import ANSWER, ASK_THE_USER, CANCEL_WORK, PLANNER, WORK_LATER
from mimikit.store.journal import RunJournal
from mimikit.store.runtime import Runtime
from mimikit.summaries import timing_words
from mimikit.tasks.listing import list_tasks
from mimikit.tokens import estimate_tokens
from mimikit.tools import task_tools
from mimikit.tools.context import ToolContext
from mimikit.tools.reply_checks import plain
from mimikit.tools.task_tools import NONE_ASKED, NONE_LINE, NOTHING_ACTIVE
from mimikit.tools.teller_tools import carries_answer, first_request, last_answer, request_parts
from mimikit.workspace.named import named_paths


def run_planner(runtime: Runtime, task_id: str, celery_id: str | None) -> str:
    """One delivery of a Planner task, whose plan may be made again: as a question, where it
    names what only the person knows and gives it in words its prompt does not hold, or in none
    of its own (``invented_given``); without the question, shown the answer, where the request,
    Memory or the current time answers what it asks, or a fact kept answers a request that is
    itself a question it handed over as work (``agents.answered``); without work for later,
    where it schedules work at the time of day it was shown as now and the request names neither
    that time nor its hour; not answering or not asking, where its answer or question is an
    example's, or its question one asked before (``copied_kind``); without a line of Active work
    whose prompt a task copies, sharing no word with the request (``copied_work``)."""

    def body(control: RunControl) -> Result:
        task = control.task
        journal = RunJournal(runtime.redis, runtime.keys, task.id)
        plan = make_plan(runtime, control, journal)
        if (invented := invented_given(plan)) is not None and not said_across(
                runtime, task.traceId, invented, plan.memory):
            runtime.events.log("given_invented", traceId=task.traceId, taskId=task.id,
                               given=invented[:300])
            journal.clear()  # its work is staged, not made: made again, as a question
            plan = make_plan(runtime, control, journal, withheld=ONLY_ASK)
        result = planner_result(task, plan.record)
        asked_before = copied_prompts.questions_asked(runtime, task.traceId)
        if (copy := copied_kind(first_request(task), plan.answer(result), result,
                                plan.system, asked_before)) is not None:
            runtime.events.log("answer_copied", traceId=task.traceId, taskId=task.id,
                               kind=copy[0], answer=copy[1][:300])
            journal.clear()  # an example's words, not its own: made again without that kind
            plan = make_plan(runtime, control, journal, withheld=(copy[0],))
            result = planner_result(task, plan.record)
        question, given = _answered(runtime, task, plan, result)
        known: tuple[str, str] | None = None
        if given is not None:
            runtime.events.log("question_not_asked", traceId=task.traceId, taskId=task.id,
                               question=question[:300], answer=given.answer,
                               source=given.source)
            journal.clear()  # made again from the start: its question or work is staged
            plan = make_plan(runtime, control, journal, NOT_ASKED.format(
                question=question, answer=given.answer, source=given.source))
            result = planner_result(task, plan.record)
            known = (f"{question} {given.answer} ({given.source})", given.answer)
        elif (at := scheduled_now(plan.record.toolCalls, plan.clock, task.prompt,
                                  plan.prompt)) is not None:
            runtime.events.log("schedule_at_now", traceId=task.traceId, taskId=task.id,
                               timeOfDay=at)
            journal.clear()  # its schedule is staged, not made: made again, for now
            plan = make_plan(runtime, control, journal, withheld=WORK_LATER)
            result = planner_result(task, plan.record)
        elif (copied := copied_work(runtime, task, plan)) is not None:
            runtime.events.log("prompt_copied", traceId=task.traceId, taskId=task.id,
                               copiedFrom=copied)
            journal.clear()  # its work is staged, not made: made again, without that line
            plan = make_plan(runtime, control, journal, left_out=(copied,))
            result = planner_result(task, plan.record)
        if result.status == "done":  # its delegations commit with the result
            staged = without_example_prompts(first_request(task), list(plan.ctx.staged),
                                             plan.system)
            control.delivery.staged = with_what_is_known(with_the_request(task, staged),
                                                         known or given_of(plan))
        return result

    return execute(runtime, task_id, celery_id, runtime.settings.planner_timeout, body).outcome


def _answered(runtime: Runtime, task: Task, plan: Plan,
              result: Result) -> tuple[str, Given | None]:
    """The question a plan asks or, where it hands over work for a request that is itself
    a question, the request; and the answer the request, Memory or the current time gives
    to it (None when they give none; for the request, what the person asked to keep: a
    copy of the chat may name a file of the work directory as it was)."""
    if result.question and ASK_THE_USER not in plan.ctx.withheld_kinds:
        return result.question, answered_already(runtime, task.traceId, task.prompt,
                                                 result.question, plan.time_line, plan.memory)
    request = first_request(task)
    if plan.ctx.staged:
        return request, remembered_answer(runtime, task.traceId, request, plan.time_line,
                                          plan.kept)
    return request, None


# Where a Planner may not ask, the answer in place of the question: told only that "the
# request, the current time or Memory gives it", the 1.5B model scheduled a daily reminder
# "to use pnpm" when asked "我喜欢用什么包管理器？"; shown the answer, it answered (4 of 4
# recorded contexts), and kept "以后记得我用 pnpm 管理包" as a fact (2 of 2).
NOT_ASKED = ('## Not to ask\n"{question}" is answered already: {answer} ({source}).\n'
             "Answer the request, or do it, with that.\n\n")


@dataclass(frozen=True)
class Plan:
    """One run of the Planner: its tools' context, its record, and what its prompt gave
    beside the request: the current time, and the lines of Memory ("Memory: ..."), and of
    them those the person asked to keep (not the chat's copies)."""

    ctx: ToolContext
    record: RunRecord
    time_line: str
    memory: list[str]
    kept: list[str]
    clock: str = ""  # the time of day it was asked at (HH:MM; its History shows it)

    @property
    def system(self) -> str:  # its system prompt ('' where its run sent nothing)
        return next((str(m.get("content")) for m in self.record.messages[:1]), "")

    @property
    def prompt(self) -> str:  # its first user message ('' where its run sent nothing)
        return next((str(m.get("content")) for m in self.record.messages[1:2]), "")

    def answer(self, result: Result) -> str:
        """What it answered in words alone ('' where it made work or did not end done)."""
        done = result.status == "done" and not self.ctx.staged
        return str(result.result.get("text") or "") if done else ""


def make_plan(runtime: Runtime, control: RunControl, journal: RunJournal,
              not_asked: str = "", withheld: tuple[str, ...] = (),
              left_out: tuple[str, ...] = ()) -> Plan:
    """Run the Planner on the task (``not_asked``: the section that says what question it may
    not ask, and what it was given in its place; ``withheld``: kinds of answer it may not
    give; ``left_out``: ids of active tasks its Active work does not show)."""
    task = control.task
    ctx = ToolContext(runtime=runtime, role="planner", trace_id=task.traceId, task=task)
    ctx.withheld_kinds = withheld
    carried, names_file = carries_answer(task.prompt), bool(named_paths(task.prompt))
    if carried or not_asked:  # asked again, it would ask the same
        ctx.withheld_kinds += (ASK_THE_USER,)
    # the person's answer was asked for to do the work (given it, the 1.5B model once answered
    # "You use vim.", an example's words); what a file holds is the work directory's to say
    if carried or names_file:
        ctx.withheld_kinds += (ANSWER,)
    asked = utcnow().astimezone(runtime.settings.tz)
    # its History shows the minute
    now = time_line(runtime.settings, minute=False, now=asked, weekday=False)
    clock = f"{asked:%H:%M}"  # of the same moment as its hour
    work = active_work(runtime, task, first_request_room(runtime, "planner") - estimate_tokens(
        f"{now}\n\n{not_asked}## User request\n{task.prompt}") - MEMORY_TOKENS, left_out)
    ctx.choices["cancel_task"] = work.choices  # an active task's id, or nothing
    # with nothing active, a file named is work on it ("删除 todo.txt": a cancel, by the 1.5B)
    if work.choices == (NOTHING_ACTIVE,) and names_file:
        ctx.withheld_kinds += (CANCEL_WORK,)
    inputs = f"{now}\n\n{work.section}{not_asked}## User request\n{task.prompt}"
    # what the user said, not what the assistant answered: a small model copies replies
    sections = context_sections(runtime, [task.prompt], roles=("user",), role="planner",
                                beside=inputs)
    memory, kept = memory_lines(sections), memory_lines(sections, said=False)
    system, user = build_prompts("planner", choose_mode("planner", bool(sections)),
                                 sections, inputs)
    system, tools = planner_view(runtime, system)  # MCP servers, where configured
    record = run_role(runtime, ctx, system, user, control.remaining(),
                      on_step=control.step, owners=(task.id,), journal=journal, tools=tools)
    return Plan(ctx, record, now, memory, kept, clock)


# Every kind of answer but a question: what a plan may not give when it must ask.
ONLY_ASK = tuple(dict.fromkeys(kind.words for kind in PLANNER.turn_kinds
                               if kind.words != ASK_THE_USER))


def invented_given(plan: Plan) -> str | None:
    """The ``given`` of a plan that names what only the person knows (``unknown``) and does
    not ask for it, where ``given`` holds words that the prompt it was shown does not (None
    otherwise, or where the prompt quotes the unknown: "add 'buy eggs' to todo.txt", "unknown":
    "buy eggs"). The 1.5B model answered "please create an empty file and name it after my
    favorite color" with ``"unknown": "my favorite color", "given": "The user uses vim."`` (an
    example's words; 2 of 2 runs), and its Worker named the file "red"; or none of the words of
    ``unknown`` in its script ("my city", "The user's favorite sport is swimming.")."""
    unknown, given, kind = plan_notes(plan)
    prompt = next((str(m["content"]) for m in plan.record.messages if m.get("role") == "user"), "")
    if not (unknown and given) or kind == ASK_THE_USER or answered.quoted_in(prompt, unknown) or \
            ASK_THE_USER in plan.ctx.withheld_kinds:
        return None
    shown, words = set(tokenize(prompt)), set(tokenize(given))
    beside = has_chinese(unknown) == has_chinese(given) and not words & set(tokenize(unknown))
    return given if beside or not words <= shown else None


class PlanNotes(NamedTuple):
    """What a plan's first answer names as only the person's to know, what it says History or
    Memory gives, and its kind; each '' when it names none."""

    unknown: str
    given: str
    kind: str


def plan_notes(plan: Plan) -> PlanNotes:
    notes = json_object(next((m.get("content") for m in plan.record.messages
                              if m.get("role") == "assistant"), None))
    return PlanNotes(*(str(notes.get(key) or "").strip() for key in PlanNotes._fields))


def given_of(plan: Plan) -> tuple[str, str] | None:
    """What a plan says History or Memory gives of what only the person knows (or None)."""
    unknown, given, _kind = plan_notes(plan)
    return (given, given) if unknown and given else None


def copied_work(runtime: Runtime, request: Task, plan: Plan) -> str | None:
    """The id of an active task whose prompt a task of ``plan`` copies word for word, where
    the request shares no word with it and the plan does not cancel it (None otherwise).
    Asked "每个工作日早上8点半提醒我打卡" beside "Remind the user to check the oven in 45
    minutes." in Active work, the 1.5B scheduled that prompt (4 of 10; none without it)."""
    made = {plain(task.prompt) for task in plan.ctx.staged}
    if not made:
        return None
    canceled = {task_tools.chosen_id(str(json_object(call.arguments).get("taskId")))
                for call in plan.record.toolCalls if call.name == "cancel_task"}
    shown = [i for i in map(task_tools.chosen_id, plan.ctx.choices.get("cancel_task", ()))
             if i not in canceled]
    asked = set(tokenize(request.prompt))
    return next((task.id for task in runtime.tasks.by_id(shown)
                 if copied_unasked(task.prompt, made, asked)), None)


def memory_lines(sections: list[str], said: bool = True) -> list[str]:
    """The lines of the ``## Memory`` section among ``sections``, each as "Memory: <text>" (the
    file it came from left out); those of the chat's copies too, unless not ``said``."""
    memory = next((section for section in sections if section.startswith(MEMORY_HEADER)), "")
    return [f"Memory: {passage}" for passage in memory_passages(memory, said)]


REQUEST_HEADING = "\n\n## The request, in the user's words\n"


def with_the_request(plan: Task, staged: list[Task]) -> list[Task]:
    """The plan's tasks, a lone Worker task run now given the request it carries out in the
    person's words (a small Planner's task tends to drop a part of it: "run it and tell me
    the output"), or, where it lost the person's answer to the plan's question, made of
    those words; several tasks each do a part, and get none."""
    task = staged[0] if len(staged) == 1 else None
    if task is None or task.role != "worker" or task.type != "oneshot":
        return staged
    answer = last_answer(plan.prompt)
    if answer and plain(answer) not in plain(task.prompt):
        # the plan's task lost the person's answer to its question ("an empty file named 'my
        # favorite color'"): the Worker gets the request, the question and the answer instead
        title = " ".join(first_request(plan).split())[:120]
        return [task.model_copy(update={"prompt": plan.prompt, "title": title})]
    parts = request_parts(plan.prompt)
    said = "\n".join(parts[1:]) or parts[0]
    if plain(said) in plain(task.prompt):
        return staged
    title = task.title or " ".join(task.prompt.split())[:120]  # what it is called stays
    return [task.model_copy(update={"prompt": task.prompt + REQUEST_HEADING + said,
                                    "title": title})]


KNOWN_HEADING = "\n\n## Known\n"


def with_what_is_known(staged: list[Task], known: tuple[str, str] | None) -> list[Task]:
    """The plan's tasks, each Worker task that lacks its answer given what is known: the
    answer found to the question the plan was not let ask ("What is your city? 北京
    (Memory)"), or what the plan said History or Memory gives of what only the person knows
    ("The user lives in Shanghai."); ``known``: the words and the answer in them. Told the
    answer, the 1.5B Planner still handed over "Create a text file named after my pet.", and
    its Worker, which sees no Memory, named the file after a pet of its own; given "The user
    lives in Shanghai.", it handed over "Create a file named after the city I live in"."""
    if known is None:
        return staged
    told, answer = known
    return [task.model_copy(update={"prompt": task.prompt + KNOWN_HEADING + told})
            if task.role == "worker" and plain(answer) not in plain(task.prompt) else task
            for task in staged]


ACTIVE_WORK_SHOWN = 20  # tasks and schedules looked at, newest first
ACTIVE_WORK_CHARS = 120  # of each one's prompt
# The lines of active work a first request holds: those that share most words with the request
# (the one to cancel or change), then the newest; the others are counted, for ``list_tasks``.
ACTIVE_WORK_TOKENS = 240
# Lines held where the request and a memory leave less (the two that share most words with
# the request): held to 70 tokens, the 1.5B model was shown the newer of two reminders (ids
# and dates are a token a digit: 45 and 31 tokens), and canceled it for the other.
ACTIVE_WORK_FEWEST_LINES = 2
CANCEL_CHOICES = 200  # active tasks a Planner's cancel may name (the newest)


@dataclass(frozen=True)
class ActiveWork:
    """The schedules and the queued or running tasks, as a Planner's first request shows them
    (``section``: '' when none), and what its cancel may name (``choices``: each active task,
    and none of them; when none is active, the one choice of nothing)."""

    section: str
    choices: tuple[str, ...]


def active_work(runtime: Runtime, current: Task, room: int = ACTIVE_WORK_TOKENS,
                left_out: tuple[str, ...] = ()) -> ActiveWork:
    """``## Active work``, a line each beginning with its id, so that a request to cancel or
    change one names it without a look-up; a cancel is held to those tasks, each chosen by
    what it does and its id (``task_tools.cancel_choices``: a small model copies an id from
    elsewhere, or one digit short). Its lines take at most ``room`` (``ACTIVE_WORK_TOKENS``),
    never fewer than ``ACTIVE_WORK_FEWEST_LINES``, and a last line offers none of them. A
    cancel lists one task or more (``Tool.many``): held to one, the 1.5B model canceled one
    reminder of two for each of 6 requests to cancel all, offered a line "all: every
    schedule above" beside the ids too; held to a list, it listed both for 6 of 6, and one for
    each of 6 single cancels, the right one for 4 (5 when held to one)."""
    ids = [summary["id"] for summary in list_tasks(runtime, "all")[:CANCEL_CHOICES]]
    tasks = runtime.tasks.by_id([i for i in ids if i != current.id])
    listed = [task for task in tasks if task.id not in left_out]
    lines = [f"- {task.id}: {task.type}{timing_words(task)}: "
             f"{' '.join(task.prompt.split())[:ACTIVE_WORK_CHARS]}"
             for task in listed[:ACTIVE_WORK_SHOWN]]
    shown = within_budget(lines, current.prompt, min(ACTIVE_WORK_TOKENS, room))
    if len(shown) < len(listed):
        shown.append(f"- and {len(listed) - len(shown)} more (list_tasks lists them all)")
    shown.append(NONE_LINE)
    section = "## Active work\n" + "\n".join(shown) + "\n\n" if lines else ""
    choices = task_tools.cancel_choices([(task.id, task.prompt) for task in tasks])
    return ActiveWork(section, (*choices, NONE_ASKED) if tasks else (NOTHING_ACTIVE,))


def within_budget(lines: list[str], request: str, budget: int = ACTIVE_WORK_TOKENS) -> list[str]:
    """Of ``lines`` (newest first), those that fit ``budget``, the ones sharing most words
    with ``request`` first (``ACTIVE_WORK_FEWEST_LINES`` whatever they cost); in order."""
    asked = set(tokenize(request))
    shared = {line: len(asked & set(tokenize(line))) for line in lines}
    chosen: set[str] = set()
    spent = 0
    for line in sorted(lines, key=lambda line: -shared[line]):  # stable: newest first
        cost = estimate_tokens(line)
        if spent + cost <= budget or len(chosen) < ACTIVE_WORK_FEWEST_LINES:
            chosen.add(line)
            spent += cost
    return [line for line in lines if line in chosen]


def planner_result(task: Task, record: RunRecord) -> Result:
    """The Planner's Result from how its run ended."""
    if record.status == "stopped" and isinstance(record.stopValue, dict):
        value: dict[str, Any] = record.stopValue
        return Result(id=task.id, attempts=task.attempts, traceId=task.traceId, **value)
    error = record.error or "the Planner ended without calling submit_result"
    return Result(id=task.id, status="failed", error=error, attempts=task.attempts,
                  traceId=task.traceId)
