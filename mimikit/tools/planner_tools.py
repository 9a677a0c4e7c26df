"""The Planner's tools: delegate, schedule, history and memory look-ups, remember,
submit_result.

Delegations are staged in the run's context and committed only when the run ends ``done``;
everything that would fail later (a cron, a past ``runAt``, a path outside the work directory,
an unknown upstream task id) is refused here, with the reason, so the model can correct it.
Times without an offset are read in ``MIMIKIT_TIMEZONE``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo
from typing import Any, ClassVar, Literal, get_args

from pydantic import Field, field_validator, model_validator

from mimikit.atoms.tree import ConditionArg
from mimikit.durations import Moment, seconds
from mimikit.exceptions import InvalidValue, ToolError
from mimikit.llm.echoes import repeats
from mimikit.llm.registry import Registry, StopRun
from mimikit.memory.service import search_memory as search
from mimikit.models import (
    MAX_TASK_TIMEOUT_SECONDS,
    ResultBody,
    ResultType,
    RetryPolicy,
    Task,
    utcnow,
)
from mimikit.scheduling import validation
from mimikit.store import fingerprints as fingerprint
from mimikit.tasks import checks
from mimikit.tools.args import Args, Seconds, finish_with_result
from mimikit.tools.context import ToolContext
from mimikit.tools.example_copies import example_fact
from mimikit.tools.teller_tools import keep, request_parts

Notify = Literal["always", "on_change", "on_failure", "never"]
# ``notify`` and ``retry`` are explained once, in the Planner's prompt (tools.md), not here.
BUDGET_HELP = "the most all runs of this trigger may spend, in the currency of the price table"


class RetryArgs(Args):
    maxAttempts: int = Field(ge=1, le=100, description="attempts in all, the first included")


class PlannerDelegateArgs(Args):
    prompt: str = Field(min_length=1, max_length=50_000,
                        description="self-contained instructions for one Worker")
    type: Literal["oneshot", "conditional"] = "oneshot"
    condition: ConditionArg | None = Field(None, description="required when type is conditional")
    priority: int = Field(5, ge=0, le=10, description="0-10, larger runs first")
    timeout: Seconds | None = Field(None, gt=0, le=MAX_TASK_TIMEOUT_SECONDS,
                                    description="seconds; null = role default")
    title: str | None = Field(None, max_length=200)
    notify: Notify | None = None
    retry: RetryArgs | None = None


# The kind of schedule each timing field belongs to.
TIMING_KINDS = {"interval": "recurring", "cron": "recurring", "at": "recurring",
                "days": "recurring", "runAt": "scheduled", "condition": "conditional"}

TIME_OF_DAY = r"^([01]?[0-9]|2[0-3]):[0-5][0-9]$"
Days = Literal["every day", "monday to friday", "saturday and sunday", "monday", "tuesday",
               "wednesday", "thursday", "friday", "saturday", "sunday", "today", "tomorrow"]
# The days at 'at' that are one time, not a repeating one: how many days from today. Without
# them, "tomorrow at 9am" could only be a date the model works out, or a weekday, and a small
# model chose the weekday (every week).
ONCE_DAYS = {"today": 0, "tomorrow": 1}
# The cron day-of-week field of each repeating choice of ``days``, in their order: a choice
# among words is one a small model gets right where it copies the day field of an example
# cron (and "every weekday" beside "every day" was its choice for "every morning").
DAY_FIELDS = dict(zip([day for day in get_args(Days) if day not in ONCE_DAYS],
                      ("*", "1-5", "0,6", "1", "2", "3", "4", "5", "6", "0"), strict=True))


def timing_kind(field: str, days: Any) -> str:
    """The kind of schedule a timing field belongs to ('at' and 'days' are a time once where
    the days are ``ONCE_DAYS``)."""
    return "scheduled" if field in ("at", "days") and days in ONCE_DAYS else TIMING_KINDS[field]


def on_day(at: str, days_from_today: int, tz: tzinfo, now: datetime) -> datetime:
    """The time of day ``at`` (HH:MM) ``days_from_today`` days after ``now``'s date in ``tz``."""
    day = now.astimezone(tz).date() + timedelta(days=days_from_today)
    hour, minute = at.split(":")
    return datetime(day.year, day.month, day.day, int(hour), int(minute), tzinfo=tz)


