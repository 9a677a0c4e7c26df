"""The Planner's tools read what real models send, or refuse it with a reason to act on."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import get_args

import pytest

from mimikit.agents.common import registry, shape_of
from mimikit.models import Task, utcnow
from mimikit.roles import WORK_LATER
from mimikit.tools.context import ToolContext
from mimikit.tools.planner_tools import ONCE_DAYS, Days, ScheduleArgs, timing_kind


@pytest.fixture
def planner(runtime):
    """Call a Planner tool the way the agent loop does: name + the model's JSON arguments."""
    task = runtime.tasks.add([Task(role="planner", prompt="plan it")])[0]
    ctx = ToolContext(runtime=runtime, role="planner", trace_id="trace-1", task=task)

    def call(name: str, **arguments):
        outcome = registry().call("planner", name, json.dumps(arguments, default=str), ctx)
        return outcome, ctx

    return call


def berlin(runtime):
    runtime.settings = runtime.settings.model_copy(update={"timezone": "Europe/Berlin"})
    return runtime


def test_a_naive_run_at_is_read_in_the_configured_time_zone(runtime, planner):
    berlin(runtime)
    when = (utcnow() + timedelta(days=2)).astimezone(runtime.settings.tz).replace(tzinfo=None)
    outcome, ctx = planner("schedule", type="scheduled", prompt="send the report",
                           runAt=when.isoformat(timespec="minutes"))
    assert outcome.ok, outcome.content
    stored = ctx.staged[0].schedule.runAt
    assert stored.utcoffset() is not None
    assert stored == when.replace(second=0, microsecond=0).replace(tzinfo=runtime.settings.tz)
    assert json.loads(outcome.content)["runAt"] == stored.isoformat()


def test_a_run_at_in_the_past_is_refused_with_the_current_time(runtime, planner):
    outcome, ctx = planner("schedule", type="scheduled", prompt="too late",
                           runAt="2020-01-01T09:00:00")
    assert not outcome.ok and "in the past" in outcome.content and "now is" in outcome.content
    assert 'for every day at 09:00, schedule it recurring with cron "0 9 * * *"' in outcome.content
    assert ctx.staged == []


def test_a_cron_is_read_in_the_configured_zone_and_its_next_runs_are_returned(runtime, planner):
    berlin(runtime)
    outcome, ctx = planner("schedule", type="recurring", prompt="standup notes",
                           cron="0 9 * * 1-5")
    assert outcome.ok, outcome.content
    about = json.loads(outcome.content)
    assert about["timezone"] == "Europe/Berlin" and len(about["nextRuns"]) == 3
    assert all(run.endswith(("+01:00", "+02:00")) and "T09:00" in run for run in about["nextRuns"])
    assert ctx.staged[0].schedule.timezone == "Europe/Berlin"


def test_a_cron_with_both_day_fields_runs_on_either_and_says_so(runtime, planner):
    outcome, _ctx = planner("schedule", type="recurring", prompt="x", cron="0 9 1 * 1")
    assert outcome.ok and "EITHER" in json.loads(outcome.content)["note"]


@pytest.mark.parametrize("cron", ["every monday at 9", "0 9 * * 1-5 *", "61 * * * *", "@reboot"])
def test_an_invalid_cron_is_refused_when_the_tool_is_called(runtime, planner, cron):
    outcome, ctx = planner("schedule", type="recurring", prompt="x", cron=cron)
    assert not outcome.ok and repr(cron) in outcome.content and "0 9 * * 1-5" in outcome.content
    assert ctx.staged == []


@pytest.mark.parametrize(("timing", "said"), [({"interval": 3600, "cron": "0 9 * * *"}, "both"),
                                               ({}, "neither")])
def test_a_recurring_schedule_needs_one_timing_and_says_which_plainly(runtime, planner, timing,
                                                                    said):
    outcome, ctx = planner("schedule", type="recurring", prompt="drink water", **timing)
    assert not outcome.ok and ctx.staged == []
    assert outcome.content == ("error: a recurring task needs exactly one of 'interval' (seconds "
                               "between runs) or 'cron' (e.g. '0 9 * * *' for every day at "
                               f"9:00); it has {said}")


