"""What the configured server does with tools, found out with one small request, so that
``mimikit doctor`` can say it in one line ("llama.cpp server: tool calls returned as text;
handled").

The client adapts to the same things as it meets them (a server that refuses ``tool_choice``
is asked without it; one that does not stream is asked whole; calls written as text are read
by ``quirks``); the probe only says in advance what it will meet.
"""

from __future__ import annotations

from dataclasses import dataclass

from mimikit.exceptions import LLMUnavailable
from mimikit.llm.client import LLMClient
from mimikit.llm.quirks import written_calls

PROBE_TOOL = {"type": "function", "function": {
    "name": "reply", "description": "Send a message to the user.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                   "required": ["text"]}}}
PROBE_MESSAGES = [{"role": "system", "content": "Answer only by calling the reply tool."},
                  {"role": "user", "content": "Say ok."}]
OWNERS = {"llamacpp": "llama.cpp server", "vllm": "vLLM", "openai": "OpenAI",
          "system": "OpenAI", "library": "Ollama", "me": "llama-cpp-python server"}


@dataclass
class ServerTraits:
    """What one server does."""

    server: str
    tool_choice: bool
    usage: bool
    calls: str  # "tool_calls" (parsed by the server), "text" (written in the answer), "none"

    def line(self) -> str:
        """One line for ``mimikit doctor``."""
        calls = {"tool_calls": "tool calls parsed by the server",
                 "text": "tool calls returned as text; handled",
                 "none": "answered without a tool call; corrected, then forced"}[self.calls]
        parts = [calls, "tool_choice honoured" if self.tool_choice
                 else "tool_choice not honoured; not sent",
                 "usage sent" if self.usage else "no usage sent; tokens estimated"]
        return f"{self.server}: " + "; ".join(parts)


def probe(client: LLMClient, model: str) -> ServerTraits:
    """Ask the server one small tool question and see how it answers.

    Raises:
        LLMUnavailable: The server cannot be reached or refused the request.
    """
    completion = client.chat(model, PROBE_MESSAGES, [PROBE_TOOL], max_tokens=64,
                             tool_choice="required", on_text=lambda _piece: None)
    if completion.tool_calls:
        calls = "tool_calls"
    elif written_calls(completion.content or "", ["reply"]):
        calls = "text"
    else:
        calls = "none"
    return ServerTraits(server=server_name(client), tool_choice=client.choice.honoured,
                        usage=not completion.usage.estimated, calls=calls)


def server_name(client: LLMClient) -> str:
    """What kind of server answers at the client's URL (from its model listing)."""
    try:
        owners = client.model_owners()
    except LLMUnavailable:
        owners = []
    for owner in owners:
        if owner in OWNERS:
            return OWNERS[owner]
    return f"the server at {client.url}"
