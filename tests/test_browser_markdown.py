"""Markdown in the chat page: CommonMark structure, safe links, model HTML shown as text, and
the copy button of code blocks. Messages are written through the state store, as the agents
write them, and the page shows them from its history load or its live updates."""

from __future__ import annotations

import pytest
from web_helpers import chat_tab, chromium  # noqa: F401

from mimikit.models import Message

pytestmark = pytest.mark.browser

LIST_WITH_CODE = """Steps:

1. Install it:

   ```bash
   pip install mimikit
   ```

2. Start everything:

   ```bash
   mimikit up --port 8787
   ```
"""

MARKUP = [
    "<img src=x onerror=alert(1)>",
    "- item <img src=x onerror=alert(2)>\n- <svg onload=alert(3)>",
    "| a | b |\n|---|---|\n| <script>alert(4)</script> | <iframe src=javascript:alert(5)> |",
    '<a href="javascript:alert(6)">raw link</a>',
    "[written link](javascript:alert(7)) and [data](data:text/html,<script>alert(8)</script>)",
    "```html\n<img src=x onerror=alert(9)>\n```",
    "![picture](javascript:alert(10)) <details open ontoggle=alert(11)>",
]


def show(chat, runtime, *texts: str, role: str = "assistant"):
    """Write ``texts`` as messages, open the page, and return the rendered texts' locator."""
    for text in texts:
        runtime.conversation.append(Message(role=role, text=text))
    page = chat.open()
    rendered = page.locator(f".msg.{role} .msg-text")
    from playwright.sync_api import expect

    expect(rendered).to_have_count(len(texts))
    return rendered


def test_a_list_with_fenced_code_renders_one_list_with_code_blocks_and_no_language_text(
        chat, runtime):
    from playwright.sync_api import expect

    reply = show(chat, runtime, LIST_WITH_CODE).first
    expect(reply.locator("ol")).to_have_count(1)
    items = reply.locator("ol > li")
    expect(items).to_have_count(2)
    expect(items.nth(0).locator("pre > code")).to_have_count(1)
    expect(items.nth(1).locator("pre > code")).to_have_count(1)
    codes = reply.locator("pre > code").evaluate_all("els => els.map(e => e.textContent)")
    assert codes == ["pip install mimikit\n", "mimikit up --port 8787\n"]
    assert reply.locator(":not(pre) > code").count() == 0
    prose = reply.evaluate("""el => {
        const copy = el.cloneNode(true);
        copy.querySelectorAll('pre, .code-copy').forEach((node) => node.remove());
        return copy.textContent;
    }""")
    assert "bash" not in prose and "```" not in prose
    assert prose.split() == ["Steps:", "Install", "it:", "Start", "everything:"]


def test_a_loose_list_stays_one_list(chat, runtime):
    from playwright.sync_api import expect

    reply = show(chat, runtime, "Options:\n\n- alpha\n\n- beta\n\n  more on beta\n\n- gamma").first
    expect(reply.locator("ul")).to_have_count(1)
    expect(reply.locator("ul > li")).to_have_count(3)
    expect(reply.locator("ul > li").nth(1)).to_contain_text("more on beta")


def test_an_autolink_in_angle_brackets_is_a_link_without_the_brackets(chat, runtime):
    from playwright.sync_api import expect

    reply = show(chat, runtime, "See <https://example.com/docs> or www.example.org today.").first
    expect(reply).to_have_text("See https://example.com/docs or www.example.org today.")
    links = reply.locator("a")
    expect(links).to_have_count(2)
    expect(links.first).to_have_attribute("href", "https://example.com/docs")
    expect(links.first).to_have_attribute("rel", "noopener noreferrer")
    expect(links.first).to_have_attribute("target", "_blank")
    expect(links.nth(1)).to_have_attribute("href", "http://www.example.org")


def test_links_are_kept_only_for_http_https_and_mailto(chat, runtime):
    text = ("[site](https://example.com) [mail](mailto:ops@example.com) "
            "[script](javascript:alert(1)) [file](file:///etc/passwd) [page](/api/status) "
            "[vb](vbscript:msgbox(1))")
    reply = show(chat, runtime, text).first
    hrefs = reply.locator("a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert hrefs == ["https://example.com", "mailto:ops@example.com"]
    for written in ("[script](javascript:alert(1))", "[file](file:///etc/passwd)",
                    "[page](/api/status)"):
        assert written in reply.text_content()


def test_html_in_model_output_shows_as_text_and_never_runs(chat, runtime, tmp_path):
    from playwright.sync_api import expect

    replies = show(chat, runtime, *MARKUP)
    page = chat.tab
    expect(replies.nth(0)).to_have_text(MARKUP[0])
    expect(replies.nth(1).locator("li").nth(0)).to_have_text("item <img src=x onerror=alert(2)>")
    expect(replies.nth(2).locator("td").nth(0)).to_have_text("<script>alert(4)</script>")
    expect(replies.nth(3)).to_have_text(MARKUP[3])
    expect(replies.nth(5).locator("pre code")).to_have_text("<img src=x onerror=alert(9)>")
    dangerous = "#messages img, #messages script, #messages svg, #messages iframe, " \
                "#messages details, #messages [onerror], #messages [onload]"
    assert page.locator(dangerous).count() == 0
    hrefs = page.locator("#messages a").evaluate_all("els => els.map(e => e.href)")
    assert not [href for href in hrefs if not href.startswith(("http:", "https:", "mailto:"))]
    page.wait_for_timeout(300)
    assert page.dialogs == []
    page.screenshot(path=str(tmp_path / "markup-as-text.png"), full_page=True)


def test_the_copy_button_copies_the_code_with_the_clipboard_api_and_without_it(chat, runtime):
    from playwright.sync_api import expect

    reply = show(chat, runtime, LIST_WITH_CODE).first
    page = chat.tab
    chat.context.grant_permissions(["clipboard-read", "clipboard-write"],
                                   origin=chat.server.url)
    button = reply.locator(".code-copy").nth(1)
    button.click()
    expect(button).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == "mimikit up --port 8787\n"
    expect(button).to_have_text("Copy")  # back after a moment
    # A page served over plain http to another machine has no navigator.clipboard.
    page.evaluate("""() => {
        Object.defineProperty(navigator, 'clipboard', { value: undefined });
        window.copied = [];
        document.addEventListener('copy', () => window.copied.push(String(getSelection())));
    }""")
    reply.locator(".code-copy").first.click()
    expect(reply.locator(".code-copy").first).to_have_text("Copied")
    assert page.evaluate("window.copied") == ["pip install mimikit\n"]
