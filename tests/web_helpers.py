"""A real ``mimikit web`` process on a free loopback port, a small SSE reader, and the chat page
in headless chromium (Debian's ``/usr/bin/chromium`` driven by Playwright)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from forking import Forked, shared
from processes import ROOT, TESTS, free_port, wait_for


class WebServer:
    """``python -m mimikit web --port P`` with the test environment; killed on ``stop``."""

    def __init__(self, log_path: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.log_path = log_path
        self.extra_env = env or {}
        self.process: Forked | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> WebServer:
        """Start with the environment as it is now (fixtures may have changed it)."""
        env = {**os.environ, **self.extra_env,
               "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)])}
        self.process = shared().start("mimikit", ["web", "--port", str(self.port)], env, ROOT,
                                      self.log_path)
        wait_for(self._ready, timeout=20, message=f"mimikit web on {self.url}")
        return self

    def _ready(self) -> bool:
        assert self.process and self.process.poll() is None, self.log_path.read_text()
        try:
            with urllib.request.urlopen(self.url + "/", timeout=2):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            # The whole group at once: gunicorn's own shutdown waits for open SSE streams.
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def get_json(self, path: str, headers: dict[str, str] | None = None) -> Any:
        request = urllib.request.Request(self.url + path, headers=headers or {})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def post_json(self, path: str, body: Any = None) -> Any:
        data = json.dumps(body if body is not None else {}).encode()
        request = urllib.request.Request(self.url + path, data=data, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


@pytest.fixture
def web_server(runtime, tmp_path: Path) -> Iterator[WebServer]:
    """``mimikit web`` for this test's instance (start it after setting the environment)."""
    server = WebServer(tmp_path / "web.log")
    yield server
    server.stop()


# --- the page in chromium -----------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]


@pytest.fixture(name="browser", scope="module")
def chromium() -> Iterator[Any]:
    """Headless chromium for the tests of one module (import it as a fixture: ``chromium``)."""
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        if os.environ.get("MIMIKIT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} is missing and MIMIKIT_REQUIRE_BROWSER=1: "
                        "install Debian's chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


class ChatTab:
    """A browser tab on one ``mimikit web``, recording dialogs and script errors."""

    def __init__(self, browser: Any, server: WebServer) -> None:
        self.server = server
        self.context = browser.new_context(viewport={"width": 1280, "height": 800},
                                           accept_downloads=True)
        self.context.set_default_timeout(20_000)
        self.tab = self.context.new_page()
        self.tab.dialogs = []
        self.tab.errors = []
        self.tab.on("dialog", lambda dialog: (self.tab.dialogs.append(dialog.message),
                                              dialog.dismiss()))
        self.tab.on("pageerror", lambda error: self.tab.errors.append(str(error)))

    def open(self) -> Any:
        """Load the chat page and wait for its live updates to connect."""
        self.tab.goto(self.server.url + "/")
        self.tab.wait_for_selector("#status-conn[data-state=ok]")
        return self.tab

    def close(self) -> None:
        self.context.close()
        self.server.stop()
        assert self.tab.errors == [], f"script errors on the page: {self.tab.errors}"


@pytest.fixture(name="page")
def chat_page(stack, browser, tmp_path: Path) -> Iterator[Any]:
    """The chat page of a running instance (workers and the scripted LLM), loaded."""
    chat = ChatTab(browser, WebServer(tmp_path / "web.log").start())
    yield chat.open()
    chat.close()


@pytest.fixture(name="chat")
def chat_tab(runtime, browser, tmp_path: Path) -> Iterator[ChatTab]:
    """A tab on ``mimikit web`` without workers, not loaded yet: seed the state, then ``open``."""
    tab = ChatTab(browser, WebServer(tmp_path / "web.log").start())
    yield tab
    tab.close()


class EventStream:
    """Reads ``GET /api/events`` line by line with http.client (a real streaming client)."""

    def __init__(self, port: int, last_event_id: str | None = None, token: str | None = None,
                 timeout: float = 10) -> None:
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.conn.request("GET", "/api/events", headers=headers)
        self.response = self.conn.getresponse()

    def next_event(self, timeout: float = 10) -> dict[str, str]:
        """The next event with a name (comments and bare ``retry`` blocks are skipped)."""
        deadline = time.monotonic() + timeout
        fields: dict[str, str] = {}
        while time.monotonic() < deadline:
            line = self.response.fp.readline().decode().rstrip("\n")
            if line == "":
                if "event" in fields:
                    return fields
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value[1:] if value.startswith(" ") else value
        raise AssertionError(f"no event within {timeout} s")

    def next_of(self, kind: str, timeout: float = 10) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = self.next_event(max(deadline - time.monotonic(), 0.1))
            if event["event"] == kind:
                return event
        raise AssertionError(f"no {kind!r} event within {timeout} s")

    def close(self) -> None:
        self.conn.close()


def commands_running(*argv: str) -> list[int]:
    """Pids of processes whose command line starts with ``argv`` (from /proc)."""
    want = [part.encode() for part in argv]
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline[:len(want)] == want:
            found.append(int(proc.name))
    return found
