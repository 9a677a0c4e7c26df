"""The web app restarted (gracefully, then with ``kill -9``) while a live-update client is
connected to GET /api/events: the client reconnects with Last-Event-ID, as a browser does, and
receives every event written meanwhile, once, in order."""

from __future__ import annotations

import http.client
import json
import os
import signal
import time
from typing import Any

import pytest
from fault_helpers import Background, wait_until
from web_helpers import WebServer

from mimikit.models import Message


class ReconnectingClient(Background):
    """An EventSource in a thread: reconnects after ``retry`` ms with Last-Event-ID."""

    def __init__(self, port: int) -> None:
        super().__init__()
        self.port = port
        self.last_id: str | None = None
        self.retry_ms = 2000
        self.messages: list[str] = []  # message ids, in the order received
        self.connects = 0
        self.offline: list[float] = []  # seconds from each drop to the next open stream
        self._dropped_at: float | None = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except (OSError, http.client.HTTPException):
                pass  # the server went away: wait, then reconnect
            if self._dropped_at is None:
                self._dropped_at = time.monotonic()
            self._stop.wait(self.retry_ms / 1000)

    def _listen(self) -> None:
        headers = {"Accept": "text/event-stream"}
        if self.last_id:
            headers["Last-Event-ID"] = self.last_id
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request("GET", "/api/events", headers=headers)
            response = conn.getresponse()
            if response.status != 200:
                return
            self.connects += 1
            if self._dropped_at is not None:
                self.offline.append(time.monotonic() - self._dropped_at)
                self._dropped_at = None
            self._read(response)
        finally:
            conn.close()

    def _read(self, response: Any) -> None:
        fields: dict[str, str] = {}
        while not self._stop.is_set():
            try:
                raw = response.readline()
            except TimeoutError:
                continue  # quiet: keep-alive comments come every 15 s
            if not raw:
                return  # the stream ended
            line = raw.decode().rstrip("\r\n")
            if line:
                name, _, value = line.partition(":")
                fields[name] = value[1:] if value.startswith(" ") else value
                continue
            self._dispatch(fields)
            fields = {}

    def _dispatch(self, fields: dict[str, str]) -> None:
        if "retry" in fields and fields["retry"].isdigit():
            self.retry_ms = int(fields["retry"])
        if "id" in fields:
            self.last_id = fields["id"]
        if fields.get("event") == "message":
            self.messages.append(json.loads(fields["data"])["id"])


class Writer(Background):
    """Appends a message every ``every`` seconds, straight into the state store."""

    def __init__(self, runtime: Any, every: float = 0.02) -> None:
        super().__init__()
        self.runtime = runtime
        self.every = every
        self.written: list[str] = []

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            message = Message(role="assistant", text=f"live {len(self.written)}")
            self.runtime.conversation.append(message)
            self.written.append(message.id)


def _restart(server: WebServer, sig: int, log_dir: Any, n: int) -> tuple[WebServer, float]:
    """Stop ``server`` with ``sig`` (its whole group) and start a new one on the same port."""
    assert server.process is not None
    os.killpg(server.process.pid, sig)
    server.process.wait(timeout=15)
    down = time.monotonic()
    again = WebServer(log_dir / f"web-{n}.log")
    again.port = server.port
    again.start()
    return again, time.monotonic() - down


@pytest.mark.slow
def test_an_sse_client_misses_no_event_across_web_restarts(runtime, tmp_path, figures):
    server = WebServer(tmp_path / "web-0.log").start()
    client = ReconnectingClient(server.port).start()
    writer = None
    try:
        wait_until(lambda: client.connects == 1, 20, "the client to connect")
        writer = Writer(runtime).start()
        downtimes = []
        for n, sig in enumerate((signal.SIGTERM, signal.SIGKILL), start=1):
            time.sleep(1.0)
            server, down = _restart(server, sig, tmp_path, n)
            downtimes.append(round(down, 1))
            wait_until(lambda n=n: client.connects > n, 20, f"reconnect number {n}")
        time.sleep(1.0)
        writer.stop()
        wait_until(lambda: client.messages[-1:] == writer.written[-1:], 20,
                   "the last event to arrive")
    finally:
        if writer:
            writer.stop()
        client.stop()
        server.stop()

    received, written = client.messages, writer.written
    figures.record("sse across web restarts (SIGTERM, then kill -9)", written=len(written),
                   received=len(received), missed=len(set(written) - set(received)),
                   duplicates=len(received) - len(set(received)), reconnects=client.connects - 1,
                   server_down_s=downtimes,
                   client_offline_s=[round(s, 1) for s in client.offline])
    assert received == written  # all of them, once each, in order
    assert client.connects == 3
