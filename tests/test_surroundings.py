"""What the Teller is shown beside the conversation, so that it answers what it can see instead
of inventing it: the work that will run later, the names in the work directory, and the facts
the person asked to keep, whatever words a request uses (on the real stack, the scripted
server answering as llama.cpp's server does)."""

from __future__ import annotations

import re

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
