"""MCP servers in the page: the status bar names the configured servers, and a Worker's call
of a server's tool shows in the task panel as it happens, with the task's servers in its
detail."""

from __future__ import annotations

import threading

import pytest
from llm_server import delay, tool_call
from mcp_helpers import stdio_entry, write_config
from web_helpers import chat_page, chromium  # noqa: F401

from mimikit.lifecycle.submit import submit
from mimikit.models import Task

pytestmark = pytest.mark.browser


def test_the_status_bar_names_the_servers_and_a_call_shows_live(page, stack, llm):
    from playwright.sync_api import expect

    expect(page.locator("#status-mcp")).to_be_hidden()  # none configured
    write_config(stack, {"secrets": stdio_entry(description="Secret words by seed")})
    page.reload()
    pill = page.locator("#status-mcp")
    expect(pill).to_have_text("MCP · secrets")
    expect(pill).to_have_attribute("data-state", "ok")
    assert "Secret words by seed" in (pill.get_attribute("title") or "")
    seen = threading.Event()  # the run ends once the page has shown its call live

    def finish_once_seen(_body):
        seen.wait(30)
        return tool_call("submit_result", status="done", resultType="text",
                         result={"text": "word-42"})

    llm.script("worker", delay(0.5, tool_call("secrets__secret_word", seed=6)),
               finish_once_seen)
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="the secret word", title="Secret", mcp=["secrets"])])[0]
    item = page.locator(f".group-running .task[data-id='{task.id}']")
    expect(item.locator(".task-step")).to_contain_text("secrets__secret_word", timeout=20_000)
    assert stack.tasks.require(task.id).status == "running"
    item.locator(".task-open").click()
    expect(page.locator("#task-live .live-step[data-kind=tool]")).to_contain_text("word-42")
    seen.set()
    expect(page.locator(".detail-mcp")).to_have_text("secrets")
    write_config(stack, {"secrets": {"command": ""}})
    page.reload()
    expect(page.locator("#status-mcp")).to_have_text("MCP config invalid")
    expect(page.locator("#status-mcp")).to_have_attribute("data-state", "down")
