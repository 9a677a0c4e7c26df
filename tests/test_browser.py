"""The chat page in headless chromium against a real stack: ``mimikit web``, Celery workers and
the scripted LLM."""

from __future__ import annotations

import re

import pytest
from llm_server import delay, tool_call
from processes import wait_for
from web_helpers import WebServer, chat_page, chromium, commands_running  # noqa: F401

from mimikit.lifecycle.submit import submit
from mimikit.models import Message, Task
from mimikit.workspace.sandbox import choose_sandbox

pytestmark = pytest.mark.browser
SLEEP_ARG = "41.5"  # an unusual duration, so the test finds only its own sleep process
XSS = "<img src=x onerror=alert(1)>"


def send(page, text: str) -> None:
    page.fill("#input", text)
    page.press("#input", "Enter")


def assistant_text(page, text: str):
    return page.locator(".msg.assistant .msg-text", has_text=text)


def test_a_typed_message_gets_the_teller_reply_without_a_reload(page, llm, tmp_path):
    from playwright.sync_api import expect

    llm.script("teller", delay(1.5, tool_call("reply", text="Hello! I can **help**.")))
    page.evaluate("window.__sameDocument = true")
    send(page, "hi there")
    expect(page.locator(".msg.user .msg-text")).to_have_text("hi there")
    expect(page.locator("#input")).to_have_value("")
    expect(page.locator("#thinking")).to_be_visible()
    reply = page.locator(".msg.assistant").last
    expect(reply.locator(".msg-text strong")).to_have_text("help")
    expect(page.locator("#thinking")).to_be_hidden()
    usage = reply.locator(".msg-usage")
    expect(usage).to_have_text(re.compile(r"^[\d,]+ tokens · [\d.]+ (ms|s)$"))
    expect(reply.locator(".msg-meta time")).to_have_count(1)
    assert page.evaluate("window.__sameDocument") is True
    expect(page.locator("#status-llm")).to_have_attribute("data-state", "ok")
    expect(page.locator("#status-workers")).to_contain_text("2 workers")
    sandbox = choose_sandbox("auto")
    network = "network on" if sandbox.kind == "landlock" and sandbox.abi < 4 else "network off"
    expect(page.locator("#status-sandbox")).to_have_text(
        f"Sandbox · {sandbox.label} · {network}" if sandbox.kind else "No sandbox")
    page.screenshot(path=str(tmp_path / "chat-desktop.png"), full_page=True)
    page.set_viewport_size({"width": 375, "height": 740})
    page.screenshot(path=str(tmp_path / "chat-phone.png"))
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert page.errors == []


def test_a_pending_question_option_button_answers_it(page, llm, tmp_path):
    from playwright.sync_api import expect

    llm.script("teller", tool_call("ask_user", question="Deploy to **staging** or production?",
                                   options=["staging", "production"], timeout=600))
    llm.script("teller", tool_call("reply", text="Deploying to staging."))
    send(page, "deploy it")
    card = page.locator("#question")
    expect(card).to_be_visible()
    expect(page.locator("#question-text strong")).to_have_text("staging")
    expect(page.locator("#question-expiry")).to_have_text(re.compile(r"expires in (9|10):\d\d"))
    expect(page.locator(".question-option")).to_have_text(["staging", "production"])
    page.screenshot(path=str(tmp_path / "question.png"))
    page.locator(".question-option", has_text="staging").click()
    expect(card).to_be_hidden()
    expect(assistant_text(page, "Deploying to staging.")).to_be_visible()
    expect(page.locator(".msg.user .msg-text")).to_have_text(["deploy it", "staging"])
    assert any("from the user: staging" in body["messages"][1]["content"]
               for body in llm.requests_for("teller"))


def test_a_running_task_shows_in_the_panel_and_its_cancel_button_stops_it(page, stack, llm,
                                                                           tmp_path):
    from playwright.sync_api import expect

    llm.script("worker", tool_call("shell", command=f"sleep {SLEEP_ARG}", timeout=120))
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="wait for the build", title="Wait a while")])[0]
    item = page.locator(f".group-running .task[data-id='{task.id}']")
    expect(item).to_be_visible()
    expect(item.locator(".task-title")).to_have_text("Wait a while")
    wait_for(lambda: commands_running("sleep", SLEEP_ARG), timeout=20, message="sleep to run")
    page.screenshot(path=str(tmp_path / "running-task.png"))
    item.locator(".task-cancel").click()
    expect(page.locator(f".group-recent .task[data-id='{task.id}']")).to_have_attribute(
        "data-status", "canceled")
    assert stack.tasks.get(task.id).status == "canceled"
    wait_for(lambda: not commands_running("sleep", SLEEP_ARG), timeout=10,
             message="the sleep to be gone")
    expect(page.locator(".msg.system .msg-text", has_text="Task canceled: Wait a while")
           ).to_be_visible()


