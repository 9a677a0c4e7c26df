"""One attempt at a chat request, as the server is asked it: the request's options from the
server's profile (held to a schema, or with tools and the ``tool_choice`` it holds to), the
request itself, streamed where the server streams, and what a refusal teaches the profile."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from mimikit.exceptions import LLMUnavailable
from mimikit.llm import choice
from mimikit.llm.completion import Completion, ToolCall
from mimikit.llm.failures import Retryable, status_failure
from mimikit.llm.profile import CONSTRAINTS, ServerProfile
from mimikit.llm.profiles import Profiles
from mimikit.llm.responses import NotACompletion, cause, completion_of, detail
from mimikit.llm.slots import wait_for_slot
from mimikit.llm.sse import events
from mimikit.llm.streaming import PastDeadline, Reading, read_stream

logger = logging.getLogger("mimikit.llm")
# Small models often write their answer (or call), then blank lines until ``max_tokens``: the
# server stops them at this run of newlines instead.
BLANK_LINES_STOP = "\n\n\n\n\n\n"
# One that runs on past its answer writes its next input the way the Teller is shown it
# (``agents.inbox_view``: the time line, ``agents.now.OPENING``, then the inputs' heading):
# the server stops it there.
NEXT_TURN_STOPS = ("\nToday is ", "\n## Pending inputs")
# The temperature of an answer held to a schema when none is set: greedy.
GREEDY = 0.0
# Words of a 400 answer that refuse the schema an answer was to be held to.
REFUSED_SCHEMA = ("response_format", "json_schema", "schema", "grammar")
# Servers that say how busy their slots are (``llm.slots``): a request waits for a free one.
SAYS_HOW_BUSY = frozenset({"llama.cpp server"})


class LLMDeadline(LLMUnavailable):
    """Raised when the caller's deadline passes during a request or while waiting to retry."""


class ConstraintRefused(Exception):
    """Raised when a server refused a request held to a schema: its profile no longer says it
    constrains, and the caller asks again on the native path."""


def request_options(profile: ServerProfile, temperature: float | None, *,
                    max_tokens: int | None, schema: dict[str, Any] | None,
                    tools: list[dict[str, Any]] | None, tool_choice: Any) -> dict[str, Any]:
    """What a request is sent besides its messages: held to ``schema`` where the server holds
    answers to one (and then greedy unless ``temperature`` is set), else offered ``tools``."""
    options: dict[str, Any] = {"max_tokens": max_tokens} if max_tokens else {}
    if schema is not None and profile.constraint in CONSTRAINTS:
        options.update(CONSTRAINTS[profile.constraint](schema))
        options["temperature"] = GREEDY if temperature is None else temperature
    else:
        if temperature is not None:
            options["temperature"] = temperature
        options.update({key: value for key, value in (("tools", tools),
                                                      ("tool_choice", tool_choice)) if value})
    options["stop"] = [BLANK_LINES_STOP, *NEXT_TURN_STOPS]
    return options


