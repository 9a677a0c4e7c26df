"""What a first request would pay, paid ahead of time: in the process, and on the server.

The first streamed chat request of a process is made ahead of time and sent nowhere. The OpenAI
SDK builds what a request needs on first use: the transforms of its parameters
(messages, tools, ``tool_choice``) and the types of the chunks it reads back. Done by the first
message after ``mimikit up`` says "ready", that made it slower than the next ones; so a worker,
while it warms up, streams one chat completion with tools from an in-process transport that
answers like a server would (the ``MockTransport`` of the HTTP library the SDK is built on:
``httpx``, or ``httpx2`` in newer ones): nothing leaves the process.

The roles' system prompts are read into the server's prompt cache (``llm.warming``), once per
start of an instance, by one of its processes, ahead of its runs: a run waits for them before
it begins (``wait_for_prompts``). The role being read is kept under ``llm.warming.READING_KEY``
for ``mimikit status`` and the page, longer than reading one takes: a run waits no longer
than that for a warming whose process died, or that waits for another client's requests.
"""

from __future__ import annotations

import importlib
import json
import logging
import time
from functools import partial
from typing import Any

import openai
from redis.exceptions import RedisError

from mimikit.agents.prompts import system_prompt
from mimikit.exceptions import LLMUnavailable
from mimikit.llm.client import LLMClient
from mimikit.llm.profile import ServerProfile
from mimikit.llm.warming import (
    READ_AT_KEY,
    READING_KEY,
    WARMING_KEY,
    warm_prompt,
    warmable,
)
from mimikit.models import utcnow
from mimikit.roles import CHAT_ROLES
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.agents")

WARMING_LOCK_SECONDS = 600  # one process of an instance warms a server at a time
PROBE_WAIT_SECONDS = 120.0  # what a probe of a model takes, at most, on a CPU
PROBE_POLL_SECONDS = 1.0
PROMPT_READ_SECONDS = 86_400  # how long a run's first request is remembered
READING_SECONDS = 90  # a role's prompt read whole on two CPU cores takes 20-35 s
READING_POLL_SECONDS = 0.25
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


def claim_warming(runtime: Runtime, since: float) -> bool:
    """Whether this process, started at ``since`` (a ``time.time()``), is the one of the
    instance's that reads the roles' prompts into the server's cache (once per start of the
    instance: none has for ``WARMING_LOCK_SECONDS``); its start is kept (``prompts_pending``)."""
    try:
        return bool(runtime.redis.set(runtime.keys.meta(WARMING_KEY), since, nx=True,
                                      ex=WARMING_LOCK_SECONDS))
    except RedisError as error:
        log.info("the LLM server's prompt cache is not warmed: %s", error)
        return False


def warm_server_prompts(runtime: Runtime, client: LLMClient, since: float) -> None:
    """Read the system prompt of each role whose answers are held to a schema into the
    server's cache, where the server keeps what it read, by the process that claimed it
    (``claim_warming``), in the order a request reaches them (Teller, Planner, Worker), each
    unless a run of the role read it after ``since`` (a ``time.time()``: when this process
    started); then note when it ended."""
    try:
        for name in CHAT_ROLES:
            model = runtime.settings.model_for(name)
            profile = _probed(client, model)
            if profile.path != "constrained" or not warmable(profile):
                continue
            began = time.monotonic()
            warmed = warm_prompt(client, model, system_prompt(name)("constrained"),
                                 partial(_read_since, runtime, name, since),
                                 ahead=partial(_reading, runtime, name, utcnow().isoformat()))
            log.info("read %d tokens of the %s prompt into the LLM server's cache in %d "
                     "requests, %.0f s%s", warmed.read, name, warmed.steps,
                     time.monotonic() - began, "" if warmed.whole else " (stopped early)")
            if not warmed.whole:
                break
    except (LLMUnavailable, RedisError) as error:
        log.info("the LLM server's prompt cache is not warmed: %s", error)
    finally:
        _read(runtime)


def _read(runtime: Runtime) -> None:
    """Note that the start's reading ended: ``mimikit up`` says "ready" once it has."""
    try:
        pipe = runtime.redis.pipeline()
        pipe.set(runtime.keys.meta(READ_AT_KEY), time.time())
        pipe.delete(runtime.keys.meta(READING_KEY))
        pipe.execute()
    except RedisError as error:  # "ready" then comes PROMPTS_READY_MAX_SECONDS after launch
        log.info("could not note that the roles' prompts were read: %s", error)


def _reading(runtime: Runtime, role: str, since: str) -> None:
    """Note that the prompt of ``role`` is being read (since ``since``): runs wait for it."""
    runtime.redis.set(runtime.keys.meta(READING_KEY), json.dumps({"role": role, "since": since}),
                      ex=READING_SECONDS)


def wait_for_prompts(runtime: Runtime) -> None:
    """Wait while the instance reads the roles' prompts into the server's cache at its start
    (``warm_server_prompts``), at most ``WARMING_LOCK_SECONDS``."""
    until = time.monotonic() + WARMING_LOCK_SECONDS
    try:
        while runtime.redis.exists(runtime.keys.meta(READING_KEY)) and time.monotonic() < until:
            time.sleep(READING_POLL_SECONDS)
    except RedisError as error:  # the run finds Redis down soon enough; no reason to wait
        log.info("could not see whether the roles' prompts are being read: %s", error)


def prompt_read(runtime: Runtime, role: str) -> None:
    """Note that a run of ``role`` sent its first request (its whole system prompt)."""
    try:
        runtime.redis.set(runtime.keys.meta(f"prompt-read|{role}"), time.time(),
                          ex=PROMPT_READ_SECONDS)
    except RedisError as error:  # the warming may read it again: not worth failing a run
        log.info("could not note that a %s run read its prompt: %s", role, error)


def _read_since(runtime: Runtime, role: str, since: float) -> bool:
    return float(runtime.redis.get(runtime.keys.meta(f"prompt-read|{role}")) or 0) >= since


def _probed(client: LLMClient, model: str) -> ServerProfile:
    """The profile of ``model``, once the probe another process of the instance may be making
    of it is kept to its end, where it learns whether the server reports cached tokens (where
    the roles have models of their own, processes probe them side by side); as it is after
    ``PROBE_WAIT_SECONDS``."""
    until = time.monotonic() + PROBE_WAIT_SECONDS
    profile = client.profile(model)
    while profile.constraint is not None and (not profile.probed or profile.cachedTokens is None) \
            and time.monotonic() < until:
        time.sleep(PROBE_POLL_SECONDS)
        profile = client.profiles.reread(model)
    return profile