@pytest.mark.parametrize(("timing", "kind"), [({"interval": "1h"}, "recurring"),
                                              ({"cron": "0 9 * * *"}, "recurring"),
                                              ({"runAt": "2099-01-01T09:00"}, "scheduled")])
def test_a_schedule_without_type_takes_the_kind_its_timing_names(runtime, planner, timing, kind):
    outcome, ctx = planner("schedule", prompt="drink water", **timing)
    assert outcome.ok, outcome.content
    assert ctx.staged[0].type == kind


def test_durations_may_be_written_the_way_models_write_them(runtime, planner):
    outcome, ctx = planner("schedule", type="recurring", prompt="poll", interval="5m",
                           timeout="PT10M")
    assert outcome.ok, outcome.content
    assert (ctx.staged[0].schedule.interval, ctx.staged[0].timeout) == (300, 600)
    outcome, _ctx = planner("schedule", type="recurring", prompt="poll", interval="often")
    assert not outcome.ok and "'often' is not a duration" in outcome.content


def test_an_absolute_path_inside_the_work_dir_is_made_relative(runtime, planner):
    inside = runtime.settings.work_dir.resolve() / "src" / "*.py"
    outcome, ctx = planner("schedule", type="conditional", prompt="lint", condition={
        "type": "file_changed", "params": {"path": str(inside)}})
    assert outcome.ok, outcome.content
    assert ctx.staged[0].condition.params["path"] == "src/*.py"


@pytest.mark.parametrize("path", ["/etc/*.conf", "../secrets/*", "src/../../x"])
def test_a_path_outside_the_work_dir_is_refused_when_the_tool_is_called(runtime, planner, path):
    condition = {"type": "and", "conditions": [
        {"type": "file_exists", "params": {"path": "ok.txt"}},
        {"type": "file_changed", "params": {"path": path}}]}
    outcome, ctx = planner("delegate", type="conditional", prompt="x", condition=condition)
    assert not outcome.ok and "outside the work directory" in outcome.content
    assert ctx.staged == []


def test_a_condition_on_an_unknown_task_id_is_refused(runtime, planner):
    outcome, _ctx = planner("delegate", type="conditional", prompt="then B",
                            condition={"type": "task_done", "params": {"taskId": "task-made-up"}})
    assert not outcome.ok and "task-made-up" in outcome.content
    assert "leave out type and condition (a oneshot task runs now)" in outcome.content
    first, _ctx = planner("delegate", prompt="A")
    a_id = json.loads(first.content)["taskId"]
    then, _ctx = planner("delegate", type="conditional", prompt="then B",
                         condition={"type": "task_done", "params": {"taskId": a_id}})
    assert then.ok, then.content


def test_history_by_time_reads_naive_times_in_the_configured_zone(runtime, planner):
    from mimikit.models import Message

    berlin(runtime)
    at = datetime(2026, 7, 1, 8, 30, tzinfo=UTC)  # 10:30 in Berlin (CEST)
    runtime.conversation.append(Message(role="user", text="summer note", createdAt=at))
    outcome, _ctx = planner("get_history_by_time", after="2026-07-01T10:00:00",
                            before="2026-07-01T11:00:00")
    assert [m["text"] for m in json.loads(outcome.content)["messages"]] == ["summer note"]


def test_delegate_and_schedule_take_a_retry_policy(runtime, planner):
    outcome, ctx = planner("delegate", prompt="download the dataset", retry={"maxAttempts": 4})
    assert outcome.ok, outcome.content
    outcome, ctx = planner("schedule", type="recurring", prompt="fetch the feed", interval=600,
                           retry={"maxAttempts": 2})
    assert outcome.ok, outcome.content
    assert [t.retry.maxAttempts for t in ctx.staged] == [4, 2]


