"""An MCP server's tools as tools of one Worker run.

Each is named ``SERVER__TOOL`` (OpenAI's function names allow ``[A-Za-z0-9_-]``, 64 at most),
keeps the tool's own input schema (its ``$defs`` renamed under the tool's name, so that several
tools' definitions can share the root of the Worker's answer schema) and is checked by the
server itself; its result reaches the model as text. A call reads (its result is something to
read before finishing) and is not idempotent (a call a crash cut off is reported interrupted,
as a shell command is).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Collection, Iterable
from typing import Any, ClassVar, Protocol

import mcp_types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict

from mimikit.exceptions import ToolError
from mimikit.llm.registry import Tool

SEPARATOR = "__"
NAME_CHARS = 64
DESCRIPTION_CHARS = 1000
RESULT_CHARS = 50_000
ROLE = "worker"


class Caller(Protocol):
    """What runs a call (``run.RunServers``)."""

    def call(self, server: str, tool: str, arguments: dict[str, Any],
             ) -> mcp_types.CallToolResult:
        """Call ``tool`` of ``server``."""


class McpArguments(BaseModel):
    """A call's arguments, as sent: the server checks them against its schema."""

    model_config = ConfigDict(extra="allow")
    input_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.input_schema)


def server_tools(server: str, tools: Iterable[mcp_types.Tool], caller: Caller) -> list[Tool]:
    """The Worker's tools for ``server``'s ``tools``."""
    made: list[Tool] = []
    for tool in tools:
        name = tool_name(server, tool.name, {t.name for t in made})
        arguments = type(f"{name}_arguments", (McpArguments,),
                         {"input_schema": input_schema(name, tool.input_schema)})
        made.append(Tool(name=name, description=_description(server, tool), args=arguments,
                         roles=frozenset({ROLE}), handler=_handler(caller, server, tool.name),
                         reads=True, idempotent=False))
    return made


def tool_name(server: str, tool: str, taken: Collection[str] = ()) -> str:
    """``SERVER__TOOL`` in the characters a function name may have, within 64, unique."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}{SEPARATOR}{tool}")
    if len(name) <= NAME_CHARS and name not in taken:
        return name
    digest = hashlib.sha256(f"{server}/{tool}".encode()).hexdigest()[:8]
    return f"{name[:NAME_CHARS - 9]}_{digest}"


def input_schema(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The tool's schema as an object's, its definitions renamed ``NAME.DEF``."""
    definitions = {**_defs(schema, "definitions"), **_defs(schema, "$defs")}
    kept = {key: value for key, value in schema.items()
            if key not in ("$schema", "$id", "definitions", "$defs")}
    kept["type"] = "object"
    kept.setdefault("properties", {})
    if not definitions:
        return kept
    renamed = {f"{name}.{key}": value for key, value in definitions.items()}
    with_refs: dict[str, Any] = _with_refs({**kept, "$defs": renamed}, name)
    return with_refs


def _defs(schema: dict[str, Any], key: str) -> dict[str, Any]:
    found = schema.get(key)
    return dict(found) if isinstance(found, dict) else {}


def _with_refs(node: Any, name: str) -> Any:
    if isinstance(node, list):
        return [_with_refs(item, name) for item in node]
    if not isinstance(node, dict):
        return node
    fixed = {key: _with_refs(value, name) for key, value in node.items()}
    ref = fixed.get("$ref")
    if isinstance(ref, str):
        fixed["$ref"] = re.sub(r"^#/(\$defs|definitions)/", f"#/$defs/{name}.", ref)
    return fixed


def _description(server: str, tool: mcp_types.Tool) -> str:
    text = " ".join((tool.description or tool.title or tool.name).split())
    return f"[{server}] {text[:DESCRIPTION_CHARS]}"


def _handler(caller: Caller, server: str, tool: str) -> Callable[[Any, McpArguments], str]:
    def call(_ctx: Any, args: McpArguments) -> str:
        try:
            result = caller.call(server, tool, dict(args.model_extra or {}))
        except MCPError as error:
            raise ToolError(f"MCP server {server!r} refused {tool}: {error.message}") from None
        return result_text(server, tool, result)

    return call


def result_text(server: str, tool: str, result: mcp_types.CallToolResult) -> str:
    """What a call's result says, as text (an error result raised as ``ToolError``)."""
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts) or "(no output)"
    if len(text) > RESULT_CHARS:
        text = text[:RESULT_CHARS] + f"\n[cut: {len(text) - RESULT_CHARS} more characters]"
    if result.is_error:
        raise ToolError(f"{tool} of MCP server {server!r} failed: {text}")
    return text


def _block_text(block: Any) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        return f"[{block.type} {block.mime_type}, {len(block.data) * 3 // 4} bytes, not shown]"
    if isinstance(block, mcp_types.EmbeddedResource):
        inner = block.resource
        if isinstance(inner, mcp_types.TextResourceContents):
            return inner.text
        return f"[resource {inner.uri} ({inner.mime_type or 'binary'}), not shown]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource link {block.uri}: {block.name}]"
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"
