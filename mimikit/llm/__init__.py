"""The LLM client (any OpenAI-compatible API) and the agent loop."""

from mimikit.llm.client import LLMClient
from mimikit.llm.completion import Completion, ToolCall
from mimikit.llm.loop import RunOptions, run_agent
from mimikit.llm.record import RunRecord, ToolCallRecord

__all__ = ["Completion", "LLMClient", "RunOptions", "RunRecord", "ToolCall", "ToolCallRecord",
           "run_agent"]
