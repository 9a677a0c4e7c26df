"""What the Teller is shown beside the conversation, so that it answers what it can see instead
of inventing it: the work that will run later, the names in the work directory, and the facts
the person asked to keep, whatever words a request uses (on the real stack, the scripted
server answering as llama.cpp's server does)."""

from __future__ import annotations

import re

import pytest
from agent_helpers import history, post_input, user_prompt, wait_history
from llm_server import turn
from scheduling_helpers import add_trigger

from mimikit.memory.files import remember
from mimikit.models import IntervalSchedule


def _section(prompt: str, heading: str) -> str:
    """The lines of ``prompt``'s section ``heading`` ('' when it has none)."""
    _before, found, after = prompt.partition(f"## {heading}\n")
    return after.split("\n\n")[0] if found else ""


def test_the_teller_sees_what_is_scheduled_and_what_the_work_directory_holds(
        llamacpp, stack, llm):
    work = stack.settings.work_dir
    (work / "shopping.txt").write_text("eggs\n")
    (work / "photos").mkdir()
    (work / ".env").write_text("SECRET=1\n")
    add_trigger(stack, type="recurring", schedule=IntervalSchedule(cron="0 17 * * 5"),
                prompt="Remind the user to back up their laptop.")
    add_trigger(stack, type="recurring", schedule=IntervalSchedule(interval=7200),
                prompt="Remind the user to drink water.")
    llm.script("teller", turn(delegate=False, remember=False,
                              reply="Every Friday at 17:00: back up your laptop."))
    post_input(stack, "what reminders do I have?")
    wait_history(stack, lambda h: ("assistant", "Every Friday at 17:00: back up your laptop.")
                 in h, message="the reply")
    prompt = user_prompt(llm.requests_for("teller")[0])
    laptop, water = sorted(_section(prompt, "Scheduled").splitlines())  # cron, every
    assert re.fullmatch(r"- recurring cron 0 17 \* \* 5 UTC \(next: Friday \d{4}-\d\d-\d\d "
                        r"17:00\): Remind the user to back up their laptop\.", laptop)
    # an interval as a person says it (shown "every 7200 s", the 1.5B model left it out)
    assert re.fullmatch(r"- recurring every 2 hours \(next: \w+ \d{4}-\d\d-\d\d \d\d:\d\d\): "
                        r"Remind the user to drink water\.", water)
    assert _section(prompt, "Work directory") == "photos/, shopping.txt"  # no state, no secret
    assert llm.requests_for("planner") == []  # answered from what it was shown


def test_an_empty_work_directory_is_said_to_be_empty_and_nothing_scheduled_is_left_out(
        llamacpp, stack, llm):
    llm.script("teller", turn(delegate=False, remember=False, reply="It is empty."))
    post_input(stack, "which files are in the work dir?")
    wait_history(stack, lambda h: ("assistant", "It is empty.") in h, message="the reply")
    prompt = user_prompt(llm.requests_for("teller")[0])
    assert _section(prompt, "Work directory") == "(empty)"
    assert "## Scheduled" not in prompt


def test_a_kept_fact_is_shown_whatever_words_the_request_uses(llamacpp, stack, llm):
    """"when is my birthday?" shares no word with "记住我的生日是5月3日": a search alone does
    not find it, and the 1.5B model promised to ask for the date it had been told."""
    remember(stack.settings.state_dir, "记住我的生日是5月3日")
    remember(stack.settings.state_dir, "The user's favorite editor is vim.", long_term=True)
    llm.script("teller", turn(delegate=False, remember=False, reply="On May 3."))
    post_input(stack, "when is my birthday?")
    wait_history(stack, lambda h: ("assistant", "On May 3.") in h, message="the reply")
    memory = _section(user_prompt(llm.requests_for("teller")[0]), "Memory").splitlines()
    assert [line.split("] ", 1)[1] for line in memory] == [
        "记住我的生日是5月3日", "The user's favorite editor is vim."]
    assert ("assistant", "On May 3.") in history(stack)


