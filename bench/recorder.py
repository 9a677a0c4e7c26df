"""A recording reverse proxy between ``mimikit up`` and a real model server: for every chat
request, the role (the model name's prefix, ``teller-``, ``planner-``, ``worker-``, taken off
before the request goes on), the prompt tokens, those served from the server's cache, the
time to the first token and the whole time.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from mimikit.llm.probe import PROBE_TOKENS

ROLES = ("teller", "planner", "worker")


class Recorder(ThreadingHTTPServer):
    """A reverse proxy to the real server that records each chat request."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Proxy)
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.prefix = parts.path.rstrip("/")
        self.calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{self.prefix}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a stopped run, a closed keep-alive) is not an error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_: Any) -> None:
        return

    def do_GET(self) -> None:  # noqa: N802
        self._forward(b"")

    def do_POST(self) -> None:  # noqa: N802
        self._forward(self.rfile.read(int(self.headers.get("content-length") or 0)))

    def _forward(self, body: bytes) -> None:
        server: Recorder = self.server  # type: ignore[assignment]
        began = time.monotonic()
        role, body = _without_role(body)
        upstream = http.client.HTTPConnection(*server.upstream, timeout=1800)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("host", "content-length")}
        if body:
            headers["Content-Length"] = str(len(body))
        upstream.request(self.command, self.path, body=body or None, headers=headers)
        answer = upstream.getresponse()
        self.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        first, raw = None, b""
        while chunk := answer.read1(65536):
            first = first or time.monotonic()
            raw += chunk
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        if self.command == "POST" and body:
            _note(server, role, json.loads(body), raw, began, first)


def _without_role(body: bytes) -> tuple[str | None, bytes]:
    """The role named by a request's model prefix, and the request without it."""
    if not body:
        return None, body
    request = json.loads(body)
    model = str(request.get("model", ""))
    role, _dash, rest = model.partition("-")
    if role not in ROLES or not rest:
        return None, body
    return role, json.dumps({**request, "model": rest}).encode()


def _note(server: Recorder, role: str | None, request: dict[str, Any], raw: bytes,
          began: float, first: float | None) -> None:
    usage: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    first_text: float | None = None
    text = raw.decode(errors="replace")
    lines = [text] if text.lstrip().startswith("{") else text.splitlines()  # whole, or a stream
    for line in lines:
        data = line.removeprefix("data: ").strip()
        if not data.startswith("{"):
            continue
        event = json.loads(data)
        usage = event.get("usage") or usage
        timings = event.get("timings") or timings
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or choice.get("message") or {}
            if first_text is None and (delta.get("content") or delta.get("tool_calls")):
                first_text = time.monotonic()
    cached = timings.get("cache_n") or (usage.get("prompt_tokens_details") or {}).get(
        "cached_tokens") or 0
    fresh = timings.get("prompt_n")
    prompt = (fresh + cached) if fresh is not None else usage.get("prompt_tokens", 0)
    with server.lock:
        server.calls.append({"role": role, "model": request.get("model"), "prompt": prompt,
                             "constrained": "response_format" in request,
                             "first": _opens_a_run(request), "warm": _warms(request),
                             "cached": cached, "began": began,
                             "firstToken": (first_text or first or began) - began,
                             "seconds": time.monotonic() - began,
                             "system": (request.get("messages") or [{}])[0].get("content")})


def _warms(request: dict[str, Any]) -> bool:
    """Whether a request reads a system prompt, or a history begun anew after one, into the
    server's cache (``llm.warming``): no run's, answered with one token."""
    return request.get("max_tokens") == 1


def _opens_a_run(request: dict[str, Any]) -> bool:
    """Whether a request is a run's first: its role's system prompt and no answer of the
    model in it yet, and not one of the questions that learn what the server can do, nor a
    warming's (nor a verdict: one message, no system prompt)."""
    messages = request.get("messages") or []
    return request.get("max_tokens") != PROBE_TOKENS and not _warms(request) and \
        len(messages) > 1 and \
        messages[0].get("role") == "system" and \
        not any(m.get("role") in ("assistant", "tool") for m in messages)
