"""What the agents read of the MCP servers. The Planner, and only where some are configured:
one line per server (its name and what it is for, not its tools) for its system prompt, and an
``mcp`` field on its ``delegate`` and ``schedule`` naming the servers a task's Worker needs
(one of the configured names); without a config its prompt and tools are what they always
were. A Worker whose answers are held to a schema: a line per tool of its servers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, create_model

from mimikit.llm.registry import Registry, Tool
from mimikit.mcp.config import McpConfig

PLANNER_TOOLS = ("delegate", "schedule")


def planner_tools(registry: Registry, config: McpConfig) -> list[Tool]:
    """The Planner's ``delegate`` and ``schedule`` with the ``mcp`` field (none without
    servers)."""
    if not config.servers:
        return []
    names: Any = Literal[tuple(config.names)]
    made = []
    for name in PLANNER_TOOLS:
        tool = registry.get("planner", name)
        if tool is None:
            continue
        # explained once, in the system prompt's lines about the servers
        args = create_model(f"{tool.args.__name__}WithServers", __base__=tool.args,
                            mcp=(list[names] | None, Field(None)))
        made.append(dataclasses.replace(tool, args=args))
    return made


def server_lines(config: McpConfig, described: Mapping[str, str]) -> str:
    """One line per server for the Planner: its name and what it is for."""
    return "\n".join(f"- {server.name}: {described.get(server.name) or 'no description'}"
                     for server in config.servers)


def answer_lines(tools: list[Tool]) -> str:
    """For answers held to a schema (where the model reads no tool schemas): one line per
    tool, with its arguments (required ones first, the others marked ``?``) and
    description."""
    lines = []
    for tool in tools:
        schema = tool.args.model_json_schema()
        required = list(schema.get("required") or [])
        others = [name for name in schema.get("properties") or {} if name not in required]
        fields = ", ".join([*required, *(f"{name}?" for name in others)])
        lines.append(f"- {{\"{tool.name}\": {{{fields}}}}}: {tool.description}")
    return "\n".join(lines)