class ScheduleArgs(Args):
    prompt: str = Field(min_length=1, max_length=50_000)
    type: Literal["recurring", "scheduled", "conditional"]
    at: str | None = Field(None, pattern=TIME_OF_DAY, description="time of day, HH:MM (with "
                                                                  "days)")
    days: Days | None = Field(None, description="the days it runs at 'at' (recurring), or "
                                               "'today' or 'tomorrow' (once: scheduled)")
    interval: Seconds | None = Field(None, gt=0, description="time between runs, in seconds "
                                     "or as '30m', '2h' (recurring)")
    cron: str | None = Field(None, description="five-field cron, e.g. '0 9 * * 1-5' (recurring; "
                                               "read in the configured time zone)")
    runAt: Moment | None = None
    # Once after a delay, read as the ``runAt`` it means (``_type_from_timing``: the field
    # itself stays empty, it is the schema's). A key of its own: the grammar holds
    # a key to the schema a token at a time, and the 1.5B model, beginning "in" for "remind
    # me to stretch in 10 minutes", could only finish it as "interval" (every 10 minutes).
    in_: str | None = Field(None, alias="in", description="once after this delay from now, "
                                                          "e.g. '10m' or '2h' (scheduled)")
    condition: ConditionArg | None = None
    cooldown: Seconds = Field(0, ge=0, description="seconds between firings (conditional)")
    timeout: Seconds | None = Field(None, gt=0, le=MAX_TASK_TIMEOUT_SECONDS)
    priority: int = Field(5, ge=0, le=10)
    title: str | None = Field(None, max_length=200)
    misfire: Literal["skip", "once"] = "once"
    notify: Notify | None = None
    budget: float | None = Field(None, ge=0, description=BUDGET_HELP)
    retry: RetryArgs | None = None
    # one timing each: held to no more, the 1.5B model gave "at", "days", "interval" and
    # "cron" at once for "in 10 minutes"; its type follows from it (``_type_from_timing``):
    # asked for the type first, the model chose "recurring" for "in 10 minutes" (bench/README.md)
    alternatives: ClassVar = (("at", "days"), ("interval",), ("cron",), ("in",), ("runAt",),
                              ("condition",))
    # a timeout is left to the role's default where answers are held to a schema: the 1.5B
    # model gave "every two hours" the timeout "2026-11-30T14:00:00" (a date where a duration
    # goes), then "20261130" seconds, and the plan failed on it
    held_out: ClassVar = frozenset({"type", "timeout"})

    @model_validator(mode="before")
    @classmethod
    def _type_from_timing(cls, data: Any) -> Any:
        """A call without ``type`` that names one kind of timing means that kind (models
        often leave it out when the timing says it); a delay (``in``) is the time it ends."""
        if isinstance(data, dict) and data.get("in") is not None:
            if data.get("runAt") is not None:
                raise ValueError("give 'in' (a delay from now, e.g. \"10m\") or 'runAt' (a "
                                 "time), not both")
            try:
                delay = seconds(data["in"])
            except InvalidValue as error:
                raise ValueError(f"'in': {error}") from None
            data = {**{key: value for key, value in data.items() if key != "in"},
                    "runAt": delay}
        if isinstance(data, dict) and "type" not in data:
            kinds = {timing_kind(field, data.get("days")) for field in TIMING_KINDS
                     if data.get(field) is not None}
            if len(kinds) == 1:
                return {**data, "type": kinds.pop()}
        return data

    @field_validator("at", mode="before")
    @classmethod
    def _time_of_day(cls, value: Any) -> Any:
        if isinstance(value, str) and not re.fullmatch(TIME_OF_DAY, value):
            raise ValueError(f"'at' is a time of day as HH:MM, 24-hour (e.g. \"09:00\", "
                             f"\"18:30\"), not {value!r}")
        return value

    @model_validator(mode="after")
    def _cron_from_days(self) -> ScheduleArgs:
        """``at`` and ``days`` say a daily or weekly time as words; the cron they mean."""
        if self.at is None and self.days is None:
            return self
        if self.days in ONCE_DAYS:
            if self.at is None or self.runAt is not None:
                raise ValueError(f"'days': {self.days!r} runs once at 'at', the time of day as "
                                 "HH:MM (e.g. \"09:00\"), instead of 'runAt'")
            return self  # the time it means is read in the configured zone (``_timing``)
        if self.type != "recurring":
            raise ValueError("'at' and 'days' are for recurring work; once at a time is 'runAt' "
                             "(e.g. \"2026-01-31T15:00:00\", or \"2h\" from now)")
        if self.at is None:
            raise ValueError("'days' needs 'at', the time of day as HH:MM (e.g. \"09:00\")")
        hour, minute = self.at.split(":")
        meant = f"{int(minute)} {int(hour)} * * {DAY_FIELDS[self.days or 'every day']}"
        if self.cron is not None and self.cron.split() != meant.split():
            raise ValueError(f"'at' with 'days' means the cron {meant!r}, not {self.cron!r}: "
                             "give either 'cron' or 'at' with 'days', not both")
        self.cron = meant  # a cron that says the same is no second timing
        return self

    @model_validator(mode="after")
    def _timing_of_its_type(self) -> ScheduleArgs:
        """A timing field of another type of schedule is refused (``runAt`` on recurring
        work would be dropped, and the work would repeat instead of running once)."""
        for name in TIMING_KINDS:
            kind = timing_kind(name, self.days)
            if getattr(self, name) is not None and kind != self.type:
                raise ValueError(f"'{name}' is for {kind} work, not {self.type}: give type "
                                 f"'{kind}' with it, or leave it out")
        return self


