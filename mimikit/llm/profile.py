"""What one OpenAI-compatible server does with tools and schemas, for one model, learned once:
whether it returns native ``tool_calls``, which ``tool_choice`` values it holds its model to,
whether it holds an answer to a JSON schema (and through which request field), whether its
streams carry usage, and whether it reports cached prompt tokens.

A profile is found out at start-up (``probe``) and corrected by the first answer that
contradicts it (``learn``); it is kept in Redis (``Profiles``), so a new worker process pays
nothing for it. From it follows the path each request takes:

- ``constrained``: the server holds the answer to the role's schema (``llm.turns``); it parses
  by construction;
- ``native``: the tools are offered, and the server returns the calls it reads;
- ``text``: the tools are offered, and the calls come written into the text (``llm.formats``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from mimikit.models import Model, utcnow

Path = Literal["native", "constrained", "text"]


def _json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return {"response_format": {"type": "json_schema",
                                "json_schema": {"name": "answer", "schema": schema}}}


def _json_object(schema: dict[str, Any]) -> dict[str, Any]:
    return {"response_format": {"type": "json_object", "schema": schema}}


# How a request asks for an answer held to a schema: the request fields, by the name kept in a
# profile. llama.cpp's server, vLLM and Ollama take OpenAI's ``json_schema``;
# llama-cpp-python's server takes the schema inside ``json_object``.
CONSTRAINTS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "json_schema": _json_schema,
    "json_object": _json_object,
}


class Kind(Model):
    """A kind of server, told by the ``owned_by`` of the models it lists."""

    server: str
    constraint: str | None = None


# OpenAI's own API is left on native calls: its strict schemas refuse optional fields.
KINDS: dict[str, Kind] = {
    "llamacpp": Kind(server="llama.cpp server", constraint="json_schema"),
    "vllm": Kind(server="vLLM", constraint="json_schema"),
    "library": Kind(server="Ollama", constraint="json_schema"),
    "me": Kind(server="llama-cpp-python server", constraint="json_object"),
    "openai": Kind(server="OpenAI"),
    "system": Kind(server="OpenAI"),
}


class ServerProfile(Model):
    """What one server does for one model, as far as seen (None: not seen yet)."""

    baseUrl: str
    model: str
    server: str = "unknown server"
    constraint: str | None = None
    nativeCalls: bool | None = None
    writtenCalls: bool = False  # calls seen written into the text
    toolChoice: dict[str, bool] = Field(default_factory=dict)  # "required", "named" -> held
    toolChoiceRefused: bool = False
    streamUsage: bool | None = None
    cachedTokens: bool | None = None
    probed: bool = False  # a probe ran (not only what the server is called)
    learned: list[str] = Field(default_factory=list)  # what answers taught, newest last
    updatedAt: datetime = Field(default_factory=utcnow)

    @property
    def path(self) -> Path:
        """The path requests to this server take."""
        if self.constraint:
            return "constrained"
        return "text" if self.writtenCalls and not self.nativeCalls else "native"

    def learn(self, what: str, **changes: Any) -> bool:
        """Take ``changes`` (field values) that an answer showed; True when any is new."""
        new = {key: value for key, value in changes.items() if getattr(self, key) != value}
        if not new:
            return False
        for key, value in new.items():
            setattr(self, key, value)
        self.learned = [*self.learned[-9:], what]
        self.updatedAt = utcnow()
        return True

    def line(self) -> str:
        """One line for ``mimikit doctor`` and ``mimikit status``."""
        parts = [f"path {self.path}"]
        if self.constraint:
            parts.append(f"answers held to a schema ({self.constraint})")
        parts.append({True: "native tool calls", False: "tool calls written as text",
                      None: "tool calls not seen yet"}[self.nativeCalls])
        held = [name for name, ok in sorted(self.toolChoice.items()) if ok]
        unheld = [name for name, ok in sorted(self.toolChoice.items()) if not ok]
        if self.toolChoiceRefused:
            parts.append("tool_choice refused")
        elif held or unheld:
            parts.append("tool_choice " + ", ".join([*(f"{n} held" for n in held),
                                                     *(f"{n} not held" for n in unheld)]))
        parts.append({True: "usage in streams", False: "no usage in streams (estimated)",
                      None: "stream usage not seen yet"}[self.streamUsage])
        if self.cachedTokens is not None:
            parts.append("cached tokens reported" if self.cachedTokens
                         else "no cached tokens reported")
        return f"{self.server} ({self.model}): " + "; ".join(parts)


def profile_for(base_url: str, model: str, owners: list[str]) -> ServerProfile:
    """A first profile from what the server calls itself (its models' ``owned_by``)."""
    kind = next((KINDS[owner] for owner in owners if owner in KINDS), None)
    if kind is None:
        return ServerProfile(baseUrl=base_url, model=model)
    return ServerProfile(baseUrl=base_url, model=model, server=kind.server,
                         constraint=kind.constraint)
