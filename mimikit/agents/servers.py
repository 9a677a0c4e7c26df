"""MCP servers in agent runs: what the Planner is shown of them, and the servers a Worker run
starts for its task (only the ones the task names: a task without any costs nothing)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mimikit.agents.common import registry
from mimikit.agents.prompts import SystemPrompt, load
from mimikit.exceptions import ConfigError, McpFailure
from mimikit.lifecycle.execution import RunControl
from mimikit.llm.profile import Path
from mimikit.llm.registry import Tool
from mimikit.mcp.catalog import described, remember
from mimikit.mcp.config import config_path, load_config, offered
from mimikit.mcp.planning import answer_lines, planner_tools, server_lines
from mimikit.models import Task
from mimikit.store.runtime import Runtime

if TYPE_CHECKING:
    from mimikit.mcp.run import RunServers


def planner_view(runtime: Runtime, system: SystemPrompt) -> tuple[SystemPrompt, list[Tool]]:
    """The Planner's system prompt with a line per configured server after it, and its
    ``delegate`` and ``schedule`` taking ``mcp``; both unchanged without servers."""
    config = offered(runtime.settings)
    if config is None or not config.servers:
        return system, []
    section = load("agents/planner/mcp.md").replace("EXAMPLE", config.names[0]) \
        .replace("SERVERS", server_lines(config, described(runtime, config)))

    def shown(path: Path) -> str:
        return f"{system(path)}\n\n{section}"

    return shown, planner_tools(registry(), config)


def start_servers(runtime: Runtime, task: Task, control: RunControl) -> RunServers | None:
    """The servers ``task`` names, started within the run's deadline and stopped with the
    run (None when it names none).

    Raises:
        McpFailure: The config is missing or invalid, names none of them, or one could not
            be started (each named, with why).
    """
    if not task.mcp:
        return None
    from mimikit.mcp.run import RunServers  # the SDK is loaded where a server is started

    try:
        config = load_config(runtime.settings)
    except ConfigError as error:
        raise McpFailure(f"the task needs MCP servers ({', '.join(task.mcp)}), but {error}") \
            from None
    if config is None:
        raise McpFailure(f"the task needs MCP servers ({', '.join(task.mcp)}), but there is no "
                         f"MCP config at {config_path(runtime.settings)}")
    servers = RunServers(runtime.settings, config, task.mcp, control.deadline)
    control.on_stop(servers.stop)
    servers.start()
    for name, listing in servers.listings.items():
        server = config.get(name)
        if server is not None:
            remember(runtime, server, listing)
    return servers


def worker_system(system: SystemPrompt, tools: list[Tool]) -> SystemPrompt:
    """The Worker's system prompt; where answers are held to a schema (and the model reads no
    tool schemas) a line per MCP tool after it."""
    if not tools:
        return system
    section = load("agents/worker/mcp.md").replace("TOOLS", answer_lines(tools))

    def shown(path: Path) -> str:
        return f"{system(path)}\n\n{section}" if path == "constrained" else system(path)

    return shown