def test_a_retry_policy_out_of_range_is_refused_with_the_field(runtime, planner):
    outcome, ctx = planner("delegate", prompt="again and again", retry={"maxAttempts": 0})
    assert not outcome.ok and "retry.maxAttempts" in outcome.content
    outcome, ctx = planner("delegate", prompt="again", retry={"attempts": 2})
    assert not outcome.ok and "maxAttempts" in outcome.content
    assert ctx.staged == []


@pytest.mark.parametrize(("timing", "cron"), [
    ({"at": "09:00", "days": "every day"}, "0 9 * * *"),
    ({"at": "7:30"}, "30 7 * * *"),
    ({"at": "18:05", "days": "monday to friday"}, "5 18 * * 1-5"),
    ({"at": "10:00", "days": "saturday and sunday"}, "0 10 * * 0,6"),
    ({"at": "08:30", "days": "monday"}, "30 8 * * 1"),
    ({"at": "09:00", "days": "every day", "cron": "0 9 * * *"}, "0 9 * * *"),  # the same twice
    ({"at": "23:59", "days": "sunday"}, "59 23 * * 0")])
def test_a_time_of_day_and_its_days_are_the_cron_they_mean(runtime, planner, timing, cron):
    outcome, ctx = planner("schedule", prompt="drink water", **timing)  # no type: recurring
    assert outcome.ok, outcome.content
    assert ctx.staged[0].type == "recurring" and ctx.staged[0].schedule.cron == cron


@pytest.mark.parametrize(("timing", "said"), [
    ({"days": "monday"}, "'days' needs 'at', the time of day as HH:MM"),
    ({"at": "09:00", "cron": "0 9 * * 1"}, "means the cron '0 9 * * *', not '0 9 * * 1': give "
                                           "either 'cron' or 'at' with 'days', not both"),
    ({"at": "9am"}, "HH:MM, 24-hour"), ({"at": "25:00"}, "not '25:00'"),
    ({"at": "09:00", "days": "daily"}, "days"),
    ({"type": "scheduled", "at": "15:00"}, "'at' and 'days' are for recurring work; once at a "
                                           "time is 'runAt'")])
def test_a_wrong_time_of_day_or_days_is_refused_naming_the_field(runtime, planner, timing, said):
    outcome, ctx = planner("schedule", prompt="drink water", **{"type": "recurring", **timing})
    assert not outcome.ok and said in outcome.content and ctx.staged == []


def test_a_preference_handed_to_the_planner_is_kept_where_memory_search_finds_it(runtime,
                                                                              planner):
    outcome, _ctx = planner("remember", content="The user manages packages with pnpm.")
    assert outcome.ok, outcome.content
    kept = runtime.settings.state_dir / json.loads(outcome.content)["path"]
    assert "pnpm" in kept.read_text(encoding="utf-8")
    found, _ctx = planner("search_memory", query="pnpm")
    assert "pnpm" in json.dumps(json.loads(found.content)["hits"][0])
    empty, _ctx = planner("remember", content=" ")
    assert not empty.ok and "content" in empty.content


def test_a_timing_of_another_type_of_schedule_is_refused_naming_both(runtime, planner):
    outcome, ctx = planner("schedule", type="recurring", prompt="Remind the user to stretch.",
                           interval=10, runAt="10m")
    assert not outcome.ok and "'runAt' is for scheduled work, not recurring" in outcome.content
    assert ctx.staged == []
    once, ctx = planner("schedule", type="scheduled", prompt="Remind the user to stretch.",
                        runAt="10m")
    assert once.ok, once.content