def test_a_task_opens_its_detail_with_prompt_result_history_and_transcript(page, stack, llm):
    from playwright.sync_api import expect

    for number in (1, 2, 3):  # what its listing shows holds the number its result gives
        (stack.settings.work_dir / f"part-{number}.txt").write_text("x")
    llm.script("worker", tool_call("list_files", path="."),
               tool_call("submit_result", status="done", resultType="text",
                         result={"text": "Counted **3** files"}))
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="Count the files in the work dir", title="Count files")])[0]
    wait_for(lambda: stack.tasks.get(task.id).status == "done", timeout=30,
             message="the task to finish")
    item = page.locator(f".task[data-id='{task.id}'][data-status=done]")
    item.locator(".task-open").click()
    detail = page.locator("#task-detail")
    expect(detail).to_be_visible()
    body = detail.locator("#task-detail-body")
    section = lambda title: body.locator(".detail-section").filter(  # noqa: E731
        has=page.get_by_role("heading", name=title, exact=True))
    expect(section("Prompt")).to_contain_text("Count the files in the work dir")
    expect(section("Result").locator("strong")).to_have_text("3")
    history = section("History").locator(".timeline")
    expect(history).to_contain_text("task_started")
    expect(history).to_contain_text("task_done")
    runs = body.locator(".run")
    expect(runs.first).to_contain_text("list_files")
    expect(runs.first).to_contain_text("submit_result")
    expect(runs.first.locator("summary")).to_contain_text("tokens")


def test_markup_in_messages_renders_as_text_and_no_dialog_fires(page, llm, tmp_path):
    from playwright.sync_api import expect

    llm.script("teller", tool_call("reply", text=XSS))
    send(page, "<script>alert(2)</script> hi")
    expect(assistant_text(page, XSS)).to_have_text(XSS)
    expect(page.locator(".msg.user .msg-text")).to_have_text("<script>alert(2)</script> hi")
    assert page.locator("#messages img, #messages script").count() == 0
    page.reload()  # the history, loaded again, is rendered the same safe way
    expect(assistant_text(page, XSS)).to_have_text(XSS)
    page.wait_for_timeout(500)
    assert page.locator("#messages img, #messages script").count() == 0
    assert page.dialogs == []
    page.screenshot(path=str(tmp_path / "xss.png"))


def test_with_an_api_token_the_page_asks_once_and_keeps_it(runtime, browser, tmp_path):
    from playwright.sync_api import expect

    server = WebServer(tmp_path / "web.log", env={"MIMIKIT_API_TOKEN": "page-token"}).start()
    runtime.conversation.append(Message(role="user", text="kept behind the token"))
    context = browser.new_context(accept_downloads=True)
    context.set_default_timeout(20_000)
    try:
        tab = context.new_page()
        tab.goto(server.url + "/")
        expect(tab.locator("#token-dialog")).to_be_visible()
        tab.fill("#token-input", "page-token")
        tab.click("#token-save")
        expect(tab.locator("#status-conn")).to_have_attribute("data-state", "ok")
        expect(tab.locator("#status-redis")).to_have_attribute("data-state", "ok")
        tab.reload()
        expect(tab.locator("#status-conn")).to_have_attribute("data-state", "ok")
        expect(tab.locator("#token-dialog")).to_be_hidden()
        expect(tab.locator(".msg.user .msg-text")).to_have_text("kept behind the token")
        tab.click("#export-menu summary")  # a download, fetched with the token too
        with tab.expect_download() as download:
            tab.click(".export-markdown")
        saved = tmp_path / "export.md"
        download.value.save_as(saved)
        assert "## User · " in saved.read_text(encoding="utf-8")
        assert "kept behind the token" in saved.read_text(encoding="utf-8")
    finally:
        context.close()
        server.stop()
