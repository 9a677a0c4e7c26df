"""The LLM client (any OpenAI-compatible API) and the agent loop."""

from mimikit.llm.client import LLMClient
from mimikit.llm.completion import Completion, ToolCall
from mimikit.llm.loop import RunRecord, ToolCallRecord, run_agent

__all__ = ["Completion", "LLMClient", "RunRecord", "ToolCall", "ToolCallRecord", "run_agent"]