class RecentHistoryArgs(Args):
    count: int = Field(ge=1, le=200)
    offset: int = Field(0, ge=0)


class HistoryByTimeArgs(Args):
    after: datetime
    before: datetime | None = None


class SearchMemoryArgs(Args):
    query: str = Field(min_length=1, max_length=1000)
    after: datetime | None = None
    before: datetime | None = None
    limit: int = Field(5, ge=1, le=50)


class PlannerRememberArgs(Args):
    content: str = Field(min_length=1, max_length=20_000,
                         description="the fact or preference to keep, as one sentence")
    longTerm: bool = False


class PlannerResultArgs(Args):
    status: Literal["done", "needs_input", "failed"]
    resultType: ResultType = "text"
    result: ResultBody = Field(default_factory=dict)
    question: str | None = None
    error: str | None = None


def _stage(ctx: ToolContext, task: Task, **about: Any) -> dict[str, Any]:
    existing = fingerprint.active_duplicate(ctx.runtime, task, ctx.staged)
    if existing:
        return {"taskId": existing, "duplicate": True,
                "note": "an identical task is already active; use this id"}
    ctx.staged.append(task)
    return {"taskId": task.id, **about}


def _checked(ctx: ToolContext, condition: Any) -> Any:
    """``condition`` with its paths made relative; unknown upstream task ids refused."""
    try:
        return checks.checked_condition(ctx.runtime, condition, (t.id for t in ctx.staged))
    except InvalidValue as error:
        raise ToolError(str(error)) from None