def test_a_delay_is_its_own_key_and_runs_once_when_it_ends(runtime, planner):
    """"in" beside "interval": held to the schema a token at a time, a small model that began
    "in" for "remind me to stretch in 10 minutes" could only end it as "interval"."""
    before = utcnow()
    outcome, ctx = planner("schedule", prompt="Remind the user to stretch.", **{"in": "10m"})
    assert outcome.ok, outcome.content
    staged = ctx.staged[0]
    assert staged.type == "scheduled"
    assert timedelta(minutes=10) <= staged.schedule.runAt - before < timedelta(minutes=10, seconds=5)
    both, ctx = planner("schedule", prompt="Stretch.", runAt="2099-01-01T09:00", **{"in": "5m"})
    assert not both.ok and "give 'in' (a delay from now" in both.content
    vague, ctx = planner("schedule", prompt="Stretch.", **{"in": "soon"})
    assert not vague.ok and "'in': 'soon' is not a duration" in vague.content


def _schedule_ways(kind: str) -> dict[tuple[str, ...], dict]:
    """The ways of giving a schedule's timing in the Planner's answers of ``kind``."""
    later = next(b for b in shape_of("planner").schema()["anyOf"]
                 if b["properties"]["kind"] == {"enum": [kind]})
    schedule = later["properties"]["schedule"]
    return {tuple(way["required"][1:]): way for way in schedule.get("anyOf", [schedule])}


DELAY, _TIME_OF_DAY, REPEATING = WORK_LATER


def test_a_schedule_held_to_a_schema_gives_one_timing_of_its_type():
    delay, at, repeating = (_schedule_ways(kind) for kind in WORK_LATER)
    assert set(delay) == {("in",)}
    assert set(at) == {("at", "days"), ("runAt",)}
    assert set(repeating) == {("interval",), ("cron",), ("condition",)}
    ways = [*delay.values(), *at.values(), *repeating.values()]
    # the type is the timing's: asked first, "in 10 minutes" was made recurring
    assert all("type" not in way["properties"] for way in ways)
    assert list(at[("runAt",)]["properties"])[:2] == ["prompt", "runAt"]
    assert ScheduleArgs(prompt="Stretch.", runAt="10m").type == "scheduled"
    assert ScheduleArgs(prompt="Drink water.", at="09:00", days="every day").type == "recurring"
    assert not {"interval", "cron", "runAt"} & set(at[("at", "days")]["properties"])
    assert all(way["additionalProperties"] is False for way in ways)


def test_work_later_is_chosen_by_the_form_its_time_is_given_in():
    """The kind is chosen before the timing, by the form the request gives its time in: told
    "once" or "repeating" first, the 1.5B model made "remind me to check the laundry in 45
    minutes" repeat, and "每天晚上10点提醒我关灯" run once today. A delay is once, an interval
    or a cron again and again, and a time of day either, as its days say."""
    delay, at, repeating = (_schedule_ways(kind) for kind in WORK_LATER)
    assert "interval" not in delay[("in",)]["properties"]
    assert "in" not in repeating[("interval",)]["properties"]
    days = at[("at", "days")]["properties"]["days"]["enum"]
    assert sorted(days) == sorted(get_args(Days))  # once or repeating, by the days chosen
    for day in days:
        assert timing_kind("days", day) == ("scheduled" if day in ONCE_DAYS else "recurring")
    in_words = ScheduleArgs(prompt="Call Bob.", **{"in": "20 minutes"})  # as the prompt has it
    assert in_words.type == "scheduled"
    assert timedelta(minutes=19) < in_words.runAt - utcnow() <= timedelta(minutes=20)
    plan = shape_of("planner")
    assert plan.calls({"kind": REPEATING, "schedule": {"prompt": "x", "interval": 60}})
    without = plan.withholding(DELAY)  # the tool stays for the other kinds
    assert without.calls({"kind": REPEATING, "schedule": {"prompt": "x", "interval": 60}})