def test_asked_what_is_scheduled_the_teller_shows_the_list_below_its_reply(llamacpp, stack,
                                                                          llm):
    """Asked "what reminders do I have?" beside two, the 1.5B model said "I'll list your
    reminders." and nothing more, or named one: where its answer says to show them, the
    runtime lists every one, in the runtime's words."""
    add_trigger(stack, type="recurring", schedule=IntervalSchedule(interval=7200),
                prompt="Remind the user to drink water.")
    add_trigger(stack, type="recurring", schedule=IntervalSchedule(cron="0 9 * * 1"),
                prompt="Remind the user to call the bank.")
    llm.script("teller", turn(delegate=False, remember=False, show="scheduled",
                              reply="I'll list your reminders."))
    post_input(stack, "what reminders do I have?")
    wait_history(stack, lambda h: len(h) >= 3, message="the reply and the list")
    [asked, said, listed] = history(stack)
    assert asked == ("user", "what reminders do I have?")
    assert said == ("assistant", "I'll list your reminders.")
    water, bank = listed[1].splitlines()
    assert listed[0] == "assistant"
    assert re.fullmatch(r"- recurring every 2 hours \(next: \w+ \d{4}-\d\d-\d\d \d\d:\d\d\): "
                        r"Remind the user to drink water\.", water)
    assert re.fullmatch(r"- recurring cron 0 9 \* \* 1 UTC \(next: Monday \d{4}-\d\d-\d\d "
                        r"09:00\): Remind the user to call the bank\.", bank)
    schema = llm.requests_for("teller")[0]["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["delegate", "remember", "show", "reply"]
    assert schema["properties"]["show"]["enum"] == ["nothing", "scheduled", "files"]
    assert llm.requests_for("planner") == []


@pytest.mark.parametrize(("shown", "asked", "reply", "none"), [
    ("scheduled", "我有哪些提醒？", "你的提醒如下：", "目前没有安排任何提醒或任务。"),
    ("files", "我有哪些文件？", "你的文件如下：", "工作目录里没有文件。"),
])
def test_nothing_to_list_is_said_in_the_persons_language(llamacpp, stack, llm, shown, asked,
                                                         reply, none):
    llm.script("teller", turn(delegate=False, remember=False, show=shown, reply=reply))
    post_input(stack, asked)
    wait_history(stack, lambda h: len(h) >= 3, message="the reply and the list")
    assert history(stack)[1:] == [("assistant", reply), ("assistant", none)]


def test_asked_which_files_there_are_the_teller_shows_the_work_directory_below_its_reply(
        llamacpp, stack, llm):
    """Asked to "list everything in my workspace", the 1.5B model handed it over, and the
    Planner scheduled the listing for 15:00 that day: the runtime lists the names."""
    (stack.settings.work_dir / "dentist.txt").write_text("call the dentist")
    (stack.settings.work_dir / "photos").mkdir()
    llm.script("teller", turn(delegate=False, remember=False, show="files",
                              reply="Here are your files:"))
    post_input(stack, "list everything in my workspace")
    wait_history(stack, lambda h: len(h) >= 3, message="the reply and the list")
    assert history(stack)[1:] == [("assistant", "Here are your files:"),
                                  ("assistant", "- dentist.txt\n- photos/")]
    assert llm.requests_for("planner") == []


def test_no_list_is_shown_beside_work_handed_over_which_may_change_it(llamacpp, stack, llm):
    water = add_trigger(stack, type="recurring", schedule=IntervalSchedule(interval=7200),
                        prompt="Remind the user to drink water.")
    llm.script("teller", turn(delegate=True, remember=False, show="scheduled",
                              reply="I'll cancel all your reminders."))
    llm.script("planner", turn(unknown="", given="", kind="answer", submit_result={
        "status": "done", "result": {"text": "Nothing was canceled."}}))
    llm.default("teller", turn(reply="Nothing was canceled."))
    post_input(stack, "cancel all my reminders")
    wait_history(stack, lambda h: ("assistant", "Nothing was canceled.") in h,
                 message="the report")
    replies = [text for role, text in history(stack) if role == "assistant"]
    assert replies == ["I'll cancel all your reminders.", "Nothing was canceled."]
    assert water.prompt not in "\n".join(text for _role, text in history(stack))
