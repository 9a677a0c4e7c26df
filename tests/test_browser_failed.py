"""The chat page shows the items the Teller gave up on, with the reason, and tries one again
or dismisses it from its system message or from the side panel (headless chromium against
``mimikit web``, real workers, the scripted LLM)."""

from __future__ import annotations

import pytest
from llm_server import text, tool_call
from processes import wait_for
from web_helpers import chat_page, chromium  # noqa: F401

pytestmark = pytest.mark.browser
BAD = "render this: ⟦0x7f-unreadable⟧"


def chokes(body):
    said = " ".join(m.get("content") or "" for m in body["messages"])
    return text("") if BAD in said else tool_call("reply", text="All good.")


def send(page, words: str) -> None:
    page.fill("#input", words)
    page.press("#input", "Enter")


def test_a_message_that_gave_up_is_tried_again_from_its_system_message(page, stack, llm):
    from playwright.sync_api import expect

    llm.default("teller", chokes)
    send(page, BAD)
    note = page.locator(".msg.system[data-failed]")
    expect(note).to_contain_text("could not be answered")
    expect(page.locator("#thinking")).to_be_hidden()  # the note ends the wait for a reply
    expect(page.locator("#failed .failed-item")).to_have_count(1)
    expect(page.locator("#failed .failed-reason")).to_contain_text("no usable answer")
    llm.default("teller", tool_call("reply", text="Rendered it."))
    note.locator(".failed-retry").click()
    expect(page.locator(".msg.assistant .msg-text", has_text="Rendered it.")).to_be_visible()
    expect(page.locator("#failed")).to_be_hidden()
    expect(note.locator(".failed-retry")).to_have_count(0)


def test_a_message_that_gave_up_is_dismissed_from_the_panel(page, stack, llm):
    from playwright.sync_api import expect

    llm.default("teller", chokes)
    send(page, BAD)
    item = page.locator("#failed .failed-item")
    expect(item).to_have_count(1)
    item.locator(".failed-dismiss").click()
    expect(page.locator("#failed")).to_be_hidden()
    expect(page.locator(".msg.system[data-failed] .failed-dismiss")).to_have_count(0)
    wait_for(lambda: stack.redis.hlen(stack.keys.inbox_failed) == 1, message="it is kept")
    from mimikit.conversation.failed import listing

    assert [record["state"] for record in listing(stack, include_dismissed=True)] == [
        "dismissed"]
