"""The first streamed chat request of a process, made ahead of time and sent nowhere.

The OpenAI SDK builds what a request needs on first use: the transforms of its parameters
(messages, tools, ``tool_choice``) and the types of the chunks it reads back. Done by the first
message after ``mimikit up`` says "ready", that made it slower than the next ones; so a worker,
while it warms up, streams one chat completion with tools from an in-process transport that
answers like a server would (the ``MockTransport`` of the HTTP library the SDK is built on:
``httpx``, or ``httpx2`` in newer ones): nothing leaves the process.
"""

from __future__ import annotations

import importlib
import json
import logging
from typing import Any

import openai

log = logging.getLogger("mimikit.agents")

WARM_URL = "http://warm-up.invalid/v1"
_DELTAS: list[dict[str, Any]] = [
    {"role": "assistant", "content": ""},
    {"content": "Hello"},
    {"tool_calls": [{"index": 0, "id": "call_warm", "type": "function",
                     "function": {"name": "reply", "arguments": ""}}]},
    {"tool_calls": [{"index": 0, "function": {"arguments": "{\"text\": \"hi\"}"}}]},
]


def _chunk(delta: dict[str, Any] | None, finish: str | None = None,
           usage: dict[str, int] | None = None) -> bytes:
    body: dict[str, Any] = {"id": "chatcmpl-warm", "object": "chat.completion.chunk",
                            "created": 0, "model": "warm-up",
                            "choices": [] if delta is None else
                            [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return f"data: {json.dumps(body)}\n\n".encode()


def _http_library() -> Any:
    """The HTTP client library the SDK's default client is built on."""
    base = next(cls for cls in openai.DefaultHttpxClient.__mro__ if cls.__name__ == "Client")
    return importlib.import_module(base.__module__.split(".")[0])


def _stream() -> bytes:
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    return b"".join([*(_chunk(delta) for delta in _DELTAS), _chunk({}, "tool_calls"),
                     _chunk(None, usage=usage), b"data: [DONE]\n\n"])


def warm_streaming(tools: list[dict[str, Any]]) -> int:
    """Stream one answer offering ``tools`` through the SDK, from the in-process transport;
    returns how many chunks were read (0 when the SDK refused it: the first real request then
    pays for what this did not build)."""
    http_library = _http_library()
    answer = http_library.Response(200, headers={"content-type": "text/event-stream"},
                                   content=_stream())
    transport = http_library.MockTransport(lambda _request: answer)
    with http_library.Client(transport=transport) as http:
        sdk = openai.OpenAI(base_url=WARM_URL, api_key="warm-up", max_retries=0,
                            http_client=http)
        try:
            raw = sdk.chat.completions.with_raw_response.create(  # type: ignore[call-overload]
                model="warm-up", messages=[{"role": "system", "content": "warm"},
                                           {"role": "user", "content": "hi"}],
                tools=tools, tool_choice="required", max_tokens=16, stream=True,
                stream_options={"include_usage": True}, timeout=5)
            return sum(1 for _chunk in raw.parse())
        except openai.OpenAIError as error:
            log.warning("could not warm up the LLM SDK's streaming: %s", error)
            return 0