class Transport:
    """The attempts of one client: ``streams`` is False once its server answered a streamed
    request whole (it is then asked whole)."""

    def __init__(self, url: Callable[[], str], timeout: float, profiles: Profiles) -> None:
        self._url, self.timeout, self.profiles = url, timeout, profiles
        self.streams = True

    @property
    def url(self) -> str:
        return self._url()

    def attempt(self, sdk: openai.OpenAI, model: str, messages: list[dict[str, Any]],
                 asked: dict[str, Any], deadline: float | None,
                 on_text: Callable[[str], None] | None, reading: Reading) -> Completion:
        """One request, sent once the server has a free slot where it says (the wait is not
        the request's: ``Completion.waited``)."""
        waited = 0.0
        if self.profiles.get(model).server in SAYS_HOW_BUSY:
            waited = wait_for_slot(self.url, sdk.api_key, deadline)
        completion = self._send(sdk, model, messages, asked,
                                None if deadline is None else deadline + waited, on_text,
                                reading)
        completion.waited = waited
        return completion

    def _send(self, sdk: openai.OpenAI, model: str, messages: list[dict[str, Any]],
              asked: dict[str, Any], deadline: float | None,
              on_text: Callable[[str], None] | None, reading: Reading) -> Completion:
        profile = self.profiles.get(model)
        options = choice.sent(asked, profile)
        timeout = self.timeout
        if deadline is not None:
            timeout = max(min(timeout, deadline - time.monotonic()), 0.05)
        try:
            if on_text is not None and self.streams:
                streamed = self._streamed(sdk, model, messages, timeout, options, on_text,
                                          deadline, reading)
                if streamed is not None:
                    return streamed
            response = sdk.chat.completions.create(
                model=model, messages=messages, timeout=timeout, **options  # type: ignore[arg-type]
            )
        except openai.APITimeoutError:
            raise Retryable(f"the LLM at {self.url} did not answer within {timeout:g} s",
                             answered=False) from None
        except openai.APIConnectionError as error:
            raise Retryable(
                f"cannot reach the LLM at {self.url}: {cause(error)}; set MIMIKIT_LLM_BASE_URL",
                answered=False) from None
        except openai.BadRequestError as error:
            if self._refused(asked, detail(error), profile):
                return self._send(sdk, model, messages, asked, deadline, on_text, reading)
            raise status_failure(self.url, error, model) from None
        except openai.APIStatusError as error:
            raise status_failure(self.url, error, model) from None
        except json.JSONDecodeError as error:
            raise Retryable(f"the LLM at {self.url} answered with malformed JSON "
                             f"({error.msg} at position {error.pos})") from None
        if isinstance(response, str):  # a body that is not JSON at all (e.g. a proxy page)
            raise Retryable(f"the LLM at {self.url} answered with a body that is not JSON: "
                             f"{response[:80]!r}")
        return self._parse(response)

    def _refused(self, asked: dict[str, Any], said: str, profile: ServerProfile) -> bool:
        """A request the server refused (400): True to ask again as the profile now says;
        ``ConstraintRefused`` when it refused the schema the answer was to be held to."""
        if "response_format" in asked and any(word in said.lower() for word in REFUSED_SCHEMA):
            self.profiles.learn(profile, f"refused a schema: {said[:120]}", constraint=None)
            raise ConstraintRefused(said)
        return choice.refused(asked, said, profile)

    def _parse(self, response: Any) -> Completion:
        try:
            return completion_of(response)
        except NotACompletion as error:
            raise Retryable(f"the LLM at {self.url} answered with a body that is not a chat "
                             f"completion ({error})") from None

    def _streamed(self, sdk: openai.OpenAI, model: str, messages: list[dict[str, Any]],
                  timeout: float, options: dict[str, Any], on_text: Callable[[str], None],
                  deadline: float | None, reading: Reading) -> Completion | None:
        """One streamed request of ``options`` (as the server is sent them); a server that
        answers it whole is not asked to stream again (its whole answer is used); None when it
        refused the request as streamed."""
        try:
            raw = sdk.chat.completions.with_raw_response.create(  # type: ignore[call-overload]
                model=model, messages=messages, timeout=timeout,
                stream=True, stream_options={"include_usage": True}, **options)
        except openai.BadRequestError as error:
            if "tool_choice" in detail(error).lower() or "response_format" in options:
                raise  # refused for what was asked, not for streaming
            self.streams = False  # e.g. no stream_options here: ask again, unstreamed
            return None
        if "text/event-stream" not in raw.headers.get("content-type", ""):
            self.streams = False
            raw.http_response.read()
            return self._parse(ChatCompletion.model_validate(raw.http_response.json()))
        stream = events(raw.http_response)  # each chunk as decoded JSON, read to the end
        try:
            found = read_stream(stream, on_text, deadline, reading.names, reading.text_field,
                                reading.schema)
        except PastDeadline as late:
            stream.close()
            raise LLMDeadline(f"the LLM at {self.url} was still answering when the run's "
                              f"deadline passed ({late.received} characters received)") from None
        if found is None:
            raise Retryable(f"the LLM at {self.url} ended its streamed answer empty")
        if found.looped or found.ended:
            stream.close()  # the server stops writing what is not read
        if found.looped:
            logger.info("the LLM at %s went round in a loop: its answer ends where it began",
                        self.url)
        calls = [ToolCall(id=i, name=n, arguments=a) for i, n, a in found.calls]
        completion = Completion.of(found.content, calls, found.usage, found.finish_reason)
        completion.written, completion.usage_streamed = found.written, found.usage_sent
        return completion
