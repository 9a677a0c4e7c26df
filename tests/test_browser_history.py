"""The chat page's history: older messages on scroll, search over history and memory, export.
Messages and memory files are written the way the agents write them (the state store, the
memory folder under the state dir)."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from web_helpers import chat_tab, chromium  # noqa: F401

from mimikit.models import Message, utcnow

pytestmark = pytest.mark.browser
SAME_TIME = 7  # messages per shared createdAt: page boundaries fall inside such groups


def seed(runtime, count: int, special: dict[int, str] | None = None) -> list[str]:
    """``count`` messages, ``SAME_TIME`` at a time sharing one createdAt; returns the ids in
    the server's order (time, then id), which the page must show exactly."""
    start = utcnow() - timedelta(days=1)
    roles = ("user", "assistant", "system")
    for n in range(count):
        text = (special or {}).get(n, f"message {n:03d}")
        runtime.conversation.append(Message(role=roles[n % 3], text=text,
                                             createdAt=start + timedelta(seconds=n // SAME_TIME)))
    return [m.id for m in runtime.conversation.between(None, None)]


def id_of(runtime, text: str) -> str:
    (found,), _scanned = runtime.conversation.search(text, 1, 10_000)
    return found.id


def shown_ids(page) -> list[str]:
    return page.locator("#messages > .msg").evaluate_all("els => els.map(e => e.dataset.id)")


def scroll_to_top_and_wait(page, count_before: int) -> None:
    page.evaluate("document.querySelector('#scroller').scrollTop = 0")
    page.wait_for_function(
        f"document.querySelectorAll('#messages > .msg').length > {count_before}"
        " || !document.querySelector('#history-start').hidden")


def top_of(page, message_id: str) -> float:
    return page.locator(f".msg[data-id='{message_id}']").bounding_box()["y"]


def test_scrolling_up_loads_older_messages_down_to_the_first_each_once(chat, runtime, tmp_path):
    from playwright.sync_api import expect

    order = seed(runtime, 250)
    page = chat.open()
    expect(page.locator("#messages > .msg")).to_have_count(100)
    assert shown_ids(page) == order[-100:]
    expect(page.locator("#history-start")).to_be_hidden()
    page.evaluate("document.querySelector('#scroller').scrollTop = 0")
    expect(page.locator("#messages > .msg")).to_have_count(200)
    assert shown_ids(page) == order[-200:]
    # the view stayed on what the reader saw, far below the top of the longer list
    assert page.evaluate("document.querySelector('#scroller').scrollTop") > 1000
    scroll_to_top_and_wait(page, 200)
    expect(page.locator("#messages > .msg")).to_have_count(250)
    expect(page.locator("#history-start")).to_be_visible()
    expect(page.locator("#history-start")).to_have_text("Beginning of the conversation")
    assert shown_ids(page) == order
    page.screenshot(path=str(tmp_path / "history-start.png"))


def test_loading_older_messages_keeps_the_message_in_view_where_it_was(chat, runtime):
    from playwright.sync_api import expect

    order = seed(runtime, 160)
    page = chat.open()
    expect(page.locator("#messages > .msg")).to_have_count(100)
    # 100 px from the top: close enough to load; the oldest shown message starts 20 px (the
    # scroller's padding) down the list, so 80 px above the view
    page.evaluate("document.querySelector('#scroller').scrollTop = 100")
    expect(page.locator("#messages > .msg")).to_have_count(160)
    expect(page.locator("#history-start")).to_be_visible()
    page.wait_for_timeout(300)
    offset = top_of(page, order[-100]) - page.locator("#scroller").bounding_box()["y"]
    assert abs(offset - (20 - 100)) <= 2, offset
    assert shown_ids(page) == order


def test_a_short_history_shows_its_beginning_at_once(chat, runtime):
    from playwright.sync_api import expect

    order = seed(runtime, 12)
    page = chat.open()
    expect(page.locator("#history-start")).to_be_visible()
    assert shown_ids(page) == order


def write_memory(runtime, name: str, text: str) -> None:
    folder = runtime.settings.state_dir / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")


def search(page, query: str) -> None:
    if not page.locator("#search").is_visible():
        page.click("#search-open")
    page.fill("#search-input", query)
    page.press("#search-input", "Enter")


def test_search_finds_memory_passages_in_chinese_and_in_english(chat, runtime, tmp_path):
    from playwright.sync_api import expect

    write_memory(runtime, "2026-01-28-deploy.md",
                 "上次部署使用了 Cloudflare Workers，遇到了超时问题，最后改成分批发布。\n")
    write_memory(runtime, "2026-01-20-lunch.md",
                 "Lunch with Alice at the noodle place on Fifth Avenue was great.\n")
    runtime.conversation.append(Message(role="user", text="我们上次部署遇到了什么问题？"))
    page = chat.open()
    search(page, "部署 超时")
    hits = page.locator("#search-memory .memory-hit")
    expect(hits.first.locator(".memory-source")).to_have_text("memory/2026-01-28-deploy.md")
    expect(hits.first.locator(".memory-hit-text")).to_contain_text("遇到了超时问题")
    expect(hits).to_have_count(1)
    expect(page.locator("#search-history-note")).to_have_text("No message contains “部署 超时”.")
    page.screenshot(path=str(tmp_path / "search-chinese.png"))
    search(page, "noodle lunch")
    expect(hits.first.locator(".memory-source")).to_have_text("memory/2026-01-20-lunch.md")
    expect(hits.first.locator(".memory-hit-text")).to_contain_text("noodle place on Fifth Avenue")
    expect(hits).to_have_count(1)
    search(page, "部署")
    expect(page.locator("#search-history .search-hit mark")).to_have_text("部署")
    expect(page.locator("#search-history .search-hit")).to_contain_text("我们上次部署遇到了什么问题？")


def test_a_history_hit_in_view_or_further_back_opens_in_the_conversation(chat, runtime):
    from playwright.sync_api import expect

    order = seed(runtime, 300, {10: "The Zephyr release went out", 290: "zephyr is on staging"})
    page = chat.open()
    expect(page.locator("#messages > .msg")).to_have_count(100)
    search(page, "ZEPHYR")
    hits = page.locator("#search-history .search-hit")
    expect(hits).to_have_count(2)
    expect(hits.locator("mark")).to_have_text(["zephyr", "Zephyr"])  # newest first
    hits.first.locator(".search-hit-open").click()
    expect(page.locator("#search")).to_be_hidden()
    recent = page.locator(f".msg[data-id='{id_of(runtime, 'zephyr is on')}']")
    expect(recent).to_have_class(re.compile(r"\bfound\b"))
    expect(recent).to_be_in_viewport()
    search(page, "zephyr")
    hits.nth(1).locator(".search-hit-open").click()
    expect(page.locator("#search")).to_be_hidden()
    old = page.locator(f".msg[data-id='{id_of(runtime, 'The Zephyr')}']")
    expect(old).to_be_in_viewport()
    expect(old.locator(".msg-text")).to_have_text("The Zephyr release went out")
    assert shown_ids(page)[-290:] == order[-290:]  # everything in between, once, in order
    page.evaluate("document.querySelector('#scroller').scrollTop = 0")
    expect(page.locator("#history-start")).to_be_visible()
    assert shown_ids(page) == order


def test_a_history_hit_too_far_back_is_shown_in_the_search_with_its_time(chat, runtime):
    from playwright.sync_api import expect

    seed(runtime, 1200, {4: "the **ancient** note"})
    page = chat.open()
    expect(page.locator("#messages > .msg")).to_have_count(100)
    search(page, "ancient")
    hit = page.locator("#search-history .search-hit")
    expect(hit.locator("time")).to_have_count(1)
    hit.locator(".search-hit-open").click()
    expect(hit.locator(".search-hit-note")).to_contain_text("Too far back")
    expect(hit.locator(".search-hit-full strong")).to_have_text("ancient")
    expect(page.locator("#search")).to_be_visible()
    assert page.locator(f".msg[data-id='{id_of(runtime, 'ancient')}']").count() == 0
    assert len(shown_ids(page)) == len(set(shown_ids(page)))


def test_export_saves_the_conversation_as_markdown_and_as_json(chat, runtime, tmp_path):
    from playwright.sync_api import expect

    order = seed(runtime, 130, {0: "first words", 129: "last words"})
    page = chat.open()
    page.click("#export-menu summary")
    with page.expect_download() as markdown:
        page.click(".export-markdown")
    assert markdown.value.suggested_filename.endswith(".md")
    text = (tmp_path / "export.md")
    markdown.value.save_as(text)
    transcript = text.read_text(encoding="utf-8")
    assert transcript.startswith("# Mimikit conversation") and "130 messages" in transcript
    assert transcript.count("\n## ") == 130
    assert transcript.index("first words") < transcript.index("last words")
    expect(page.locator(".export-json")).to_be_hidden()  # the menu closes on a choice
    page.click("#export-menu summary")
    with page.expect_download() as exported:
        page.click(".export-json")
    assert exported.value.suggested_filename.endswith(".json")
    saved = tmp_path / "export.json"
    exported.value.save_as(saved)
    body = json.loads(saved.read_text(encoding="utf-8"))
    assert [m["id"] for m in body["messages"]] == order and body["count"] == 130
    assert page.locator("#notice").is_hidden()
