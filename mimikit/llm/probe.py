"""Finding out what a server does (``llm.profile``) with a few small requests, so that its
profile is known before the person's first message, and ``mimikit doctor`` can say it.

The server is named from its model listing; then asked, each in one request: for an answer
held to a schema (does the answer hold?), for a required call of one tool (does a native
``tool_calls`` come back?), the same again streamed (does the stream carry usage? are the
prompt tokens served from its cache the second time?).
"""

from __future__ import annotations

import json
from typing import Any

from mimikit.exceptions import LLMUnavailable
from mimikit.llm.attempts import ConstraintRefused
from mimikit.llm.client import LLMClient
from mimikit.llm.completion import Completion
from mimikit.llm.profile import CONSTRAINTS, ServerProfile, profile_for

PROBE_TOOL = {"type": "function", "function": {
    "name": "reply", "description": "Send a message to the user.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                   "required": ["text"]}}}
PROBE_MESSAGES = [{"role": "system", "content": "Answer only by calling the reply tool."},
                  {"role": "user", "content": "Say ok."}]
SCHEMA_MESSAGES = [{"role": "system", "content": "Answer with a JSON object."},
                   {"role": "user", "content": "Is water wet? Answer yes or no."}]
PROBE_SCHEMA = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}},
                "required": ["answer"], "additionalProperties": False}
PROBE_TOKENS = 24


def probe(client: LLMClient, model: str) -> ServerProfile:
    """Ask the server a few small questions; the profile it shows (also kept by the client).

    Raises:
        LLMUnavailable: The server cannot be reached or refused the requests.
    """
    profile = profile_for(client.url, model, client.model_owners())
    profile.constraint = _constraint(client, model, profile)
    profile.probed = True
    client.profiles.put(profile)
    calls = _ask(client, model, PROBE_MESSAGES, tools=[PROBE_TOOL], tool_choice="required")
    again = _ask(client, model, PROBE_MESSAGES, tools=[PROBE_TOOL], tool_choice="required",
                 on_text=lambda _piece: None)
    profile.nativeCalls = bool(calls.tool_calls or again.tool_calls)
    profile.toolChoice = {**profile.toolChoice, "required": profile.nativeCalls}
    if again.usage_streamed is not None:
        profile.streamUsage = again.usage_streamed
    profile.cachedTokens = bool(again.usage.cachedTokens)
    client.profiles.put(profile)
    return profile


def _constraint(client: LLMClient, model: str, profile: ServerProfile) -> str | None:
    """The request field that holds this server's answers to a schema, tried in turn (the
    one its kind is known by first); None when no field does."""
    order = [profile.constraint] if profile.constraint else []
    for name in [*order, *(name for name in CONSTRAINTS if name not in order)]:
        client.profiles.put(profile.model_copy(update={"constraint": name}))
        try:
            answer = _ask(client, model, SCHEMA_MESSAGES, schema=PROBE_SCHEMA)
        except (ConstraintRefused, LLMUnavailable):
            continue
        if _holds(answer):
            return name
    return None


def _ask(client: LLMClient, model: str, messages: list[dict[str, Any]],
         **options: Any) -> Completion:
    return client.chat(model, messages, max_tokens=PROBE_TOKENS, **options)


def _holds(answer: Completion) -> bool:
    try:
        value = json.loads(answer.content or "")
    except (json.JSONDecodeError, RecursionError):
        return False
    return isinstance(value, dict) and value.get("answer") in ("yes", "no")
