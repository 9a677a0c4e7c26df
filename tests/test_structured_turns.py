"""Answers held to a schema, on the real stack, with the scripted server listing its models as
llama.cpp's server does (a kind known to hold answers to a JSON schema): each role's step is
one request whose answer parses by construction; what a server shows about itself is learned
and kept; a server that refuses the schema, or ignores it, is asked the native way."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from typing import get_args

import pytest
from agent_helpers import history, post_input, wait_history
from llm_server import error, streamed, text, tool_call, turn, with_usage
from processes import wait_for

from mimikit.agents.inbox_view import FAILURE_HINT, REPORT_HINT
from mimikit.conversation.question import answer_question
from mimikit.lifecycle.submit import submit
from mimikit.models import IntervalSchedule, Message, RunAtSchedule, Task, TaskStatus
from mimikit.roles import WORK_LATER
from mimikit.tools.task_tools import NONE_ASKED, NOTHING_ACTIVE

MODELS = ("teller", "planner", "worker")

AT_A_TIME = WORK_LATER[1]  # a schedule's kind where it is given a time of day


def _schema(body: dict) -> dict:
    return body["response_format"]["json_schema"]["schema"]


def _replies(stack) -> list[str]:
    return [t for r, t in history(stack) if r == "assistant"]


def _notes_task(llm) -> None:
    """"create notes.txt saying hello" handed over, planned and written in one Worker run,
    whose result gives a number the run did not show (the line's): the Teller reports it
    (``agents.own_words``)."""
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll create notes.txt."))
    llm.script("planner", turn(delegate={"prompt": "Create notes.txt containing hello."},
                               submit_result={"status": "done",
                                              "result": {"text": "A worker will create it."}}))
    llm.script("worker", turn(write_file={"path": "notes.txt", "content": "hello"}),
               turn(submit_result={"status": "done", "result": {"text": NOTES_RESULT}}))


NOTES_RESULT = "notes.txt: 5 bytes, 1 line"


def test_a_teller_turn_is_one_object_that_hands_over_the_persons_words(llamacpp, stack, llm):
    _notes_task(llm)
    llm.default("teller", turn(reply="notes.txt is written: 5 bytes."))
    post_input(stack, "create notes.txt saying hello")
    wait_history(stack, lambda h: ("assistant", "notes.txt is written: 5 bytes.") in h,
                 message="the report")
    first = llm.requests_for("teller")[0]
    assert "tools" not in first and list(_schema(first)["properties"]) == [
        "delegate", "remember", "show", "reply"]
    planner = next(t for t in stack.tasks.with_status("done") if t.role == "planner")
    assert planner.prompt == "create notes.txt saying hello"  # the person's own words
    assert (stack.settings.work_dir / "notes.txt").read_text() == "hello"
    assert [len(llm.requests_for(m)) for m in MODELS] == [2, 1, 2]
    report = llm.requests_for("teller")[1]
    assert list(_schema(report)["properties"]) == ["reply"]  # a result: only to report
    assert "what its run did: wrote notes.txt (5 bytes)" in report["messages"][1]["content"]
    assert _replies(stack) == ["I'll create notes.txt.", "notes.txt is written: 5 bytes."]
    shown = report["messages"][1]["content"]  # the history, as the next turn will show it
    assert shown.startswith("## History") and "user: create notes.txt saying hello" in shown
    llm.script("teller", turn(delegate=False, remember=False, reply="Yes, 5 bytes."))
    post_input(stack, "is it written?")
    wait_history(stack, lambda h: ("assistant", "Yes, 5 bytes.") in h, message="the next reply")
    after = llm.requests_for("teller")[2]["messages"]
    assert _schema(llm.requests_for("teller")[2])["properties"]["delegate"] == {
        "type": "boolean"}  # a message naming no file may be answered in words
    assert after[0] == report["messages"][0]  # the same system prompt, and the same history:
    assert after[1]["content"].startswith(shown.split("\n\n")[0])  # a server's cache holds


def test_a_report_ends_where_it_begins_to_copy_the_account_of_the_run(llamacpp, stack, llm):
    """The 1.5B model wrote "What its run did: wrote evens.py (39 bytes): ..." after its
    report, 27 s of writing on two CPU cores: the answer ends there, the rest unread, and the
    results are told in their own words, with the account in the runtime's."""
    _notes_task(llm)
    copied = "what its run did: wrote notes.txt (5 bytes)" + "; wrote notes.txt" * 40
    llm.default("teller", streamed(turn(reply="notes.txt holds 5 bytes. " + copied.capitalize()),
                                   0.02, chunk_chars=6))
    post_input(stack, "create notes.txt saying hello")
    wait_history(stack, lambda h: len([r for r, _ in h if r == "assistant"]) >= 2,
                 message="the report")
    time.sleep(1.0)  # a second report would come now
    assert _replies(stack) == ["I'll create notes.txt.", 'notes.txt: 5 bytes, 1 line. What its run '
                               'did: wrote notes.txt (5 bytes): "hello"']
    assert len(llm.requests_for("teller")) == 2


def test_a_reply_beside_work_handed_over_tells_no_result_before_the_work_ran(llamacpp, stack,
                                                                            llm):
    llm.script("teller", turn(delegate=True, remember=False,
                              reply="Sure, I'll write fox.txt. The file has 13 bytes."),
               turn(delegate=True, remember=False, reply="It has 3 lines."))
    llm.default("planner", turn(submit_result={"status": "done", "result": {"text": "ok"}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, "write 'the quick brown fox' into fox.txt and tell me its size")
    wait_history(stack, lambda h: ("assistant", "Sure, I'll write fox.txt.") in h,
                 message="the reply without a size nothing measured")
    post_input(stack, "count the lines of the 2 files")
    wait_history(stack, lambda h: ("assistant", "On it: count the lines of the 2 files") in h,
                 message="what was handed over, for a reply that only told a result")
    assert not [r for r in _replies(stack) if "13" in r or "3 lines" in r]


def test_what_was_handed_over_is_said_in_the_language_it_was_asked_in(llamacpp, stack, llm):
    # the sentence with a number nothing measured, and a piece of it said again (the 0.5B's
    # reply said the prompt's time line until its loop was cut, and "今天是" was left)
    llm.script("teller", turn(delegate=True, remember=False, reply="它有 3 行。它有"))
    llm.default("planner", turn(submit_result={"status": "done", "result": {"text": "ok"}}))
    llm.default("teller", turn(reply="完成。"))
    post_input(stack, "数一下 fox.txt 有几行")
    wait_history(stack, lambda h: ("assistant", "好的，这就去办：数一下 fox.txt 有几行") in h,
                 message="what was handed over, in the language it was asked in")
    assert not [r for r in _replies(stack) if "3" in r or "它有" in r]


def _cancel_values(schema: dict) -> list[dict]:
    """What the ``cancel_task`` of each branch of a Planner's schema may hold."""
    return [branch["properties"]["cancel_task"] for branch in schema["anyOf"]
            if "cancel_task" in branch["properties"]]


def test_a_cancel_is_held_to_active_tasks_and_its_report_names_the_one_canceled(
        llamacpp, stack, llm):
    """A small model copies an id from elsewhere in its prompt, or one digit short: its cancel
    may only name an active task. It may still name the wrong one: the report says which, and
    the plan's words of what it canceled are not passed on (the 0.5B model canceled the oven
    reminder for a dog's and said the dog's was)."""
    from scheduling_helpers import add_trigger

    every_day = IntervalSchedule(interval=86_400)
    water = add_trigger(stack, type="recurring", schedule=every_day,
                        prompt="Remind the user to drink water.")
    wrong = add_trigger(stack, type="recurring", schedule=every_day,
                        prompt="Remind the user to use pnpm.")
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll delete it."))
    llm.script("planner", turn(cancel_task=wrong.id,  # the wrong one, as small models do
                               submit_result={"status": "done", "result": {
                                   "text": "The drink water reminder is canceled."}}))
    post_input(stack, "delete my drink water reminder")
    told = wait_history(stack, lambda h: ("assistant", "Canceled: Remind the user to use pnpm.")
                        in h, message="the report, in the runtime's words")
    assert stack.tasks.require(wrong.id).status == "canceled"
    assert stack.tasks.require(water.id).status != "canceled"
    [allowed] = _cancel_values(_schema(llm.requests_for("planner")[0]))
    assert allowed["type"] == "array" and allowed["minItems"] == 1
    # each chosen by what it does ("Remind the user to" said by both is left out) and its id
    assert sorted(allowed["items"]["enum"]) == sorted([
        f"drink water ({water.id})", f"use pnpm ({wrong.id})", NONE_ASKED])
    # what the Planner's run did, not what it said it did, and no model's words of it
    assert not any("drink water reminder is canceled" in said for _role, said in told)
    assert len(llm.requests_for("teller")) == 1


def _planned_cancel(stack, llm, request: str, choice: str | list[str], planned: str,
                    report: str) -> str:
    """``request`` handed over, planned as a cancel of ``choice`` said done as ``planned``, and
    told in words that begin with ``report`` (the model's report where it is asked for one, or
    the runtime's words of what was canceled: ``agents.own_words``); returns what was said."""
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll cancel it."))
    llm.script("planner", turn(unknown="", given="", kind="cancel work", cancel_task=choice,
                               submit_result={"status": "done", "result": {"text": planned}}))
    llm.default("teller", turn(reply=report))
    post_input(stack, request)
    told = wait_history(stack, lambda h: any(role == "assistant" and said.startswith(report)
                                             for role, said in h), message="the report")
    return [said for role, said in told if role == "assistant"][-1]


def test_a_cancel_chosen_by_what_the_task_does_cancels_that_task(llamacpp, stack, llm):
    """Held to bare ids, the 1.5B model asked "I don't need the water reminder anymore" beside
    a water and a stretch reminder canceled the stretch one; each choice now says what its
    task does, and the one chosen is canceled by its id."""
    from scheduling_helpers import add_trigger

    every_day = IntervalSchedule(interval=86_400)
    water = add_trigger(stack, type="recurring", schedule=every_day,
                        prompt="Remind the user to drink water.")
    stretch = add_trigger(stack, type="scheduled", schedule=RunAtSchedule(
        runAt=datetime(2099, 1, 1, 9, tzinfo=UTC)), prompt="Remind the user to stretch.")
    told = _planned_cancel(stack, llm, "I don't need the water reminder anymore",
                           [f"drink water ({water.id})"], "Canceled.", "Canceled: ")
    assert told == "Canceled: Remind the user to drink water."  # the task's own words
    assert stack.tasks.require(water.id).status == "canceled"
    assert stack.tasks.require(stretch.id).status != "canceled"
    [allowed] = _cancel_values(_schema(llm.requests_for("planner")[0]))
    assert f"stretch ({stretch.id})" in allowed["items"]["enum"]
    assert len(llm.requests_for("teller")) == 1  # no model's words of it


def test_cancel_choices_leave_out_only_the_words_every_task_begins_with():
    from mimikit.tools.task_tools import cancel_choices, chosen_id

    assert cancel_choices([("task-a", "Remind the user to drink water.")]) == [
        "Remind the user to drink water (task-a)"]
    choices = cancel_choices([("task-a", "Remind the user to drink water."),
                              ("task-b", "Remind  the user to stretch."),
                              ("task-c", "Remind the user to")])
    assert choices == ["drink water (task-a)", "stretch (task-b)",
                       "Remind the user to (task-c)"]
    assert [chosen_id(choice) for choice in choices] == ["task-a", "task-b", "task-c"]
    assert chosen_id("task-a") == "task-a" and chosen_id("none") == "none"


def test_a_cancel_that_lists_every_schedule_cancels_them_all_and_leaves_other_work(
        llamacpp, stack, llm):
    """Held to one id, the 1.5B model canceled one reminder of two for "cancel all my
    reminders"; a cancel lists one id or more, a call each."""
    from scheduling_helpers import add_trigger

    every_day = IntervalSchedule(interval=86_400)
    water = add_trigger(stack, type="recurring", schedule=every_day,
                        prompt="Remind the user to drink water.")
    bank = add_trigger(stack, type="scheduled", schedule=RunAtSchedule(
        runAt=datetime(2099, 1, 1, 9, tzinfo=UTC)), prompt="Remind the user to call the bank.")
    other = add_trigger(stack, type="scheduled", schedule=RunAtSchedule(
        runAt=datetime(2099, 1, 2, 9, tzinfo=UTC)), prompt="Remind the user to buy stamps.")
    told = _planned_cancel(stack, llm, "cancel the water and the bank reminders",
                           [NONE_ASKED, f"call the bank ({bank.id})", f"drink water ({water.id})",
                            f"drink water ({water.id})"], "Both canceled.",
                           "Canceled: ")  # "none" beside ids names nothing more
    assert {stack.tasks.require(t.id).status for t in (water, bank)} == {"canceled"}
    assert stack.tasks.require(other.id).status != "canceled"
    shown = llm.requests_for("planner")[0]["messages"][1]["content"]
    assert shown.split("## Active work\n")[1].split("\n\n")[0].splitlines()[-1] == \
        f"- {NONE_ASKED}: none of the above is the one asked for"
    assert sorted(told.removeprefix("Canceled: ").removesuffix(".").split("; ")) == [
        "Remind the user to call the bank", "Remind the user to drink water"]  # water once
    assert "Nothing was canceled" not in told


def test_a_cancel_of_none_of_the_active_tasks_cancels_nothing_and_says_so(llamacpp, stack,
                                                                           llm):
    """Held to the active ids, the 0.5B model asked to remove a dog reminder that did not
    exist canceled the one that did (the oven's), and the person was told the dog's was."""
    from scheduling_helpers import add_trigger

    from mimikit.tools.task_tools import NONE_CANCELED

    oven = add_trigger(stack, type="scheduled", schedule=RunAtSchedule(
        runAt=datetime(2099, 1, 1, 9, tzinfo=UTC)), prompt="Remind the user to check the oven.")
    _planned_cancel(stack, llm, "remove the dog walking reminder", NONE_ASKED,
                    "The dog walking reminder is canceled.", "There is no dog reminder.")
    assert stack.tasks.require(oven.id).status != "canceled"
    [allowed] = _cancel_values(_schema(llm.requests_for("planner")[0]))
    assert allowed["items"]["enum"] == [f"Remind the user to check the oven ({oven.id})",
                                        NONE_ASKED]
    plan = next(t for t in stack.tasks.with_status("done") if t.role == "planner")
    assert stack.tasks.result(plan.id).result == {"text": NONE_CANCELED}
    report = llm.requests_for("teller")[1]["messages"][1]["content"]
    assert NONE_CANCELED in report and "The dog walking reminder is canceled." not in report


def test_a_cancel_with_no_active_work_says_nothing_was_canceled(llamacpp, stack, llm):
    """With nothing active, its one choice is "nothing": the plan ends saying so, in one
    request (told that a cancel failed, a small model schedules "Cancel the water reminder"
    and reports it canceled)."""
    from mimikit.tools.task_tools import NOTHING_ACTIVE, NOTHING_CANCELED

    _planned_cancel(stack, llm, "cancel the water reminder", NOTHING_ACTIVE, "It is canceled.",
                    "There was no reminder to cancel.")
    [asked] = llm.requests_for("planner")
    assert "## Active work" not in asked["messages"][1]["content"]
    assert [value["items"]["enum"] for value in _cancel_values(_schema(asked))] == [
        [NOTHING_ACTIVE]]
    plan = next(t for t in stack.tasks.with_status("done") if t.role == "planner")
    assert stack.tasks.result(plan.id).result == {"text": NOTHING_CANCELED}
    report = llm.requests_for("teller")[1]["messages"][1]["content"]
    assert NOTHING_CANCELED in report and "It is canceled." not in report
    assert "canceled task-" not in report and f"canceled {NOTHING_ACTIVE}" not in report


def test_with_no_active_work_a_request_naming_a_file_is_not_planned_as_a_cancel(
        llamacpp, stack, llm):
    """Once its reminders were canceled, the 1.5B model planned "删除 todo.txt" as a cancel
    of nothing (2 of 3 runs): with nothing active, a request naming a file is work on it."""
    (stack.settings.work_dir / "todo.txt").write_text("buy eggs\n", encoding="utf-8")
    llm.script("teller", turn(delegate=True, remember=False, reply="好的，我来删除 todo.txt。"))
    llm.script("planner", turn(unknown="", given="", kind="work now", delegate={
        "prompt": "Delete todo.txt."}, submit_result={
        "status": "done", "result": {"text": "A worker will delete todo.txt."}}))
    llm.script("worker", turn(check="", remove={"path": "todo.txt"}),
               turn(check="", submit_result={"status": "done",
                                             "result": {"text": "todo.txt is deleted."}}))
    llm.default("teller", turn(reply="todo.txt 已删除。"))
    post_input(stack, "删除 todo.txt")
    wait_history(stack, lambda h: ("assistant", "todo.txt 已删除。") in h, message="the report")
    assert not (stack.settings.work_dir / "todo.txt").exists()
    kinds = [b["properties"]["kind"]["enum"][0]
             for b in _schema(llm.requests_for("planner")[0])["anyOf"]]
    assert "work now" in kinds and "cancel work" not in kinds
    # a request naming no file may still be a cancel: it hears that nothing was
    _planned_cancel(stack, llm, "cancel the water reminder", NOTHING_ACTIVE, "It is canceled.",
                    "There was no reminder to cancel.")


def test_a_preference_in_chinese_is_kept_in_the_persons_words(llamacpp, stack, llm):
    llm.script("teller", turn(delegate=False, remember=True, reply="记住了：你喜欢用 pnpm。"))
    post_input(stack, "帮我记住：我喜欢用 pnpm")
    wait_history(stack, lambda h: ("assistant", "记住了：你喜欢用 pnpm。") in h, message="reply")
    state = stack.settings.state_dir
    kept = [f.read_text(encoding="utf-8") for f in (state / "memory").glob("*.md")
            if not f.name.endswith("-chat.md")]
    assert any("帮我记住：我喜欢用 pnpm" in words for words in kept)
    first = llm.requests_for("teller")[0]
    assert "reply in Chinese" in first["messages"][1]["content"]
    assert _schema(first)["properties"]["reply"]["pattern"] == "^[\u4e00-\u9fff].*$"
    assert not stack.tasks.with_status("queued", "running", "done")


@pytest.mark.parametrize("copied", ["I'll create todo.txt with milk in it.",
                                    "That failed: it was not done.",
                                    "I live in Berlin."])  # as the 0.5B model did
def test_an_examples_reply_copied_to_a_message_it_does_not_fit_is_not_said(llamacpp, stack,
                                                                             llm, copied):
    llm.script("teller", turn(delegate=False, remember=False, reply=copied),
               turn(delegate=False, remember=False, reply="17 times 23 is 391."))
    post_input(stack, "What is 17 times 23?")
    wait_history(stack, lambda h: ("assistant", "17 times 23 is 391.") in h, message="reply")
    assert [text for role, text in history(stack) if role == "assistant"] == [
        "17 times 23 is 391."]
    assert "write your answer to the user itself" in llm.requests_for("teller")[1][
        "messages"][-1]["content"]


def test_a_question_marked_to_keep_is_answered_and_not_kept(llamacpp, stack, llm):
    llm.script("teller", turn(delegate=False, remember=True, reply="你用 pnpm。"))  # as the 1.5B
    post_input(stack, "你还记得我用什么管理包吗？")
    wait_history(stack, lambda h: ("assistant", "你用 pnpm。") in h, message="reply")
    kept = [f.name for f in (stack.settings.state_dir / "memory").glob("*.md")
            if not f.name.endswith("-chat.md")]
    assert kept == []


def _answered_by_the_planner(stack, llm, said: str, answer: str, report: str) -> dict:
    """``said`` handed over, the Planner's ``answer`` reported as ``report``: the schema of the
    report pass's reply."""
    llm.script("teller", turn(delegate=True, remember=False, reply="…"))
    llm.script("planner", turn(unknown="", given="", kind="answer", submit_result={
        "status": "done", "result": {"text": answer}}))
    llm.default("teller", turn(reply=report))
    post_input(stack, said)
    wait_history(stack, lambda h: ("assistant", report) in h, message="the report")
    schema = _schema(llm.requests_for("teller")[-1])
    assert list(schema["properties"]) == ["reply"]
    return schema["properties"]["reply"]


def test_the_report_of_a_request_made_in_chinese_is_held_to_chinese(llamacpp, stack, llm):
    """A report has no message of the person's to go by: the 1.5B model reported "I used
    pnpm." to "我喜欢用什么包管理器？"."""
    reply = _answered_by_the_planner(stack, llm, "我喜欢用什么包管理器？", "You use pnpm.",
                                     "你用 pnpm。")
    assert reply["pattern"] == "^[\u4e00-\u9fff].*$"
    # an answer in the request's script is told as it is (``own_words``): this one is not
    reply = _answered_by_the_planner(stack, llm, "what day is it?", "今天是星期日。",
                                     "It is Sunday.")
    assert "pattern" not in reply


def test_a_planner_says_what_a_request_is_before_it_acts_and_asks_what_only_the_user_knows(
        llamacpp, stack, llm):
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll make it."))
    llm.script("planner", turn(unknown="my favorite color", given="", kind="ask the user",
                               submit_result={"status": "needs_input",
                                              "question": "What is your favorite color?"}),
               turn(answer="blue"))  # asked alone for an answer given already: a guess
    post_input(stack, "create an empty file named after my favorite color")
    wait_for(lambda: stack.conversation.question() is not None, message="the question")
    assert stack.conversation.question().question == "What is your favorite color?"
    branches = _schema(llm.requests_for("planner")[0])["anyOf"]
    assert all(list(b["properties"])[:3] == ["unknown", "given", "kind"] for b in branches)
    kinds = {b["properties"]["kind"]["enum"][0]: b["properties"] for b in branches}
    # it asks only naming what is unknown, and with nothing History or Memory gave of it
    assert kinds["ask the user"]["unknown"] == {"type": "string", "minLength": 1}
    assert kinds["ask the user"]["given"] == {"enum": [""]}
    assert kinds["answer"]["given"] == {"type": "string"}
    assert kinds["work now"]["submit_result"]["properties"]["status"] == {"enum": ["done"]}
    assert kinds["ask the user"]["submit_result"]["properties"]["status"] == {
        "enum": ["needs_input"]}  # the kind decides the status: no work beside a question
    assert {"keep a fact about the user", "answer", "fail", "look up"} <= set(kinds)
    assert not list(stack.settings.work_dir.iterdir())  # nothing made on a guess
    llm.script("teller", turn(delegate=True, remember=False, reply="Making teal."))
    llm.script("planner", turn(unknown="", kind="work now", delegate={
        "prompt": "Create the empty file teal."}, submit_result={
        "status": "done", "result": {"text": "A worker will create teal."}}))
    llm.default("worker", turn(submit_result={"status": "done", "result": {"text": "made"}}))
    llm.default("teller", turn(reply="Done."))
    assert answer_question(stack, "teal")
    wait_for(lambda: len(llm.requests_for("planner")) == 3, message="the plan going on")
    answered = _schema(llm.requests_for("teller")[1])["properties"]
    assert answered["delegate"] == {"enum": [True]}  # an answer goes on to its task, always
    going_on = llm.requests_for("planner")[2]["messages"][1]["content"]
    request = going_on.split("## User request\n", 1)[1]  # the request the answer is for,
    assert request.startswith(  # then the question and its answer
        "create an empty file named after my favorite color\n\n## Earlier attempt (task-")
    assert "\nQuestion: What is your favorite color?\nAnswer (user): teal" in request
    assert "Partial result" not in request  # its question was all the attempt gave
    assert "Original request" not in request  # the request it goes on with, shown once
    going_on_kinds = {b["properties"]["kind"]["enum"][0]
                      for b in _schema(llm.requests_for("planner")[2])["anyOf"]}
    assert "ask the user" not in going_on_kinds  # what was answered is not asked again
    assert "answer" not in going_on_kinds  # it was asked for to do the work: it does it
    assert {"work now", "fail"} <= going_on_kinds


def test_a_request_naming_a_file_is_left_to_a_worker(llamacpp, stack, llm):
    """A request naming a file is not answered from words, by the Teller (it hands it over)
    or the Planner: asked "what does hello.txt say?", the 1.5B Planner answered "The file
    hello.txt does not exist." unread; the 0.5B Teller replied "I'll create notes.txt" to a
    request to create it and handed nothing over."""
    (stack.settings.work_dir / "hello.txt").write_text("hi\n")
    llm.script("teller", turn(delegate=True, remember=False, reply="Looking."))
    llm.script("planner", turn(unknown="", given="", kind="work now", delegate={
        "prompt": "Read hello.txt and report what it says."}, submit_result={
        "status": "done", "result": {"text": "A worker will read hello.txt."}}))
    llm.script("worker", turn(read_file={"path": "hello.txt"}),
               turn(submit_result={"status": "done", "result": {"text": "hello.txt says hi."}}))
    post_input(stack, "what does hello.txt say?")
    wait_history(stack, lambda h: any(said.startswith("hello.txt says hi.") for _role, said in h),
                 message="the report")
    assert _schema(llm.requests_for("teller")[0])["properties"]["delegate"] == {"enum": [True]}
    kinds = {b["properties"]["kind"]["enum"][0]: b["properties"]
             for b in _schema(llm.requests_for("planner")[0])["anyOf"]}
    assert "answer" not in kinds and {"work now", "look up", "ask the user", "fail"} <= set(kinds)
    # beside a call the finisher still reports it done (the first kind with a status is gone)
    assert kinds["work now"]["submit_result"]["properties"]["status"] == {"enum": ["done"]}


def test_a_preference_handed_to_the_planner_is_kept_and_nothing_runs(llamacpp, stack, llm):
    llm.script("teller", turn(delegate=True, remember=False, reply="好的。"))
    llm.script("planner", turn(unknown="", kind="keep a fact about the user",
                               remember="The user manages packages with pnpm.",
                               submit_result={"status": "done", "result": {
                                   "text": "I will remember that you use pnpm."}}))
    llm.default("teller", turn(reply="记住了。"))
    post_input(stack, "以后记得我用 pnpm 管理包")
    wait_history(stack, lambda h: ("assistant", "记住了。") in h, message="the report")
    kept = [f.read_text(encoding="utf-8")
            for f in (stack.settings.state_dir / "memory").glob("*.md")]
    assert any("The user manages packages with pnpm." in words for words in kept)
    made = stack.tasks.with_status(*get_args(TaskStatus))
    assert [t.role for t in made] == ["planner"]  # no worker, no reminder


@pytest.mark.parametrize("copied", ["You use vim.", "You use vim to write your favorite fruit."])
def test_an_answer_in_an_examples_words_is_planned_again_without_answering(llamacpp, stack,
                                                                            llm, copied):
    """The 0.5B model answered "请记住我对花生过敏" with its example's "You use vim.", and
    "我喜欢喝绿茶，记一下" with "You use vim to write your favorite fruit." (two examples'
    words blended)."""
    llm.script("teller", turn(delegate=True, remember=False, reply="好的。"))
    llm.script("planner", turn(unknown="", given="", kind="answer", submit_result={
                   "status": "done", "result": {"text": copied}}),
               turn(unknown="", given="", kind="keep a fact about the user",
                    remember="The user is allergic to peanuts.", submit_result={
                        "status": "done", "result": {"text": "Noted."}}))
    llm.default("teller", turn(reply="记住了。"))
    post_input(stack, "请记住我对花生过敏")
    wait_history(stack, lambda h: ("assistant", "记住了。") in h, message="the report")
    second = llm.requests_for("planner")[1]
    kinds = [b["properties"]["kind"]["enum"][0] for b in _schema(second)["anyOf"]]
    assert "answer" not in kinds and "keep a fact about the user" in kinds
    kept = [f.read_text(encoding="utf-8")
            for f in (stack.settings.state_dir / "memory").glob("*.md")]
    assert any("The user is allergic to peanuts." in words for words in kept)
    assert "You use vim" not in llm.requests_for("teller")[1]["messages"][1]["content"]


@pytest.mark.parametrize(("asked", "answer", "blend"), [
    ("我喜欢喝绿茶，记一下", "You use vim to write your favorite fruit.", True),
    ("which editor do I use?", "You use vim.", False),  # it shares a word with the request
    ("what's 1 plus 2?", "3", False),  # one word: an answer, not a blend
    ("what's the capital of France?", "Paris is the capital of France.", False),
    ("我住在上海，请记住", "You will be reminded in 2 hours.", True),  # an example's, "3" made "2"
    ("17 乘以 23 是多少？", "17 times 23 is 391.", False),  # the request's numbers
    ("how many minutes are in 2 hours?", "120 minutes.", False),  # one word beside a number
])
def test_an_answer_blended_of_the_examples_words(asked, answer, blend):
    from mimikit.agents.prompts import build_system_prompt
    from mimikit.tools.example_copies import blended_example

    system = build_system_prompt("planner", path="constrained")
    assert blended_example(asked, answer, system) is blend


def test_a_plans_action_without_its_finisher_is_followed_by_the_finisher_alone(llamacpp, stack,
                                                                                llm):
    """The 0.5B model delegated, then delegated "Delegate the task to task-…" again and again,
    a new task each time, to the step limit (24 calls, 190 s)."""
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll write it."))
    llm.script("planner", turn(unknown="", given="", kind="work now",
                               delegate={"prompt": "Write hi into a.txt."}),
               turn(submit_result={"status": "done", "result": {"text": "Planned."}}))
    llm.script("worker", turn(check="", write_file={"path": "a.txt", "content": "hi"}),
               turn(check="a.txt is written.", submit_result={
                   "status": "done", "result": {"text": "Wrote a.txt."}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, "write hi into a.txt")
    wait_for(lambda: (stack.settings.work_dir / "a.txt").exists(), message="a.txt written")
    first, second = llm.requests_for("planner")
    assert "delegate" in _calls_offered(first)
    assert list(_schema(second)["properties"]) == ["submit_result"]


def test_a_fact_in_an_examples_words_is_not_kept(llamacpp, stack, llm):
    """Asked "请记住我对花生过敏", the 0.5B model kept "The user remembers that I use vim.", the
    words of its example's request: refused, told the request's fact, it keeps that one."""
    llm.script("teller", turn(delegate=True, remember=False, reply="好的。"))
    copied = turn(unknown="", given="", kind="keep a fact about the user",
                  remember="The user remembers that I use vim.", submit_result={
                      "status": "done", "result": {"text": "Noted: you use vim."}})
    llm.script("planner", copied, turn(
        unknown="", given="", kind="keep a fact about the user",
        remember="The user is allergic to peanuts.", submit_result={
            "status": "done", "result": {"text": "Noted: you are allergic to peanuts."}}))
    llm.default("teller", turn(reply="记住了。"))
    post_input(stack, "请记住我对花生过敏")
    wait_history(stack, lambda h: ("assistant", "记住了。") in h, message="the report")
    told = llm.requests_for("planner")[1]["messages"][-1]["content"]
    assert "请记住我对花生过敏" in told and "example" in told
    kept = " ".join(f.read_text(encoding="utf-8")
                    for f in (stack.settings.state_dir / "memory").glob("*.md"))
    assert "peanuts" in kept and "vim" not in kept
    assert "vim" not in llm.requests_for("teller")[-1]["messages"][-1]["content"]


def test_a_question_in_an_examples_words_is_planned_again_without_asking(llamacpp, stack,
                                                                          llm):
    """For "请记住我对花生过敏" the 0.5B model asked "What is your favorite fruit?", an
    example's question: the person was asked what no one wanted to know."""
    llm.script("teller", turn(delegate=True, remember=False, reply="好的。"))
    llm.script("planner", turn(unknown="my favorite fruit", given="", kind="ask the user",
                               submit_result={"status": "needs_input",
                                              "question": "What is your favorite fruit?"}),
               turn(unknown="", given="", kind="keep a fact about the user",
                    remember="The user is allergic to peanuts.", submit_result={
                        "status": "done", "result": {"text": "Noted."}}))
    llm.default("teller", turn(reply="记住了。"))
    post_input(stack, "请记住我对花生过敏")
    wait_history(stack, lambda h: ("assistant", "记住了。") in h, message="the report")
    first, second = llm.requests_for("planner")
    assert "What is your favorite fruit?" in first["messages"][0]["content"]  # the example's
    _planned_again_without_asking(stack, second, "What is your favorite fruit?",
                                  "keep a fact about the user")


def test_a_question_asked_before_for_another_request_is_planned_again_without_asking(
        llamacpp, stack, llm):
    """After a folder named after the person's favourite season had been asked about, the 1.5B
    model asked "What is your favorite season?" for "每周日晚上8点提醒我倒垃圾": the reminder
    waited on a question that has nothing to do with it."""
    stack.conversation.append(Message(role="user", text="make a folder named after my season"))
    stack.conversation.append(Message(role="assistant", text="What is your favourite season?"))
    stack.conversation.append(Message(role="user", text="winter"))
    llm.script("teller", turn(delegate=True, remember=False, reply="好的。"))
    llm.script("planner", turn(unknown="倒垃圾", given="", kind="ask the user", submit_result={
        "status": "needs_input", "question": "What is your favorite season?"}),
        turn(unknown="", given="", kind="work later, at a time of day", schedule={
            "prompt": "Remind the user to take out the trash.", "at": "20:00",
            "days": "sunday"}, submit_result={"status": "done", "result": {"text": "好的。"}}))
    post_input(stack, "每周日晚上8点提醒我倒垃圾")
    wait_history(stack, lambda h: any(role == "system" and "0 20 * * 0" in said and "trash" in
                                      said for role, said in h), message="the reminder")
    _planned_again_without_asking(stack, llm.requests_for("planner")[1],
                                  "What is your favorite season?", "work later, at a time of day")


def _planned_again_without_asking(stack, again: dict, question: str, kind: str) -> None:
    """The plan asking ``question`` was made again (``again``: its request) without the choice
    to ask and with ``kind`` among its choices; no question is pending, and the copy logged."""
    kinds = [b["properties"]["kind"]["enum"][0] for b in _schema(again)["anyOf"]]
    assert "ask the user" not in kinds and kind in kinds
    assert stack.conversation.question() is None
    copied = [e for e in stack.events.recent() if e["type"] == "answer_copied"]
    assert [(e["kind"], e["answer"]) for e in copied] == [("ask the user", question)]


def test_a_question_asked_before_is_asked_again_for_a_request_about_it(llamacpp, stack, llm):
    stack.conversation.append(Message(role="assistant", text="What is your favourite season?"))
    stack.conversation.append(Message(role="user", text="winter"))
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll ask."))
    llm.script("planner", turn(unknown="my favourite season", given="", kind="ask the user",
                               submit_result={"status": "needs_input",
                                              "question": "What is your favorite season?"}))
    post_input(stack, "write a poem about my favourite season")
    wait_for(lambda: stack.conversation.question() is not None, message="the question")
    assert not [e for e in stack.events.recent() if e["type"] == "answer_copied"]


def test_a_question_of_the_requests_own_is_asked_even_in_an_examples_words(llamacpp, stack,
                                                                            llm):
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll ask."))
    llm.script("planner", turn(unknown="my favorite fruit", given="", kind="ask the user",
                               submit_result={"status": "needs_input",
                                              "question": "What is your favorite fruit?"}))
    post_input(stack, asked := "make a file named after my favorite fruit")
    wait_for(lambda: stack.conversation.question() is not None, message="the question")
    assert stack.conversation.question().question == "What is your favorite fruit?"
    assert not [e for e in stack.events.recent() if e["type"] == "answer_copied"]
    plans = [body for body in llm.requests_for("planner")
             if body["messages"][-1]["content"].endswith("## User request\n" + asked)]
    assert len(plans) == 1  # planned once


def test_the_reply_streams_from_its_field_and_never_shows_the_object(llamacpp, stack, llm):
    llm.script("teller", streamed(turn(delegate=False, remember=False,
                                       reply="Hello there, how can I help?"),
                                  pause=0.02, chunk_chars=4))
    cursor = stack.redis.xrevrange(stack.keys.events, count=1)
    since = cursor[0][0].decode() if cursor else "0"
    post_input(stack, "hello")
    wait_history(stack, lambda h: ("assistant", "Hello there, how can I help?") in h,
                 message="the reply")
    shown = [json.loads(data)["text"] for _id, event, data in stack.events.read(since, 100)
             if event == "reply"]
    assert shown and all("Hello there, how can I help?".startswith(t) for t in shown), shown


def test_a_reply_saying_one_phrase_again_and_again_ends_after_its_first_copy(
        llamacpp, stack, llm):
    looping = "Noted. " + "I will remember that. " * 300  # no line break to cut at
    llm.script("teller", streamed(turn(delegate=False, remember=True, reply=looping),
                                  pause=0.001, chunk_chars=16))
    post_input(stack, "I live in Berlin")
    said = wait_history(stack, lambda h: any(r == "assistant" for r, _t in h),
                        message="the reply")
    assert [t for r, t in said if r == "assistant"] == ["Noted. I will remember that."]
    assert len(llm.requests_for("teller")) == 1  # no correction: the answer was whole


def test_a_worker_making_the_same_call_again_can_only_finish(llamacpp, stack, llm):
    llm.script("teller", turn(delegate=True, remember=False, reply="On it."))
    llm.script("planner", turn(delegate={"prompt": "Write 391 into result.txt."},
                               submit_result={"status": "done", "result": {"text": "Planned."}}))
    write = turn(write_file={"path": "result.txt", "content": "391"})
    llm.script("worker", write, write,
               turn(submit_result={"status": "done", "result": {"text": "Wrote 391."}}))
    post_input(stack, "write 17 times 23 into result.txt")
    wait_history(stack, lambda h: any(said.startswith("Wrote 391.") for _role, said in h),
                 message="the report")
    third = llm.requests_for("worker")[2]
    assert list(_schema(third)["properties"]) == ["submit_result"]
    # no words to copy into its result: the schema alone leaves it the finisher
    assert third["messages"][-1]["content"].startswith("Results:")
    assert not any("same arguments" in str(m["content"]) for m in third["messages"])


def test_a_server_refusing_the_schema_is_asked_with_tools_from_then_on(llamacpp, stack, llm):
    def old_server(body):
        if "response_format" in body:
            return error(400, {"error": {"message": "response_format is not supported"}})
        return tool_call("reply", text="Hello the native way.")

    llm.default("teller", old_server)
    post_input(stack, "hello")
    wait_history(stack, lambda h: ("assistant", "Hello the native way.") in h, message="reply")
    second = llm.requests_for("teller")[1]
    assert "response_format" not in second and second["tools"]
    assert "You are the Mimikit runtime teller." in second["messages"][0]["content"]
    assert '"delegate": true' not in second["messages"][0]["content"]  # the native prompt
    status = wait_for(lambda: stack.redis.hget(stack.keys.llm_profiles, f"{llm.url}|teller"),
                      message="the profile kept")
    assert json.loads(status)["constraint"] is None


def test_a_server_ignoring_the_schema_is_read_the_native_way_and_learned(llamacpp, stack, llm):
    llm.script("teller", tool_call("reply", text="Calls, not objects."))
    llm.default("teller", text(""))
    post_input(stack, "hello")
    wait_history(stack, lambda h: ("assistant", "Calls, not objects.") in h, message="reply")
    kept = wait_for(lambda: json.loads(stack.redis.hget(stack.keys.llm_profiles,
                                                        f"{llm.url}|teller") or "{}"),
                    message="the profile")
    wait_for(lambda: json.loads(stack.redis.hget(stack.keys.llm_profiles,
                                                 f"{llm.url}|teller"))["constraint"] is None,
             message="the schema not held, learned")
    assert kept["nativeCalls"] is True


def test_the_status_shows_each_roles_path(llamacpp, stack, llm):
    from mimikit.status import status

    shown = status(stack)["llm"]["profile"]
    assert {role: shown[role]["path"] for role in MODELS} == {
        "teller": "constrained", "planner": "constrained", "worker": "constrained"}
    assert shown["teller"]["server"] == "llama.cpp server"
    assert "answers held to a schema (json_schema)" in shown["teller"]["line"]


def test_a_request_waits_for_a_free_slot_without_spending_the_passs_time(llamacpp, runtime,
                                                                         procs, monkeypatch):
    import time

    from mimikit.store.runtime import reset_runtime

    llm = llamacpp
    monkeypatch.setenv("MIMIKIT_LLM_BASE_URL", llm.url)
    monkeypatch.setenv("MIMIKIT_TELLER_TIMEOUT", "3")
    reset_runtime()
    procs.worker(queues="teller,planner,supervisor", concurrency=2, name="agents")
    llm.busy_until = time.monotonic() + 6  # the one slot works for another client
    llm.script("teller", turn(delegate=False, remember=False, reply="Hello, at last."))
    post_input(runtime, "hello")
    wait_history(runtime, lambda h: ("assistant", "Hello, at last.") in h, timeout=30,
                 message="the reply once the slot was free")
    assert llm.arrivals_for("teller")[0] >= llm.busy_until
    assert not any(role == "system" for role, _t in history(runtime))  # never "timed out"


def test_a_lone_worker_task_carries_the_request_in_the_persons_words(llamacpp, stack, llm):
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll write fib.py."))
    llm.script("planner", turn(delegate={"prompt": "Write fib.py."},  # "run it" left out
                               submit_result={"status": "done", "result": {"text": "Planned."}}))
    llm.default("worker", turn(submit_result={"status": "done", "result": {"text": "Done."}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, "write fib.py, run it and tell me the output")
    worker = wait_for(lambda: [t for t in stack.tasks.with_status("done") if t.role == "worker"],
                      message="the Worker task")[0]
    assert worker.prompt == ("Write fib.py.\n\n## The request, in the user's words\n"
                             "write fib.py, run it and tell me the output")
    assert worker.title == "Write fib.py."


def test_tasks_doing_parts_of_a_request_do_not_carry_all_of_it(llamacpp, stack, llm):
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll do both."))
    llm.script("planner", turn(delegate={"prompt": "Write a.txt."}),
               turn(delegate={"prompt": "Write b.txt."},
                    submit_result={"status": "done", "result": {"text": "Planned."}}))
    llm.default("worker", turn(submit_result={"status": "done", "result": {"text": "Done."}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, "write a.txt and b.txt")
    workers = wait_for(lambda: len(done := [t for t in stack.tasks.with_status("done")
                                            if t.role == "worker"]) == 2 and done,
                       message="both Worker tasks")
    assert sorted(t.prompt for t in workers) == ["Write a.txt.", "Write b.txt."]


def test_a_plan_whose_schedule_is_refused_fails_saying_why_and_is_reported_as_not_done(
        llamacpp, stack, llm):
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll set it."))
    wrong = turn(unknown="", kind=AT_A_TIME, schedule={
        "prompt": "Remind the user to drink water.", "type": "scheduled", "runAt": "9am"},
        submit_result={"status": "done", "result": {"text": "Set."}})
    llm.script("planner", wrong, wrong)  # the same again: it fails
    llm.default("teller", turn(reply="It could not be set."))
    post_input(stack, "every day at 9am remind me to drink water")
    said = wait_history(stack, lambda h: ("assistant", "It could not be set.") in h,
                        message="the report")
    failed = next(t for _r, t in said if t.startswith("Task failed"))
    assert "'9am' is not a duration" in failed  # the schedule's error, not the finisher's
    assert "was not run" not in failed
    report = llm.requests_for("teller")[-1]["messages"][1]["content"]
    assert FAILURE_HINT in report and REPORT_HINT not in report


def _planner_prompt(stack, llm, words: str) -> str:
    """The Planner's first request for ``words`` handed over (its user message)."""
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll cancel it."))
    llm.script("planner", turn(submit_result={"status": "done", "result": {"text": "Kept."}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, words)
    asked = wait_for(lambda: llm.requests_for("planner"), message="the Planner's request")
    return asked[0]["messages"][1]["content"]


def test_active_work_shows_each_task_with_when_it_runs(llamacpp, stack, llm):
    stretch, water = submit(stack, [
        Task(type="scheduled", prompt="Remind the user to stretch.",
             schedule=RunAtSchedule(runAt=datetime(2030, 1, 2, 3, 4, tzinfo=UTC))),
        Task(type="recurring", prompt="Remind the user to drink water.",
             schedule=IntervalSchedule(cron="0 9 * * *"))])
    prompt = _planner_prompt(stack, llm, "cancel the water reminder")
    assert f"- {stretch.id}: scheduled at 2030-01-02 03:04 UTC: Remind the user to stretch." \
        in prompt
    assert f"- {water.id}: recurring cron 0 9 * * * UTC: Remind the user to drink water." \
        in prompt


def test_a_long_list_of_active_work_shows_the_task_a_request_names_within_its_budget(
        llamacpp, stack, llm):
    from mimikit.agents.context import FIRST_REQUEST_TOKENS, UNCOUNTED_SCALE

    water, *_others = submit(stack, [
        Task(type="recurring", prompt="Remind the user to drink water.",
             schedule=IntervalSchedule(cron="0 9 * * *")),
        *(Task(type="recurring", prompt=f"Remind the user of stretching exercise number {n}.",
               schedule=IntervalSchedule(cron=f"{n} 10 * * *")) for n in range(15))])
    prompt = _planner_prompt(stack, llm, "cancel the water reminder")
    listed = prompt.split("## Active work\n")[1].split("\n\n")[0]
    lines = listed.splitlines()
    assert f"- {water.id}: recurring cron 0 9 * * * UTC: Remind the user to drink water." \
        in lines  # the oldest, and the one the request names
    shown = [line for line in lines if line.startswith("- task-")]
    assert 2 <= len(shown) < 16 and lines[-2:] == [
        f"- and {16 - len(shown)} more (list_tasks lists them all)",
        f"- {NONE_ASKED}: none of the above is the one asked for"]
    request = llm.requests_for("planner")[0]["messages"]
    assert _estimate(request) * UNCOUNTED_SCALE <= FIRST_REQUEST_TOKENS


def test_where_a_request_leaves_no_room_two_lines_of_active_work_are_still_shown(runtime):
    """Held to 70 tokens, the 1.5B model was shown the newer of two reminders (a date and an
    id are a token a digit) and canceled it for the lights reminder it was asked to."""
    from mimikit.agents.planner import active_work

    lights, plumber = submit(runtime, [
        Task(type="recurring", prompt="Remind the user to turn off the lights.",
             schedule=IntervalSchedule(cron="0 22 * * *")),
        Task(type="scheduled", prompt="Set a reminder 20 minutes from now to call the plumber.",
             schedule=RunAtSchedule(runAt=datetime(2030, 1, 2, 3, 4, tzinfo=UTC)))])
    asked = Task(prompt="never mind the lights reminder, delete it")
    section = active_work(runtime, asked, room=0).section
    assert lights.id in section and plumber.id in section and "more" not in section
    third = submit(runtime, [Task(type="recurring", prompt="Remind the user to stretch.",
                                  schedule=IntervalSchedule(cron="0 9 * * *"))])[0]
    section = active_work(runtime, asked, room=0).section
    assert lights.id in section and third.id not in section and "- and 1 more" in section


def _estimate(messages: list[dict]) -> int:
    from mimikit.tokens import estimate_tokens

    return sum(estimate_tokens(message["content"]) for message in messages)


def test_a_server_counting_more_tokens_than_the_estimate_gets_shorter_first_requests(
        llamacpp, stack, llm):
    """What the server counted for a role's first request is kept: the next one is made to
    fit the budget by its count, the history giving way."""
    from mimikit.agents.context import FIRST_REQUEST_TOKENS

    for n in range(6):
        stack.conversation.append(Message(role="user", text=f"earlier request {n}: "
                                                           + "and a few words more " * 8))
    submit(stack, [Task(type="recurring", prompt=f"Remind the user to drink water {n}.",
                        schedule=IntervalSchedule(cron=f"0 {n} * * *")) for n in range(4)])
    done = turn(submit_result={"status": "done", "result": {"text": "Kept."}})
    counted = lambda body: with_usage(done, int(_estimate(body["messages"]) * 1.1), 20)  # noqa: E731
    llm.default("teller", turn(delegate=True, remember=False, reply="On it."))
    llm.default("planner", counted)
    post_input(stack, "cancel the water reminders")
    wait_for(lambda: llm.requests_for("planner"), message="the first Planner request")
    wait_for(lambda: stack.redis.hlen(stack.keys.token_scales), message="the count kept")
    post_input(stack, "cancel the water reminders")
    asked = wait_for(lambda: llm.requests_for("planner")[1:], message="the second")
    first, second = llm.requests_for("planner")[0]["messages"], asked[0]["messages"]
    assert _estimate(first) * 1.1 > FIRST_REQUEST_TOKENS  # past it by the server's count
    assert _estimate(second) * 1.1 <= FIRST_REQUEST_TOKENS
    assert "## History" in first[1]["content"] and "## History" not in second[1]["content"]
    assert "cancel the water reminders" in second[1]["content"]


def test_a_planner_request_with_active_work_shows_less_history_and_not_the_request_twice(
        llamacpp, stack, llm):
    """Its first request stays near the budget of a slow server: the list of active work takes
    the history's place, down to the last two messages (fewer where even they do not fit)."""
    for n in range(6):
        stack.conversation.append(Message(role="user", text=f"earlier request {n}: "
                                                           + "and a few words more " * 8))
    submit(stack, [Task(type="recurring", prompt=f"Remind the user to drink water {n}.",
                        schedule=IntervalSchedule(cron=f"0 {n} * * *")) for n in range(4)])
    prompt = _planner_prompt(stack, llm, "cancel the water reminders")
    history_block = prompt.split("## History\n")[1].split("\n\n")[0]
    shown = [line.split("] ", 1)[1][:25] for line in history_block.splitlines()]
    assert 1 <= len(shown) <= 2
    assert shown == ["user: earlier request 4: ", "user: earlier request 5: "][-len(shown):]
    assert prompt.count("cancel the water reminders") == 1


def test_a_schedule_made_says_in_the_chat_when_it_runs(llamacpp, stack, llm):
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll set it."))
    llm.script("planner", turn(unknown="", given="", kind=AT_A_TIME, schedule={
        "prompt": "Remind the user to stretch.", "type": "recurring", "at": "09:00",
        "days": "every day"}, submit_result={"status": "done", "result": {"text": "Set."}}))
    llm.default("teller", turn(reply="Set."))
    post_input(stack, "every day at 9 remind me to stretch")
    said = wait_history(stack, lambda h: any(t.startswith("Task created") for _r, t in h),
                        message="the schedule made")
    zone = stack.settings.timezone
    assert f"Task created (recurring cron 0 9 * * * {zone}): Remind the user to stretch." in \
        [t for _r, t in said]


def test_a_report_that_only_says_an_earlier_report_again_is_told_in_the_results_words(
        llamacpp, stack, llm):
    earlier = "The water reminder is canceled. It ran every day at 9:00 in the morning."
    stack.conversation.append(Message(role="assistant", text=earlier))
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll write date.txt."))
    llm.script("planner", turn(delegate={"prompt": "Write date.txt; count its characters."},
                               submit_result={"status": "done",
                                              "result": {"text": "A worker will write it."}}))
    llm.script("worker", turn(write_file={"path": "date.txt", "content": "2026-11-28"}),
               turn(submit_result={"status": "done",
                                   "result": {"text": "date.txt has 10 characters."}}))
    # every report the model gives is the earlier one, its sentences shuffled
    llm.default("teller", turn(
        reply="It ran every day at 9:00 in the morning. The water reminder is canceled."))
    post_input(stack, "put the date in date.txt and count its characters")
    told = ('date.txt has 10 characters. What its run did: wrote date.txt (10 bytes): '
            '"2026-11-28"')
    wait_history(stack, lambda h: ("assistant", told) in h,
                 message="the result told in its own words, with what its run did")
    assert _replies(stack).count(earlier) == 1 and not any(
        "It ran every day at 9:00 in the morning. The" in reply for reply in _replies(stack))


def test_a_report_that_only_says_the_reply_before_it_again_however_short_is_told_as_results_say(
        llamacpp, stack, llm):
    """The 1.5B model reported "17 乘以 23 是多少？", answered by the Planner, with its reply
    before: "好的，我将计算 17 乘以 23 的结果。"."""
    said = "好的，我将计算 17 乘以 23 的结果。"
    llm.script("teller", turn(delegate=True, remember=False, reply=said), turn(reply=said))
    llm.script("planner", turn(unknown="", given="", kind="answer", submit_result={
        "status": "done", "result": {"text": "The product of 17 and 23 is 391."}}))
    post_input(stack, "17 乘以 23 是多少？")
    wait_history(stack, lambda h: any("391" in t for r, t in h if r == "assistant"),
                 message="the result told in its own words")
    assert _replies(stack).count(said) == 1


def test_a_report_tells_the_files_a_run_renamed_added_to_copied_read_removed_and_folders_made(
        llamacpp, stack, llm):
    (stack.settings.work_dir / "todo.md").write_text("milk\n")
    (stack.settings.work_dir / "old.md").write_text("x\n")
    llm.script("worker", turn(make_dir={"path": "photos"}),
               turn(rename={"path": "todo.md", "to": "tasks.md"}),
               turn(append_file={"path": "tasks.md", "content": "walk the dog\n"}),
               turn(rename={"path": "gone.md", "to": "here.md"}),  # refused: not there
               turn(copy={"path": "tasks.md", "to": "backup.md"}),
               turn(read_file={"path": "backup.md"}),  # measured: its size is a fact to tell
               turn(remove={"path": "old.md"}),
               turn(submit_result={"status": "done", "result": {"text": "All done."}}))
    submit(stack, [Task(role="worker", prompt="Make photos/, rename todo.md, add a line.")])
    told = wait_history(stack, lambda h: any(said.startswith("All done.") for _role, said in h),
                        message="the report")
    assert ("All done. What its run did: made the folder photos/; renamed todo.md to tasks.md; "
            "added to tasks.md (now 18 bytes); copied tasks.md to backup.md (tasks.md stays); "
            "read backup.md (18 bytes, 2 lines); removed old.md") in [said for _role, said in told]
    assert llm.requests_for("teller") == []  # its own words, borne out by its run
    assert (stack.settings.work_dir / "tasks.md").read_text() == "milk\nwalk the dog\n"
    assert (stack.settings.work_dir / "backup.md").read_text() == "milk\nwalk the dog\n"
    assert not (stack.settings.work_dir / "old.md").exists()


def test_a_reminder_told_in_the_same_words_as_yesterday_is_still_told(llamacpp, stack, llm):
    told = "Time to drink water! Remember to stay hydrated all day long."
    stack.conversation.append(Message(role="assistant", text=told))  # yesterday's report
    llm.script("worker", turn(submit_result={"status": "done", "result": {"text": told}}))
    llm.default("teller", turn(reply=told))
    submit(stack, [Task(role="worker", prompt="Remind the user to drink water.")])
    wait_history(stack, lambda h: _replies(stack).count(told) == 2, message="today's reminder")


def test_a_failed_worker_that_wrote_a_file_is_told_with_what_its_run_did_and_no_hint_copied(
        llamacpp, stack, llm):
    llm.script("worker", turn(write_file={"path": "notes.txt", "content": "hello\n"}),
               turn(submit_result={"status": "failed",  # as a small model may, after writing
                                   "error": "Failed to write to file 'notes.txt'."}))
    # the report copies the end of the prompt's line for failures
    llm.default("teller", turn(reply="That failed: it was not done. "
                                     + FAILURE_HINT[FAILURE_HINT.index("Say"):-1]))
    submit(stack, [Task(role="worker", prompt="Create notes.txt containing hello.")])
    # the example's words and the copied hint are out: the result's, with what its run did
    did = ("Failed to write to file 'notes.txt'. What its run did: wrote notes.txt (6 bytes): "
           '"hello\\n"')
    said = wait_history(stack, lambda h: ("assistant", "Failed: " + did) in h,
                        message="the report in the result's words")
    failed = next(t for _r, t in said if t.startswith("Task failed"))
    assert failed.endswith(did)  # the file is there, whatever it said
    assert (stack.settings.work_dir / "notes.txt").read_text() == "hello\n"
    assert not any("past tense" in reply for reply in _replies(stack))


def test_a_report_made_only_of_its_prompts_words_is_told_in_the_results_words(
        llamacpp, stack, llm):
    llm.script("worker", turn(shell={"command": "echo 3"}),
               turn(submit_result={"status": "done",  # 2: a number its run did not show
                                   "result": {"text": "The backup holds 3 files in 2 folders."}}))
    llm.default("teller", turn(reply=REPORT_HINT[1:-1]))
    submit(stack, [Task(role="worker", prompt="Count the files of the backup.")])
    wait_history(stack, lambda h: any(role == "assistant" and text.startswith(
        "The backup holds 3 files in 2 folders.") for role, text in h),
        message="the result in its own words")
    assert len(llm.requests_for("teller")) == 1  # no correction round
    assert not any("past tense" in reply for reply in _replies(stack))


def test_a_task_that_lost_the_persons_answer_is_given_their_request_and_answer_instead(
        llamacpp, stack, llm):
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll make it."),
               turn(delegate=True, remember=False, reply="Making it."))
    llm.script("planner", turn(unknown="my favorite color", given="", kind="ask the user",
                               submit_result={"status": "needs_input",
                                              "question": "What is your favorite color?"}),
               turn(answer=""),  # asked alone, it finds no answer given already
               turn(unknown="my favorite color", given="", kind="work now", delegate={
                   "prompt": "Create an empty file named 'my favorite color'."},  # as a 1.5B
                   submit_result={"status": "done", "result": {"text": "A worker will."}}))
    llm.script("worker", turn(write_file={"path": "teal", "content": ""}),
               turn(submit_result={"status": "done", "result": {"text": "teal is made."}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, "create an empty file named after my favorite color")
    wait_for(lambda: stack.conversation.question() is not None, message="the question")
    assert answer_question(stack, "teal")
    wait_for(lambda: llm.requests_for("worker"), message="the Worker's request")
    task = llm.requests_for("worker")[0]["messages"][1]["content"].split("## Task ", 1)[1]
    assert task.split(": ", 1)[1].startswith("create an empty file named after my favorite "
                                             "color\n\ncreate an empty file named after my")
    assert "Question: What is your favorite color?\nAnswer (user): teal" in task
    assert "named 'my favorite color'" not in task
    wait_for(lambda: (stack.settings.work_dir / "teal").exists(), message="the file teal")


def test_a_turn_answered_again_after_a_refused_reply_keeps_the_persons_words_once(
        llamacpp, stack, llm):
    earlier = "I have noted it. You will find it in memory whenever you ask me about it again."
    stack.conversation.append(Message(role="assistant", text=earlier))
    llm.script("teller", turn(delegate=False, remember=True, reply=earlier),  # a copy: refused
               turn(delegate=False, remember=True, reply="Noted: you use vim."))
    post_input(stack, "remember that I use vim")
    wait_history(stack, lambda h: ("assistant", "Noted: you use vim.") in h, message="reply")
    kept = [f for f in (stack.settings.state_dir / "memory").glob("*.md")
            if not f.name.endswith("-chat.md")]
    assert len(llm.requests_for("teller")) == 2
    assert [f.read_text(encoding="utf-8").count("remember that I use vim") for f in kept] == [1]


def test_a_chinese_reply_copied_from_an_earlier_one_is_refused_and_answered_again(
        llamacpp, stack, llm):
    """The 1.5B model answered "我喜欢喝什么茶？" with its reply to an earlier request, word for
    word: 26 characters, as long as an English sentence of 60."""
    earlier = "好的，我将创建一个提醒任务，每天晚上十点提醒你睡觉。"
    stack.conversation.append(Message(role="assistant", text=earlier))
    llm.script("teller", turn(delegate=False, remember=False, reply=earlier),
               turn(delegate=False, remember=False, reply="你喜欢喝绿茶。"))
    post_input(stack, "我喜欢喝什么茶？")
    said = wait_history(stack, lambda h: ("assistant", "你喜欢喝绿茶。") in h, message="reply")
    assert [text for role, text in said if role == "assistant"] == [earlier, "你喜欢喝绿茶。"]
    again = llm.requests_for("teller")[1]["messages"]  # a pass of its own, without the copy
    assert len(again) == 2 and earlier not in again[1]["content"]


def test_a_reply_copied_from_an_earlier_one_ends_the_pass_tried_anew_without_it(
        llamacpp, stack, llm):
    """Told that its reply said an earlier one again, the 1.5B model said it again five more
    times, then in the next pass: the copy ends the pass, and the message is tried anew with
    the copied reply out of its history, until it is answered."""
    earlier = "好的，我将创建一个提醒任务，每天晚上十点提醒你睡觉。"
    stack.conversation.append(Message(role="user", text="每天晚上十点提醒我睡觉"))
    stack.conversation.append(Message(role="assistant", text=earlier))
    copy = turn(delegate=False, remember=False, reply=earlier)
    llm.script("teller", copy, turn(delegate=False, remember=False, reply="你喜欢喝绿茶。"))
    post_input(stack, "我喜欢喝什么茶？")
    said = wait_history(stack, lambda h: ("assistant", "你喜欢喝绿茶。") in h, timeout=60,
                        message="reply")
    assert [text for role, text in said if role == "assistant"] == [earlier, "你喜欢喝绿茶。"]
    asked = [request["messages"] for request in llm.requests_for("teller")]
    assert [len(messages) for messages in asked] == [2, 2]  # a new pass, not a correction
    assert earlier in asked[0][1]["content"] and earlier not in asked[1][1]["content"]
    assert "每天晚上十点提醒我睡觉" in asked[1][1]["content"]  # only the copied reply is out
    llm.script("teller", turn(delegate=False, remember=False, reply="不客气。"))
    post_input(stack, "谢谢")
    wait_history(stack, lambda h: ("assistant", "不客气。") in h, timeout=60, message="reply")
    assert earlier in llm.requests_for("teller")[-1]["messages"][1]["content"]  # answered: back


def test_a_worker_holds_each_result_against_its_task_before_its_next_step(llamacpp, stack, llm):
    llm.script("worker", turn(check="", write_file={"path": "count.py", "content": "print(1)\n"}),
               turn(check="count.py is written.", shell={"command": "python3 count.py"}),
               turn(check="It printed 1, but the task asks for 1 to 3.",
                    write_file={"path": "count.py",
                                "content": "for n in range(1, 4):\n    print(n)\n"}),
               turn(check="It printed 1, 2 and 3, as the task asks.",
                    submit_result={"status": "done", "result": {"text": "It printed 1 to 3."}}))
    submit(stack, [Task(role="worker", prompt="Write count.py printing 1 to 3 and run it.")])
    wait_history(stack, lambda h: any(said.startswith("It printed 1 to 3.") for _role, said in h),
                 message="the report")
    first = _schema(llm.requests_for("worker")[0])
    assert all(list(branch["properties"])[0] == "check" and "check" in branch["required"]
               for branch in first["anyOf"])
    assert (stack.settings.work_dir / "count.py").read_text().startswith("for n in")
    done = next(t for t in stack.tasks.with_status("done") if t.role == "worker")
    assert stack.tasks.result(done.id).result == {"text": "It printed 1 to 3."}
    assert len(llm.requests_for("worker")) == 4  # the check is read as no call of its own


def test_a_report_copied_from_the_prompts_example_is_told_in_the_results_words(
        llamacpp, stack, llm):
    llm.script("worker", turn(write_file={"path": "notes.txt", "content": "hello\n"}),
               turn(submit_result={"status": "done",  # 1: a number its run did not show
                                   "result": {"text": "notes.txt holds hello: 6 bytes, 1 line."}}))
    llm.default("teller", turn(reply="That failed: it was not done."))  # an example's words
    submit(stack, [Task(role="worker", prompt="Create notes.txt containing hello.")])
    wait_history(stack, lambda h: any(r == "assistant" and "notes.txt holds hello: 6 bytes, 1 "
                                      "line." in t for r, t in h), message="the report")
    assert "That failed: it was not done." not in _replies(stack)
    assert len(llm.requests_for("teller")) == 1  # no correction: the results say it


def test_a_report_naming_a_file_its_results_do_not_is_told_in_the_results_words(
        llamacpp, stack, llm):
    """The 1.5B model told a failed "remove backup.txt" as an earlier failure of scores.csv,
    whose report was in its history."""
    (stack.settings.work_dir / "backup.txt").write_text("eggs\n")
    llm.script("worker", turn(write_file={"path": "backup.txt", "content": ""}),  # refused
               turn(submit_result={"status": "failed", "error": "backup.txt already exists"}))
    llm.script("teller", turn(reply="That failed: scores.csv has a syntax error."))
    llm.default("teller", turn(reply="Removed."))
    submit(stack, [Task(role="worker", prompt="Remove backup.txt.")])
    wait_history(stack, lambda h: any(r == "assistant" and "backup.txt already exists" in t
                                      for r, t in h), message="the report")
    assert not any("scores.csv" in reply for reply in _replies(stack))
    assert len(llm.requests_for("teller")) == 1  # no correction: the results say it
    llm.script("worker", turn(write_file={"path": "notes.txt", "content": "hi"}),
               turn(submit_result={"status": "done", "result": {"text": "Written: 1 line."}}))
    llm.script("teller", turn(reply="notes.txt is written: 1 line, 2 bytes."))  # 1: the run
    # never showed it, so the model reports (``agents.own_words``)
    submit(stack, [Task(role="worker", prompt="Write notes.txt.")])  # the file its run wrote
    wait_history(stack, lambda h: ("assistant", "notes.txt is written: 1 line, 2 bytes.") in h,
                 message="a report naming the file written")
    llm.script("worker", turn(list_files={"path": "."}), turn(submit_result={
        "status": "done", "result": {"text": "The folder holds backup.txt and notes.txt: 2 "
                                               "files."}}))
    llm.script("teller", turn(reply="The user was reminded to turn off the lights, and listed "
                                    "the files in their working directory."))
    submit(stack, [Task(role="worker", prompt="List the files.")])  # none of the files named
    wait_history(stack, lambda h: any(r == "assistant" and t.startswith(
        "The folder holds backup.txt and notes.txt: 2 files.") for r, t in h),
        message="the listing")
    assert not any("lights" in reply for reply in _replies(stack))


def test_a_report_giving_a_number_its_results_do_not_is_told_in_the_results_words(
        llamacpp, stack, llm):
    """The 1.5B model reported a count of lines as "shopping.txt has 2 lines, which is 15
    bytes long." (it has 3; no size was measured), and a date written as "2023-04-15"."""
    llm.script("worker", turn(shell={"command": "wc -l shopping.txt"}),
               turn(submit_result={"status": "done",
                                   "result": {"text": "shopping.txt has 3 lines (1 item each)."}}))
    llm.script("teller", turn(reply="shopping.txt has 2 lines, which is 15 bytes long."))
    llm.default("teller", turn(reply="Done."))
    (stack.settings.work_dir / "shopping.txt").write_text("eggs\nbread\nmilk\n")
    submit(stack, [Task(role="worker", prompt="How many lines does shopping.txt have?")])
    wait_history(stack, lambda h: any(r == "assistant" and t.startswith(
        "shopping.txt has 3 lines (1 item each).") for r, t in h), message="the results' words")
    assert not any("15 bytes" in reply for reply in _replies(stack))
    llm.script("worker", turn(write_file={"path": "d.txt", "content": "2026-11-30"}),
               turn(submit_result={"status": "done",
                                   "result": {"text": "d.txt holds 2026-11-30, 1 line."}}))
    llm.script("teller", turn(reply="d.txt holds 2026-11-30: 10 bytes."))
    submit(stack, [Task(role="worker", prompt="Write the date into d.txt.")])  # its numbers
    wait_history(stack, lambda h: ("assistant", "d.txt holds 2026-11-30: 10 bytes.") in h,
                 message="a report whose numbers its results give")


def test_a_report_telling_none_of_the_numbers_its_results_give_is_told_in_the_results_words(
        llamacpp, stack, llm):
    """The 0.5B model counted the words of rent.txt with ``wc -c`` and reported it as "That was
    done: Count the words in rent.txt and write the number into count.txt.": the person never
    learned the 8 count.txt held."""
    (stack.settings.work_dir / "rent.txt").write_text("pay rent")
    llm.script("worker", turn(shell={"command": "wc -c rent.txt > count.txt"}),
               turn(submit_result={"status": "done", "result": {"text": "8 rent.txt, 1 line"}}))
    # (the 1 neither its task nor its run gave: the model's to report, not its own words)
    llm.script("teller", turn(reply="That was done: Count the words in rent.txt and write the "
                                    "number into count.txt."))
    llm.default("teller", turn(reply="Done."))
    submit(stack, [Task(role="worker", prompt="Count the words in rent.txt and write the "
                                              "number into count.txt.")])
    wait_history(stack, lambda h: any(r == "assistant" and t.startswith("8 rent.txt")
                                      for r, t in h), message="the results' words")
    assert not any(reply.startswith("That was done") for reply in _replies(stack))
    llm.script("worker", turn(shell={"command": "wc -w rent.txt"}),
               turn(submit_result={"status": "done",
                                   "result": {"text": "rent.txt has 2 words, 1 line."}}))
    llm.script("teller", turn(reply="rent.txt holds two words: 2."))
    submit(stack, [Task(role="worker", prompt="How many words does rent.txt have?")])
    wait_history(stack, lambda h: ("assistant", "rent.txt holds two words: 2.") in h,
                 message="a report telling the number its results give")
    llm.script("worker", turn(write_file={"path": "a.txt", "content": "hi"}),
               turn(submit_result={"status": "done", "result": {"text": "a.txt is written."}}))
    llm.script("teller", turn(reply="我把问候写进了 a.txt。"))  # asked in Chinese: the model's
    submit(stack, [Task(role="worker", prompt="把 hi 写进 a.txt。")])  # no number to tell
    wait_history(stack, lambda h: ("assistant", "我把问候写进了 a.txt。") in h,
                 message="a report of no number")


def test_a_report_giving_an_account_of_a_run_its_results_do_not_is_told_in_the_results_words(
        llamacpp, stack, llm):
    """The 0.5B model told an empty file written as an earlier failure, its file's name put
    in: "That failed: favorite_color.txt is not in the work directory ... What its run did:
    it made no call, and favorite_color.txt is not in the work directory"."""
    llm.script("worker", turn(write_file={"path": "teal.txt", "content": ""}),
               turn(submit_result={"status": "done", "result": {"text": "teal.txt is empty."}}))
    llm.script("teller", turn(reply="That failed: teal.txt is not there. What its run did: it "
                                    "made no call, and teal.txt is not in the work directory"))
    llm.default("teller", turn(reply="Done."))
    submit(stack, [Task(role="worker", prompt="Create an empty file teal.txt.")])
    told = "teal.txt is empty. What its run did: wrote teal.txt (0 bytes)"
    wait_history(stack, lambda h: ("assistant", told) in h, message="the results' words")
    assert not any("failed" in reply for reply in _replies(stack))
    llm.script("worker", turn(write_file={"path": "red.txt", "content": "red"}),
               turn(submit_result={"status": "done", "result": {"text": "red.txt is written."}}))
    llm.script("teller", turn(reply="Done. What its run did: wrote red.txt (3 bytes)"))
    submit(stack, [Task(role="worker", prompt="Write red into red.txt.")])  # its own account:
    wait_history(stack, lambda h: ("assistant", 'red.txt is written. What its run did: wrote '
                                                'red.txt (3 bytes): "red"') in h,
                 message="the results' words")  # ended where it began, told as they are


def test_a_report_with_an_earlier_reports_sentences_its_results_do_not_say_is_told_as_they_say(
        llamacpp, stack, llm):
    """The 1.5B model reported a date written with its report before it, word for word; and
    another "The task was completed." with two sentences of earlier reports after it, and no
    count."""
    earlier = "The water reminder is canceled. What its run did: canceled task-3b61."
    stack.conversation.append(Message(role="assistant", text=earlier))
    llm.script("worker", turn(write_file={"path": "date.txt", "content": "2026-11-29"}),
               turn(submit_result={"status": "done",
                                   "result": {"text": "date.txt holds 10 characters."}}))
    llm.script("teller", turn(reply="I wrote date.txt. " + earlier))
    submit(stack, [Task(role="worker", prompt="Write the date into date.txt.")])
    told = ('date.txt holds 10 characters. What its run did: wrote date.txt (10 bytes): '
            '"2026-11-29"')
    wait_history(stack, lambda h: ("assistant", told) in h, message="the results' words")
    assert _replies(stack).count(earlier) == 1  # the earlier report only
    done = turn(submit_result={"status": "done", "result": {"text": "Drink some water."}})
    llm.script("worker", done, done)
    llm.script("teller", turn(reply="Drink some water."), turn(reply="Drink some water."))
    for times in (1, 2):  # a reminder's words, said again as its results say them
        submit(stack, [Task(role="worker", prompt="Remind the user to drink water.")])
        wait_history(stack, lambda h, n=times: sum(t == "Drink some water." for _r, t in h) == n,
                     message=f"the reminder, {times} times")


@pytest.mark.parametrize(("request_text", "timing", "ok", "again"), [
    ("remove backup.txt", {"at": "02:30", "days": "today"}, True, True),  # in the hour asked
    ("remove backup.txt", {"at": "02:28", "days": "every day"}, True, True),  # the minute asked
    ("remove backup.txt", {"at": "03:00", "days": "today"}, True, False),  # another hour
    ("remind me to stretch every day", {"at": "02:30", "days": "every day"}, True, False),
    ("remind me at 2:30 to stretch", {"at": "02:30", "days": "today"}, True, False),  # named
    ("remind me at 2 to stretch", {"at": "02:00", "days": "today"}, True, False),  # hour named
    # refused (in the past): "list everything in my workspace" at 08:00 today, by the 1.5B
    ("list everything in my workspace", {"at": "01:00", "days": "today"}, False, True),
    ("remind me at 1 to stretch", {"at": "01:00", "days": "today"}, False, False),
    # another task's time, from Active work: "list everything in my workspace" at 07:05
    ("list everything in my workspace", {"at": "04:05", "days": "today"}, True, True),
    ("remind me at 4:05 to stretch", {"at": "04:05", "days": "today"}, True, False),
    ("remove backup.txt", {"at": "04:05", "days": "every day"}, True, False),
])
def test_work_scheduled_at_a_time_the_request_does_not_name_is_found(request_text, timing, ok,
                                                                      again):
    """Shown the hour alone, the 1.5B model made "remove backup.txt" asked at 02:28 once at
    02:30: a time once today in the hour asked or at another task's time, or the minute
    asked, or once today and refused, that the request names neither (nor its hour), is the
    Planner's own."""
    from mimikit.agents.unasked_times import scheduled_now
    from mimikit.llm.record import ToolCallRecord

    call = ToolCallRecord(name="schedule", ok=ok, content="{}", durationMs=1,
                          arguments=json.dumps({"prompt": "Do it.", **timing}))
    shown = "## Active work\n- task-1: scheduled at 2026-12-03 04:05 UTC: Stretch.\n"
    assert (scheduled_now([call], "02:28", request_text, shown) == timing["at"]) is again


def _minute_with_time_left(stack) -> str:
    """The time of day now (HH:MM), at least 15 s before the next minute begins."""
    now = datetime.now(stack.settings.tz)
    if now.second > 45:
        time.sleep(61 - now.second)
        now = datetime.now(stack.settings.tz)
    return f"{now:%H:%M}"


def test_work_scheduled_at_the_minute_shown_as_now_is_planned_again_for_now(
        llamacpp, stack, llm):
    """The 1.5B model made "add a line 'walk the dog' at the end of tasks.md" a daily schedule
    at the minute it was asked (its time line now gives the hour alone; History, the minute):
    such a plan is made again, without work for later; a time the request names, or its
    hour, stands."""
    (stack.settings.work_dir / "tasks.md").write_text("buy milk\n")
    done = {"status": "done", "result": {"text": "Planned."}}
    _minute_with_time_left(stack)

    def daily_at_the_minute_shown(body: dict) -> dict:
        assert re.search(r"; the hour is \d\d \(time zone", body["messages"][1]["content"])
        return turn(unknown="", given="", kind=AT_A_TIME, schedule={
            "prompt": "Add the line 'walk the dog'.",
            "at": f"{datetime.now(stack.settings.tz):%H:%M}", "days": "every day"},
            submit_result=done)

    llm.script("teller", turn(delegate=True, remember=False, reply="I'll add it."))
    llm.script("planner", daily_at_the_minute_shown, turn(
        unknown="", given="", kind="work now", delegate={
            "prompt": "Add a line 'walk the dog' at the end of tasks.md."}, submit_result=done))
    llm.script("worker", turn(append_file={"path": "tasks.md", "content": "walk the dog\n"}),
               turn(submit_result={"status": "done", "result": {"text": "Added."}}))
    llm.default("teller", turn(reply="Added."))
    post_input(stack, "add a line 'walk the dog' at the end of tasks.md")
    wait_for(lambda: [t for t in stack.tasks.with_status("done") if t.role == "worker"],
             message="the Worker task")
    assert (stack.settings.work_dir / "tasks.md").read_text() == "buy milk\nwalk the dog\n"
    first, again = llm.requests_for("planner")
    assert len(again["messages"]) == 2  # made from the start, not resumed after the first
    assert again["messages"][1]["content"].endswith(first["messages"][1]["content"].partition(
        "## User request")[2])
    kinds = {b["properties"]["kind"]["enum"][0] for b in _schema(again)["anyOf"]}
    assert "work now" in kinds and not set(WORK_LATER) & kinds
    assert not [t for t in stack.tasks.with_status("queued", "done") if t.type == "recurring"]
    wait_history(stack, lambda h: any(said.startswith("Added.") for _role, said in h),
                 message="the report")
    at = _minute_with_time_left(stack)
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll set it."))
    llm.script("planner", turn(unknown="", given="", kind=AT_A_TIME, schedule={
        "prompt": "Remind the user to stretch.", "at": at, "days": "every day"},
        submit_result=done))
    post_input(stack, f"every day at {at} remind me to stretch")
    wait_history(stack, lambda h: any(t.startswith("Task created (recurring") for _r, t in h),
                 message="the schedule made")
    assert len(llm.requests_for("planner")) == 3
    at = _minute_with_time_left(stack)  # the hour named, the minute the clock's: it stands
    hour = int(at[:2]) % 12 or 12
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll remind you."))
    llm.script("planner", turn(unknown="", given="", kind=AT_A_TIME, schedule={
        "prompt": "Remind the user to back up the laptop.", "at": at, "days": "friday"},
        submit_result=done))
    post_input(stack, f"remind me every Friday at {hour} o'clock to back up my laptop")
    wait_for(lambda: [t for t in stack.tasks.with_status("queued")
                      if t.type == "recurring" and "laptop" in t.prompt], message="the schedule")
    assert len(llm.requests_for("planner")) == 4


def _calls_offered(body: dict) -> set[str]:
    return {name for branch in _schema(body)["anyOf"] for name in branch["properties"]} - \
        {"check"}


def test_a_workers_first_step_cannot_write_over_a_file_its_task_names(llamacpp, stack, llm):
    """Asked to count the lines of a file that is there, the 1.5B model wrote it anew first:
    the first step of a task naming a file that holds something is offered no
    ``write_file``; the next ones are, as is the first of a task naming an empty file."""
    (stack.settings.work_dir / "shopping.txt").write_text("eggs\nbread\nmilk\n")
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll count them."))
    llm.script("planner",
               turn(delegate={"prompt": "Count the lines of shopping.txt and report them."},
                    submit_result={"status": "done", "result": {"text": "Planned."}}),
               turn(delegate={"prompt": "Write hi into new.txt."},
                    submit_result={"status": "done", "result": {"text": "Planned."}}))
    llm.script("worker", turn(check="", shell={"command": "wc -l shopping.txt"}),
               turn(check="It printed 3.", submit_result={"status": "done",
                                                          "result": {"text": "3 lines."}}),
               turn(check="", write_file={"path": "new.txt", "content": "hi"}),
               turn(check="new.txt is written.", submit_result={"status": "done",
                                                                "result": {"text": "Wrote."}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, "how many lines does shopping.txt have?")
    wait_for(lambda: len(llm.requests_for("worker")) >= 2, message="the counting Worker")
    first, second = (_calls_offered(body) for body in llm.requests_for("worker")[:2])
    assert "write_file" not in first and {"shell", "read_file", "append_file"} <= first
    assert "submit_result" not in first  # a result before anything was run or read
    assert {"write_file", "submit_result"} <= second
    wait_history(stack, lambda h: any(said.startswith("3 lines.") for _role, said in h),
                 message="the report")
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll write it."))
    new = stack.settings.work_dir / "new.txt"
    new.write_text("")  # there, holding nothing: nothing to write over
    post_input(stack, "write hi into new.txt")
    wait_for(lambda: new.read_text() == "hi", message="new.txt written")
    assert "write_file" in _calls_offered(llm.requests_for("worker")[2])


def test_a_reminder_a_schedule_fires_may_be_told_at_once(llamacpp, stack, llm):
    """A reminder is words, no tool: the first step of a task a schedule fired may be its
    result, as that of no other task may."""
    llm.script("worker", turn(check="", submit_result={
        "status": "done", "result": {"text": "Time to stretch."}}))
    daily = Task(type="recurring", prompt="Remind the user to stretch.",
                 schedule=IntervalSchedule(interval=86400))
    stack.tasks.add([daily])  # not armed: its run is sent here as it fires
    [fired] = submit(stack, [Task(role="worker", prompt=daily.prompt, triggerId=daily.id)])
    wait_for(lambda: stack.tasks.require(fired.id).status == "done", message="the reminder")
    assert "submit_result" in _calls_offered(llm.requests_for("worker")[0])


@pytest.mark.parametrize(("request_text", "again"), [
    ("每个工作日早上8点半提醒我打卡", True),  # shares no word with the line it copied
    ("every weekday at 8:30 remind me about the oven", False),  # names what the line does
    ("每个工作日早上8点半提醒我看烤箱，取消旧的", False),  # the plan cancels the line's task
], ids=["copied", "named_by_the_request", "replaced"])
def test_a_plan_that_copies_a_line_of_active_work_is_made_again_without_it(
        llamacpp, stack, llm, request_text, again):
    """Asked "每个工作日早上8点半提醒我打卡" beside an oven reminder in Active work, the 1.5B model
    scheduled "Remind the user to check the oven in 45 minutes." (none without the line)."""
    oven = submit(stack, [Task(type="scheduled", prompt="Remind the user to check the oven.",
                               schedule=RunAtSchedule(runAt=datetime(2030, 1, 2, 3, 4,
                                                                     tzinfo=UTC)))])[0]

    def weekdays(prompt: str) -> dict:
        return turn(unknown="", given="", kind=AT_A_TIME, schedule={
            "prompt": prompt, "at": "08:30", "days": "monday to friday"},
            submit_result={"status": "done", "result": {"text": "Set."}})

    llm.script("teller", turn(delegate=True, remember=False, reply="I'll set it."))
    if "取消" in request_text:  # first the old one canceled, then the new one made
        llm.script("planner", turn(unknown="", given="", kind="cancel work",
                                   cancel_task=oven.id))
    llm.script("planner", weekdays("Remind the user to check the oven."),
               weekdays("提醒我打卡。"))
    llm.default("teller", turn(reply="Set."))
    post_input(stack, request_text)
    made = wait_for(lambda: [t for t in stack.tasks.with_status(*get_args(TaskStatus))
                             if t.type == "recurring"], message="the schedule made")
    assert [t.prompt for t in made] == ["提醒我打卡。" if again else
                                        "Remind the user to check the oven."]
    asked = [body["messages"] for body in llm.requests_for("planner")]
    assert len(asked) == 1 + again + ("取消" in request_text)
    assert f"- {oven.id}: " in asked[0][1]["content"]
    copied = [e for e in stack.events.recent() if e["type"] == "prompt_copied"]
    assert [e["copiedFrom"] for e in copied] == ([oven.id] if again else [])
    if again:  # made from the start, that line left out (not counted as one more either)
        assert len(asked[1]) == 2 and oven.id not in asked[1][1]["content"]
        assert "## Active work" not in asked[1][1]["content"]
        assert asked[1][1]["content"].endswith(request_text)


@pytest.mark.parametrize(("request_text", "prompt", "made"), [
    ("每个工作日早上8点半提醒我打卡", "Remind the user to call Anna.", "每个工作日早上8点半提醒我打卡"),
    ("every weekday at 8:30 remind me to walk the dog", "What is your favorite fruit?",
     "every weekday at 8:30 remind me to walk the dog"),  # an example's question
    ("every weekday at 8:30 remind me to call Anna", "Remind the user to call Anna.",
     "Remind the user to call Anna."),
], ids=["an_examples_prompt", "an_examples_question", "the_requests_own"])
def test_a_task_whose_prompt_is_an_examples_is_given_the_requests_words(
        llamacpp, stack, llm, request_text, prompt, made):
    """Asked "每个工作日早上8点半提醒我打卡", the 0.5B model scheduled "Remind the user to call
    Anna.", the delay example's prompt; asked for a daily reminder to walk the dog, it
    scheduled "What is your favorite fruit?", an example's question."""
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll set it."))
    llm.script("planner", turn(unknown="", given="", kind=AT_A_TIME, schedule={
        "prompt": prompt, "at": "08:30", "days": "monday to friday"},
        submit_result={"status": "done", "result": {"text": "Set."}}))
    llm.default("teller", turn(reply="Set."))
    post_input(stack, request_text)
    scheduled = wait_for(lambda: [t for t in stack.tasks.with_status(*get_args(TaskStatus))
                                  if t.type == "recurring"], message="the schedule made")
    assert [t.prompt for t in scheduled] == [made]
    assert prompt in llm.requests_for("planner")[0]["messages"][0]["content"]  # the example's