def _timing(ctx: ToolContext, args: ScheduleArgs) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``schedule`` of a recurring or scheduled task, and what to tell the model of it."""
    now, run_at = utcnow(), args.runAt
    if args.days in ONCE_DAYS and args.at is not None:
        run_at = on_day(args.at, ONCE_DAYS[args.days], ctx.runtime.settings.tz, now)
    try:
        return checks.timed_schedule(ctx.runtime, args.type, now, interval=args.interval,
                                     cron=args.cron, run_at=run_at)
    except InvalidValue as error:
        raise ToolError(str(error)) from None


def servers(args: Args) -> list[str] | None:
    """The MCP servers a task's Worker gets: the ``mcp`` field, which the Planner's
    ``delegate`` and ``schedule`` have only where servers are configured (``mcp.planning``)."""
    names = getattr(args, "mcp", None)
    return list(dict.fromkeys(names)) if names else None


def _retry(args: RetryArgs | None) -> RetryPolicy | None:
    return RetryPolicy(maxAttempts=args.maxAttempts) if args is not None else None


def _task(**fields: Any) -> Task:
    try:
        return checks.built(**fields)
    except InvalidValue as error:
        raise ToolError(str(error)) from None


def _messages(found: list[Any]) -> dict[str, Any]:
    return {"messages": [{"role": m.role, "text": m.text, "createdAt": m.createdAt.isoformat()}
                         for m in found]}


def register(registry: Registry) -> None:  # noqa: C901 - one nested function per tool
    planner = {"planner"}

    @registry.tool("delegate", roles=planner, idempotent=True)
    def delegate(ctx: ToolContext, args: PlannerDelegateArgs) -> dict[str, Any]:
        """Create a Worker sub-task (oneshot now, or conditional); returns its taskId."""
        task = _task(type=args.type, prompt=args.prompt, condition=_checked(ctx, args.condition),
                     priority=args.priority, timeout=args.timeout, title=args.title,
                     notify=args.notify, retry=_retry(args.retry), mcp=servers(args),
                     traceId=ctx.trace_id, parentId=ctx.task.id if ctx.task else None)
        return _stage(ctx, task)

    @registry.tool("schedule", roles=planner, idempotent=True)
    def schedule(ctx: ToolContext, args: ScheduleArgs) -> dict[str, Any]:
        """Create a recurring (interval/cron), scheduled (runAt) or conditional trigger."""
        shape: dict[str, Any] = {}
        about: dict[str, Any] = {}
        if args.type == "conditional":
            shape["condition"] = _checked(ctx, args.condition)
        else:
            shape["schedule"], about = _timing(ctx, args)
        task = _task(type=args.type, prompt=args.prompt, cooldown=args.cooldown,
                     timeout=args.timeout, priority=args.priority, title=args.title,
                     misfire=args.misfire, notify=args.notify, budget=args.budget,
                     retry=_retry(args.retry), mcp=servers(args), traceId=ctx.trace_id,
                     parentId=ctx.task.id if ctx.task else None, **shape)
        return _stage(ctx, task, **about)

    @registry.tool("get_recent_history", roles=planner, idempotent=True, reads=True)
    def get_recent_history(ctx: ToolContext, args: RecentHistoryArgs) -> dict[str, Any]:
        """The newest messages (skip `offset`), oldest first."""
        return _messages(ctx.runtime.conversation.recent(args.count, args.offset))

    @registry.tool("get_history_by_time", roles=planner, idempotent=True, reads=True)
    def get_history_by_time(ctx: ToolContext, args: HistoryByTimeArgs) -> dict[str, Any]:
        """Messages between two ISO 8601 times (inclusive; either order)."""
        zone = ctx.runtime.settings.tz
        low = validation.local_time(args.after, zone)
        high = validation.local_time(args.before, zone) if args.before else utcnow()
        if low > high:
            low, high = high, low
        return _messages(ctx.runtime.conversation.between(low, high, limit=500))

    @registry.tool("search_memory", roles=planner, idempotent=True, reads=True)
    def search_memory(ctx: ToolContext, args: SearchMemoryArgs) -> dict[str, Any]:
        """BM25 search over memory files and project docs."""
        zone = ctx.runtime.settings.tz
        after = validation.local_time(args.after, zone) if args.after else None
        before = validation.local_time(args.before, zone) if args.before else None
        return {"hits": search(ctx.runtime.settings, args.query, after=after, before=before,
                               limit=args.limit)}

    @registry.tool("remember", roles=planner, short="content")
    def remember(ctx: ToolContext, args: PlannerRememberArgs) -> dict[str, Any]:
        """Keep a fact or preference the user states, as one sentence (longTerm: memory.md;
        else a dated memory file)."""
        fact, asked = args.content.strip(), ctx.task.prompt if ctx.task else ""
        if example_fact(asked, fact, ctx.system):
            raise ToolError(f"{fact!r} is not what the request states (its words are an "
                            f"example's): keep the fact the request gives: {asked!r}")
        return keep(ctx, fact, args.longTerm)

    @registry.tool("submit_result", roles=planner, alone=True, idempotent=True)
    def submit_result(ctx: ToolContext, args: PlannerResultArgs) -> StopRun:
        """Finish planning: done (commits your delegations), needs_input, or failed."""
        if args.status == "needs_input" and not args.question:
            raise ToolError("status needs_input requires 'question' for the user")
        if args.status == "needs_input" and args.question and ctx.task is not None and \
                repeats(args.question, request_parts(ctx.task.prompt)):
            raise ToolError("'question' only repeats the request; plan it (a simple request is "
                            "one delegate), or ask about what is really missing from it")
        if args.status == "done" and ctx.canceled:
            args = args.model_copy(update={"resultType": "text", "result": {
                "text": _canceled_text(ctx, args)}})
        return finish_with_result(args, ctx.corrected)


CANCELED = "Canceled: "  # a plan's result that canceled work begins so, in the runtime's words


def _canceled_text(ctx: ToolContext, args: PlannerResultArgs) -> str:
    """A plan's result where it canceled work: what it canceled, in the tasks' own words, then
    its words of the work it made, if any. Asked to remove a dog reminder, the 0.5B model
    canceled the oven's and wrote "The dog walking reminder is canceled.", and its report
    told the person so."""
    canceled = "; ".join(words.rstrip(".") for words in ctx.canceled)
    said = str(args.result.get("text") or "") if ctx.staged else ""
    return f"{CANCELED}{canceled}." + (f" {said}" if said else "")
