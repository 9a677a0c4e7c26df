"""The configured MCP servers as ``mimikit doctor`` checks them: each started once, its tools
listed, or why it failed."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from mimikit.config import Settings
from mimikit.exceptions import ConfigError, McpFailure
from mimikit.mcp.config import McpConfig, Server, config_path, load_config
from mimikit.mcp.connection import Listing
from mimikit.mcp.run import RunServers

TOOLS_SHOWN = 12
Keep = Callable[[Server, Listing], None]


@dataclass(frozen=True)
class ServerCheck:
    """How one server (or the config itself, ``name`` None) fared."""

    name: str | None
    ok: bool
    detail: str
    fix: str | None = None


def check_servers(settings: Settings, keep: Keep | None = None) -> list[ServerCheck]:
    """Start each configured server once (at the same time), list its tools and stop it;
    ``keep`` is given each listing."""
    path = config_path(settings)
    try:
        config = load_config(settings)
    except ConfigError as error:
        return [ServerCheck(None, False, str(error),
                            f"fix {path} (the format: {{\"mcpServers\": {{\"name\": "
                            "{\"command\": ..., \"args\": [...]}}}})")]
    if config is None or not config.servers:
        return [ServerCheck(None, True, f"none configured (add them to {path})")]
    with ThreadPoolExecutor(max_workers=min(len(config.servers), 8)) as pool:
        return list(pool.map(lambda server: _check(settings, config, server, keep),
                             config.servers))


def _check(settings: Settings, config: McpConfig, server: Server,
           keep: Keep | None) -> ServerCheck:
    began = time.monotonic()
    try:
        with RunServers(settings, config, [server.name]) as running:
            running.start()
            listing = running.listings[server.name]
    except McpFailure as error:
        how = "run its command by hand to see why" if server.kind == "stdio" else \
            "check that it serves streamable HTTP at that URL"
        return ServerCheck(server.name, False, str(error),
                           f"fix its entry in {config.path}, or {how}")
    if keep is not None:
        keep(server, listing)
    names = [tool.name for tool in listing.tools]
    shown = ", ".join(names[:TOOLS_SHOWN]) + \
        (f" and {len(names) - TOOLS_SHOWN} more" if len(names) > TOOLS_SHOWN else "")
    return ServerCheck(server.name, True,
                       f"{server.kind} {server.target}: {len(names)} tool"
                       f"{'s' * (len(names) != 1)}{': ' + shown if names else ''} "
                       f"(started in {time.monotonic() - began:.1f} s)")
