"""Live work in the page: a task's steps as they happen, a reply as it streams, pausing a
trigger."""

from __future__ import annotations

import time

import pytest
from llm_server import delay, streamed, tool_call
from processes import wait_for
from web_helpers import chat_page, chromium  # noqa: F401

from mimikit.lifecycle.submit import submit
from mimikit.models import IntervalSchedule, Task

pytestmark = pytest.mark.browser


def test_each_step_of_a_slow_task_shows_in_the_panel_before_it_ends(page, stack, llm, tmp_path):
    from playwright.sync_api import expect

    llm.script("worker", delay(1.2, tool_call("list_files")),
               delay(1.2, tool_call("write_file", path="plan.md", content="1. think")),
               delay(1.2, tool_call("read_file", path="plan.md")),
               delay(2.5, tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "planned"})))
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="make a plan", title="Make a plan")])[0]
    item = page.locator(f".group-running .task[data-id='{task.id}']")
    step = item.locator(".task-step")
    seen = []
    for tool in ("list_files", "write_file", "read_file"):
        expect(step).to_contain_text(tool, timeout=15_000)
        seen.append(step.inner_text())
        assert stack.tasks.require(task.id).status == "running"
    item.locator(".task-open").click()
    expect(page.locator("#task-live .live-step[data-kind=tool]")).to_have_count(3)
    page.screenshot(path=str(tmp_path / "live-steps.png"))
    assert stack.tasks.require(task.id).status == "running"
    assert len(set(seen)) == 3


def test_a_streamed_reply_grows_in_pieces_then_is_the_stored_message(page, stack, llm):
    from playwright.sync_api import expect

    text = "Streaming works: this reply arrives in many small pieces, one after another."
    llm.script("teller", streamed(tool_call("reply", text=text), 0.25, 9))
    page.evaluate("""() => {
        window.__pieces = [];
        new MutationObserver(() => {
            const el = document.querySelector('.msg.streaming .msg-text');
            if (el && el.textContent !== window.__pieces.at(-1)) window.__pieces.push(el.textContent);
        }).observe(document.querySelector('#messages'),
                   {childList: true, subtree: true, characterData: true});
    }""")
    page.fill("#input", "tell me something")
    page.press("#input", "Enter")
    expect(page.locator(".msg.assistant:not(.streaming) .msg-text")).to_have_text(text)
    expect(page.locator(".msg.streaming")).to_have_count(0)
    expect(page.locator(".msg.user .msg-bill")).to_contain_text("request: 1 calls")
    pieces = page.evaluate("window.__pieces")
    growing = [p for p in pieces if p and text.startswith(p.strip()) and p.strip() != text]
    assert len(growing) >= 3, pieces
    assert [len(p) for p in growing] == sorted(len(p) for p in growing)


def test_a_paused_trigger_does_not_fire_until_resumed(page, stack, llm, procs):
    from playwright.sync_api import expect

    llm.default("worker", tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "ping"}))
    llm.default("teller", tool_call("reply", text="ok"))
    trigger = submit(stack, [Task(type="recurring", prompt="ping", title="Ping",
                                  schedule=IntervalSchedule(interval=1))])[0]
    procs.beat()
    fired = lambda: [e for e in stack.tasks.log_of(trigger.id)  # noqa: E731
                     if e["type"] == "trigger_fired"]
    wait_for(lambda: len(fired()) >= 1, timeout=20, message="a first firing")
    item = page.locator(f".group-triggers .task[data-id='{trigger.id}']")
    item.locator(".task-pause").click()
    expect(item).to_have_attribute("data-status", "paused")
    time.sleep(1.5)  # a firing already on its way may land right after the pause
    count = len(fired())
    time.sleep(3.0)
    assert len(fired()) == count  # nothing fired while paused
    item.locator(".task-resume").click()
    expect(item).to_have_attribute("data-status", "trigger")
    wait_for(lambda: len(fired()) > count, timeout=20, message="a firing after resuming")


def test_a_trigger_is_edited_from_its_detail_and_a_refusal_is_shown(page, stack, tmp_path):
    from playwright.sync_api import expect

    trigger = submit(stack, [Task(type="recurring", prompt="digest", title="Digest",
                                  schedule=IntervalSchedule(interval=3600))])[0]
    page.locator(f".group-triggers .task[data-id='{trigger.id}'] .task-open").click()
    page.locator(".detail-edit").click()
    page.fill(".trigger-edit input[name=cron]", "every morning")
    page.locator(".edit-save").click()
    expect(page.locator(".trigger-edit .error")).to_contain_text("five fields")
    page.fill(".trigger-edit input[name=cron]", "0 9 * * 1-5")
    page.locator(".edit-save").click()
    expect(page.locator("#task-detail-body")).to_contain_text('"cron": "0 9 * * 1-5"')
    page.screenshot(path=str(tmp_path / "trigger-edited.png"))
    assert stack.tasks.require(trigger.id).schedule.cron == "0 9 * * 1-5"