def test_an_interval_held_to_a_schema_may_be_written_as_a_duration():
    """The prompt's "interval": "45m" can be written where the grammar holds the answer: held
    to a number, "every 30 minutes" became 30 (seconds)."""
    way = _schedule_ways(REPEATING)[("interval",)]
    written = next(b for b in way["properties"]["interval"]["anyOf"] if b["type"] == "string")
    for duration in ("45m", "2 hours", "1.5h", "PT1H", "90"):
        assert re.fullmatch(written["pattern"].strip("^$"), duration), duration
        assert ScheduleArgs(prompt="Stretch.", interval=duration).interval > 0
    assert ScheduleArgs(prompt="Stretch.", type="recurring", interval="30m").interval == 1800
    # a date is no duration: held to any text, the 1.5B model gave "every two hours" the
    # timeout "2026-11-30T14:00:00"; a schedule's timeout is its role's default
    assert not re.fullmatch(written["pattern"].strip("^$"), "2026-11-30T14:00:00")
    ways = [w for kind in WORK_LATER for w in _schedule_ways(kind).values()]
    assert all("timeout" not in w["properties"] for w in ways)


def test_a_kind_withheld_from_a_plan_leaves_its_status_or_its_call_out():
    def kinds(shape):
        return [b["properties"]["kind"]["enum"][0] for b in shape.schema()["anyOf"]]

    def calls(shape):
        return {name for b in shape.schema()["anyOf"] for name in b["properties"]}

    plan = shape_of("planner")
    no_question = plan.withholding("ask the user")
    assert "ask the user" in kinds(plan) and "ask the user" not in kinds(no_question)
    assert len(kinds(no_question)) == len(kinds(plan)) - 1
    statuses = [b["properties"]["submit_result"]["properties"]["status"]
                for b in no_question.schema()["anyOf"] if list(b["properties"])[-1:] == [
                    "submit_result"] and len(b["properties"]) == 4]
    assert {"enum": ["needs_input"]} not in statuses and {"enum": ["done"]} in statuses
    no_schedule = plan
    for kind in WORK_LATER:
        no_schedule = no_schedule.withholding(kind)
    assert "schedule" in calls(plan) and "schedule" not in calls(no_schedule)
    assert plan.calls({"schedule": {"prompt": "x"}}) and \
        no_schedule.calls({"schedule": {"prompt": "x"}}) is None


def test_a_time_of_day_today_or_tomorrow_runs_once_at_that_time_in_the_configured_zone(
        runtime, planner):
    berlin(runtime)
    outcome, ctx = planner("schedule", prompt="Remind the user to call the bank.", at="09:00",
                           days="tomorrow")  # no type: once, not every week on that day
    assert outcome.ok, outcome.content
    task = ctx.staged[0]
    tomorrow = (utcnow().astimezone(runtime.settings.tz) + timedelta(days=1)).date()
    assert task.type == "scheduled" and not hasattr(task.schedule, "cron")
    assert task.schedule.runAt == datetime(tomorrow.year, tomorrow.month, tomorrow.day, 9, 0,
                                           tzinfo=runtime.settings.tz)
    later = (utcnow().astimezone(runtime.settings.tz) + timedelta(minutes=2)).strftime("%H:%M")
    if later > "00:02":  # not across midnight: today at a time still to come
        today, ctx = planner("schedule", prompt="Stretch.", at=later, days="today")
        assert today.ok and ctx.staged[-1].schedule.runAt > utcnow()
    now = utcnow().astimezone(runtime.settings.tz)
    if (now - timedelta(hours=1)).date() == now.date():  # an hour ago was today
        past = (now - timedelta(hours=1)).strftime("%H:%M")
        gone, _ctx = planner("schedule", prompt="Stretch.", at=past, days="today")
        assert not gone.ok and "in the past (now is" in gone.content


@pytest.mark.parametrize(("timing", "said"), [
    ({"type": "recurring", "at": "09:00", "days": "tomorrow"},
     "'at' is for scheduled work, not recurring"),
    ({"days": "tomorrow"}, "'days': 'tomorrow' runs once at 'at', the time of day as HH:MM"),
    ({"at": "09:00", "days": "today", "runAt": "2h"}, "instead of 'runAt'")])
def test_a_day_that_runs_once_is_refused_with_a_recurring_type_or_another_time(
        runtime, planner, timing, said):
    outcome, ctx = planner("schedule", prompt="Remind the user to call the bank.", **timing)
    assert not outcome.ok and said in outcome.content and ctx.staged == []
