"""Reading what an OpenAI-compatible server answered: a completion, its token usage (counted
here when the server sends none), the reason of an error, and how long it asks to wait."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import openai

from mimikit.llm.completion import Completion, ToolCall
from mimikit.models import Usage
from mimikit.tokens import estimate_tokens


class NotACompletion(Exception):
    """Raised when a 200 answer is not a chat completion (the client retries it)."""


def completion_of(response: Any) -> Completion:
    """The ``Completion`` of a (non-streamed) chat completion.

    Raises:
        NotACompletion: The answer has no choices or the wrong shape.
    """
    if not getattr(response, "choices", None):
        raise NotACompletion(f"no choices: {str(response)[:200]}")
    try:
        choice = response.choices[0]
        message = choice.message
        calls = [ToolCall(id=call.id, name=call.function.name,
                          arguments=call.function.arguments or "")
                 for call in (message.tool_calls or [])
                 if getattr(call, "function", None) is not None]
        usage = usage_of(response.usage, getattr(response, "timings", None))
        return Completion.of(message.content, calls, usage, choice.finish_reason)
    except (AttributeError, TypeError, IndexError, KeyError) as error:
        # The SDK builds its objects without validation: a wrong shape shows up only here.
        raise NotACompletion(f"{type(error).__name__}: {error}") from None


def usage_of(raw: Any, timings: Any = None) -> Usage:
    """The token counts the server sent (zeros when none), with the prompt tokens it served
    from its cache: ``prompt_tokens_details.cached_tokens`` (OpenAI-style servers) or
    llama-server's ``timings.cache_n``."""
    if raw is None:
        return Usage(cachedTokens=_cache_n(timings))
    details = _field(raw, "prompt_tokens_details")
    cached = _field(details, "cached_tokens") or _cache_n(timings)
    return Usage(promptTokens=_field(raw, "prompt_tokens") or 0,
                 completionTokens=_field(raw, "completion_tokens") or 0,
                 totalTokens=_field(raw, "total_tokens") or 0, cachedTokens=cached or 0)


def _cache_n(timings: Any) -> int:
    value = _field(timings, "cache_n")
    return int(value) if isinstance(value, int | float) else 0


def _field(value: Any, name: str) -> Any:
    """Field ``name`` of a decoded JSON object or of the SDK's object for it (None if none)."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def with_estimate(completion: Completion, messages: list[dict[str, Any]],
                  tools: list[dict[str, Any]] | None) -> Completion:
    """``completion`` with its usage counted here (and marked ``estimated``) when the server
    sent none, so budgets and caps apply either way."""
    if completion.usage.totalTokens:
        return completion
    prompt = estimate_tokens(json.dumps(messages, ensure_ascii=False)
                             + json.dumps(tools or [], ensure_ascii=False))
    answer = estimate_tokens((completion.content or "") + "".join(
        call.name + call.arguments for call in completion.tool_calls))
    completion.usage = Usage(promptTokens=prompt, completionTokens=answer,
                             totalTokens=prompt + answer, estimated=True,
                             cachedTokens=completion.usage.cachedTokens)
    return completion


def cause(error: Exception) -> str:
    """The innermost readable reason of a connection error (e.g. 'connection refused')."""
    reason: BaseException = error
    while reason.__cause__ is not None or reason.__context__ is not None:
        reason = reason.__cause__ or reason.__context__  # type: ignore[assignment]
    text = str(reason) or type(reason).__name__
    if "refused" in text.lower():
        return "connection refused"
    return text


def detail(error: openai.APIStatusError) -> str:
    """What the server said of an error answer."""
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        return str(inner)
    return error.message or "no details"


def server_delay(headers: Any) -> float | None:
    """The wait the server asks for: ``retry-after-ms`` (milliseconds), else ``Retry-After``
    (seconds, or an HTTP date); None when it names none or nothing readable."""
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    seconds = _number(value)
    if seconds is not None or not value:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return (when - datetime.now(UTC)).total_seconds()


def _number(value: str | None) -> float | None:
    """A finite float from a header value, else None."""
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


_SAMPLE_CALL = {"id": "call", "type": "function", "function": {"name": "reply", "arguments": "{}"}}
_SAMPLE_USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
SAMPLE_COMPLETION = {
    "id": "warm", "object": "chat.completion", "created": 0, "model": "warm", "usage": _SAMPLE_USAGE,
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [_SAMPLE_CALL]}}]}
SAMPLE_CHUNK = {
    "id": "warm", "object": "chat.completion.chunk", "created": 0, "model": "warm",
    "usage": _SAMPLE_USAGE, "choices": [{"index": 0, "finish_reason": None, "delta": {
        "role": "assistant", "tool_calls": [{**_SAMPLE_CALL, "index": 0}]}}]}
