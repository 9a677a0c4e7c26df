"""The LLM client: one chat call over any OpenAI-compatible API, with our own retry policy."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from mimikit.config import DEFAULT_LLM_BASE_URL, secret_text
from mimikit.exceptions import LLMAway, LLMStopped, LLMUnavailable
from mimikit.llm import choice
from mimikit.llm.abort import http_client, pause, stopped
from mimikit.llm.attempts import (
    LLMDeadline,
    Transport,
    request_options,
)
from mimikit.llm.completion import Completion, TextField
from mimikit.llm.failures import Retryable, status_failure
from mimikit.llm.profile import ServerProfile
from mimikit.llm.profiles import ProfileKeeper, Profiles
from mimikit.llm.responses import (
    SAMPLE_CHUNK,
    SAMPLE_COMPLETION,
    cause,
    with_estimate,
)
from mimikit.llm.streaming import Reading

logger = logging.getLogger("mimikit.llm")

NOT_CONFIGURED = (
    "no LLM is configured: set MIMIKIT_LLM_BASE_URL (any OpenAI-compatible server) "
    "or MIMIKIT_LLM_API_KEY"
)
RETRY_AFTER_MAX_SECONDS = 60.0
# Each backoff waits a random time between half and all of its exponential step ("equal
# jitter"), so clients that failed together do not retry together.
BACKOFF_JITTER = 0.5
# A server-given wait is honoured, plus up to this fraction more for the same reason.
RETRY_AFTER_JITTER = 0.1


class StreamingClient:
    """A chat client each of whose requests streams its reply text to a sink of its own:
    ``sink_for(n)`` gives the sink of the ``n``-th request (1, 2, ...)."""

    def __init__(self, client: LLMClient, sink_for: Callable[[int], Callable[[str], None]]
                 ) -> None:
        self.client = client
        self.sink_for = sink_for
        self.requests = 0

    def profile(self, model: str) -> ServerProfile:
        return self.client.profile(model)

    def chat(self, model: str, messages: list[dict[str, Any]],
             tools: list[dict[str, Any]] | None = None, deadline: float | None = None, *,
             max_tokens: int | None = None, tool_choice: Any = None,
             schema: dict[str, Any] | None = None, text_field: TextField | None = None,
             retries: int | None = None) -> Completion:
        self.requests += 1
        return self.client.chat(model, messages, tools, deadline=deadline,
                                on_text=self.sink_for(self.requests), max_tokens=max_tokens,
                                tool_choice=tool_choice, schema=schema, text_field=text_field,
                                retries=retries)


class LLMClient:
    """Chat completions over the official ``openai`` SDK, pointed at any compatible base URL.

    What is asked follows the server's profile (``llm.profile``): an answer held to a schema,
    or tools with the ``tool_choice`` the server holds to (``llm.choice``); every answer
    teaches the profile what it shows. Retries 429, 5xx, connection errors, timeouts and
    malformed answers with jittered exponential backoff, waiting at least what the server asks
    for (``retry-after-ms``, else ``Retry-After`` in seconds or as an HTTP date). Running out
    of retries, or a server asking to wait over ``RETRY_AFTER_MAX_SECONDS``, raises ``LLMAway``
    (it is expected back); a refusal that will not change (401, 403, 404, 400) raises
    ``LLMUnavailable``; a request of a run told to stop (``abort``) ends at once with
    ``LLMStopped``.
    """

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        rng: random.Random | None = None,
        keeper: ProfileKeeper | None = None,
        temperature: float | None = None,
    ) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._random = rng or random.Random()
        self._sdk: openai.OpenAI | None = None
        self.profiles = Profiles(lambda: self.url, self.model_owners, keeper)
        self.transport = Transport(lambda: self.url, timeout, self.profiles)
        self.temperature = temperature

    @classmethod
    def from_settings(cls, settings: Any, keeper: ProfileKeeper | None = None) -> LLMClient:
        """Build a client from ``Settings`` (``llm_base_url``, ``llm_api_key``, timeouts)."""
        return cls(
            base_url=settings.llm_base_url,
            api_key=secret_text(settings.llm_api_key),
            timeout=settings.llm_timeout,
            max_retries=settings.llm_retries,
            keeper=keeper,
            temperature=settings.llm_temperature,
        )

    @property
    def configured(self) -> bool:
        """True when a base URL or an API key is known."""
        return bool(self.base_url or self.api_key)

    @property
    def url(self) -> str:
        """The base URL requests go to (for messages)."""
        return (self.base_url or DEFAULT_LLM_BASE_URL).rstrip("/")

    def profile(self, model: str) -> ServerProfile:
        """What the server does for ``model`` (learned once, kept by the keeper)."""
        return self.profiles.get(model)

    def _client(self) -> openai.OpenAI:
        if not self.configured:
            raise LLMUnavailable(NOT_CONFIGURED)
        if self._sdk is None:
            # The SDK's own retries are off: ours honour the deadline and say what failed.
            self._sdk = openai.OpenAI(
                base_url=self.url,
                api_key=self.api_key or "not-needed",
                timeout=self.timeout,
                max_retries=0,
                http_client=http_client(self.timeout),  # a stopped run can cut its request
            )
        return self._sdk

    def warm(self) -> None:
        """Build what the first request would otherwise build, sending nothing: the SDK
        client with its connection pool and TLS context, the chat resource (imported on first
        use), the platform headers and the response types' validators."""
        if not self.configured:
            return
        sdk = self._client()
        _ = sdk.chat.completions.with_raw_response, sdk.default_headers
        ChatCompletion.model_validate(SAMPLE_COMPLETION)
        ChatCompletionChunk.model_validate(SAMPLE_CHUNK)

    def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        deadline: float | None = None,
        on_text: Callable[[str], None] | None = None,
        *,
        max_tokens: int | None = None,
        tool_choice: Any = None,
        schema: dict[str, Any] | None = None,
        text_field: TextField | None = None,
        retries: int | None = None,
    ) -> Completion:
        """Send one chat request and return the answer.

        Args:
            model: The model name.
            messages: The OpenAI-style transcript so far.
            tools: Function-calling schemas to offer, or None (ignored with ``schema``).
            deadline: A ``time.monotonic()`` value no attempt, backoff or streamed answer may
                pass: a stream still going then is closed.
            on_text: Given the reply text piece by piece as it streams in (the request is
                then streamed; a server that does not stream gives it in one piece).
            max_tokens: The most tokens the answer may have (a longer one ends with
                ``finish_reason`` ``length``).
            tool_choice: ``"required"``, ``{"type": "function", ...}`` or None; sent as the
                server's profile says it holds its model to (``llm.choice``).
            schema: A JSON schema the answer is held to (the profile's ``constraint``);
                then no tools are offered.
            text_field: With ``schema``: the field of the answer ``on_text`` is given.
            retries: How often a failed request is tried again (default: the client's).

        Returns:
            The parsed completion, its usage counted here (``estimated``) when the server sent
            none.

        Raises:
            LLMUnavailable: Not configured, or rejected for good.
            LLMAway: Unreachable, 5xx or 429 after the retries (an ``LLMUnavailable``).
            LLMDeadline: ``deadline`` passed before an answer came (an ``LLMUnavailable``).
            LLMStopped: The calling thread's run was stopped (``abort.stoppable``).
            ConstraintRefused: The server refused ``schema``.
        """
        sdk = self._client()
        profile = self.profile(model)
        options = request_options(profile, self.temperature, max_tokens=max_tokens,
                                  schema=schema, tools=tools, tool_choice=tool_choice)
        names = [tool["function"]["name"] for tool in tools or []] or ["reply"]
        reading = Reading(names, text_field, "response_format" in options)
        attempt, tried = 0, set[str]()
        suspect: dict[str, bool] | None = None  # what tool_choice was held to, before a blame
        while True:
            try:
                completion = self.transport.attempt(sdk, model, messages, options, deadline,
                                                    on_text, reading)
                if suspect is not None:  # it failed on the kind, and answered without it
                    self.profiles.learn(profile, "failed on a required call; answered with "
                                        "'auto'", toolChoice=dict(profile.toolChoice))
                self.profiles.learn_from(profile, options, completion, on_text is not None
                                         and self.transport.streams)
                return with_estimate(completion, messages, tools)
            except Retryable as failure:
                if retries == 0:  # one try, as it comes: nothing to learn from it
                    raise self._given_up(failure) from None
                if failure.answered and suspect is None and \
                        (suspect := self._blamed(profile, options)) is not None:
                    continue  # asked again at once, with "auto" for the call it required
                if suspect is not None:
                    profile.toolChoice = suspect  # it failed with "auto" too: not particular
                if failure.answered and self._adapted(on_text is not None, tried):
                    self._sdk = None  # on new connections: the server may drop the old one
                    sdk = self._client()
                    continue
                if "stream" in tried and not self.transport.streams:
                    self.transport.streams = True  # it failed unstreamed too: not for streaming
                if stopped():
                    raise LLMStopped(f"abandoned, the run stopped: {failure.reason}") from None
                attempt += 1
                tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
                delay = self._delay(attempt - 1, failure, tries)
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise LLMDeadline(f"{failure.reason} (deadline reached after {tries})") from None
                if attempt > (self.max_retries if retries is None else retries):
                    raise LLMAway(f"{failure.reason} (after {tries})") from None
                logger.warning("LLM request failed (%s); retry %d in %.2f s",
                               failure.reason, attempt, delay)
                pause(delay)

    def _given_up(self, failure: Retryable) -> Exception:
        if stopped():
            return LLMStopped(f"abandoned, the run stopped: {failure.reason}")
        return LLMAway(f"{failure.reason} (after 1 attempt)")

    @staticmethod
    def _blamed(profile: ServerProfile, options: dict[str, Any]) -> dict[str, bool] | None:
        """A request failed (5xx) that required a call the server never held to: it is asked
        again at once as if it did not (llama-cpp-python fails on ``"required"``); the kinds
        held before, to put back should it fail that way too (None: nothing to blame)."""
        held = choice.kind(choice.sent(options, profile).get("tool_choice"))
        if held is None or profile.toolChoice.get(held):
            return None
        before = dict(profile.toolChoice)
        profile.toolChoice = {**before, held: False}
        return before

    def _adapted(self, streaming: bool, tried: set[str]) -> bool:
        """After a request the server failed on, ask again unstreamed, once (some servers
        cannot stream every answer): True to ask again at once."""
        if "stream" not in tried and streaming and self.transport.streams:
            tried.add("stream")
            self.transport.streams = False
            logger.info("the LLM at %s failed on a streamed request: asked again, and from "
                        "now on, unstreamed", self.url)
            return True
        return False

    def list_models(self) -> list[str] | None:
        """The model names the server lists (``GET /models``), in one attempt.

        Returns:
            The names, or None when the server has no model listing (HTTP 404 or 405).

        Raises:
            LLMUnavailable: Not configured, unreachable, or the listing was refused.
        """
        sdk = self._client()
        try:
            return [model.id for model in sdk.models.list(timeout=self.timeout)]
        except openai.APIStatusError as error:
            if error.status_code in (404, 405):
                return None
            failure = status_failure(self.url, error, "")
            raise LLMUnavailable(str(failure)) from None
        except openai.APIError as error:  # unreachable, timed out, or not an OpenAI answer
            raise LLMUnavailable(
                f"cannot reach the LLM at {self.url}: {cause(error)}; set MIMIKIT_LLM_BASE_URL"
            ) from None

    def model_owners(self) -> list[str]:
        """The ``owned_by`` of each model the server lists (says what kind of server it is).

        Raises:
            LLMUnavailable: Not configured, or unreachable.
        """
        sdk = self._client()
        try:
            return [str(getattr(model, "owned_by", "")) for model in
                    sdk.models.list(timeout=self.timeout)]
        except openai.APIStatusError:
            return []
        except openai.APIError as error:
            raise LLMUnavailable(f"cannot reach the LLM at {self.url}: {cause(error)}") from None

    def _delay(self, attempt: int, failure: Retryable, tries: str) -> float:
        """Seconds to wait before retry ``attempt + 1``: the server's wish, else the backoff.

        Raises:
            LLMUnavailable: The server asks to wait longer than ``RETRY_AFTER_MAX_SECONDS``.
        """
        if failure.delay is None:
            return self.backoff(attempt)
        wait = max(failure.delay, 0.0)
        if wait > RETRY_AFTER_MAX_SECONDS:
            raise LLMAway(
                f"{failure.reason} (after {tries}); it asks to retry after {wait:g} s, longer "
                f"than the {RETRY_AFTER_MAX_SECONDS:g} s this client waits; try again later"
            ) from None
        return wait * (1 + RETRY_AFTER_JITTER * self._random.random())

    def backoff(self, attempt: int) -> float:
        """The jittered wait before retry ``attempt + 1`` when the server named none.

        Between half and all of ``backoff_base * 2**attempt`` (capped at ``backoff_max``).
        """
        step = min(self.backoff_base * (2 ** min(attempt, 64)), self.backoff_max)
        return step * (1 - BACKOFF_JITTER * self._random.random())
