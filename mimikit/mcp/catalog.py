"""The configured MCP servers as the Planner, ``mimikit status`` and the page know them, without
starting any. What each is for, in one line: the entry's ``description``; else what was
learned when the server was last listed (``mimikit doctor``, a Worker run using it, or once in
the background by a process serving Planner runs): what it says it is for, else its tools'
names. Learned lines are kept in Redis under the entry's fingerprint, so a changed entry is
learned again. (The SDK is loaded only where a server is started.)
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from mimikit.config import Settings
from mimikit.exceptions import ConfigError, McpFailure
from mimikit.mcp.config import McpConfig, Server, StdioEntry, config_path, load_config

if TYPE_CHECKING:
    from mimikit.mcp.connection import Listing

log = logging.getLogger("mimikit.mcp")
TOOL_NAMES_SHOWN = 8
LEARN_LOCK_SECONDS = 600  # one process of an instance learns a server at a time


def remember(runtime: Any, server: Server, listing: Listing) -> None:
    """Keep what a listing of ``server`` showed."""
    names = [tool.name for tool in listing.tools]
    line = listing.said or ("tools: " + ", ".join(names[:TOOL_NAMES_SHOWN])
                            + (", …" if len(names) > TOOL_NAMES_SHOWN else "")
                            if names else "no tools")
    try:
        runtime.redis.hset(runtime.keys.meta("mcp_servers"), server.fingerprint,
                           json.dumps({"name": server.name, "line": line, "tools": names}))
    except RedisError as error:
        log.info("could not keep what MCP server %r offers: %s", server.name, error)


def learned(runtime: Any, config: McpConfig) -> dict[str, dict[str, Any]]:
    """What was learned of each configured server, by name (those never listed left out)."""
    if not config.servers:
        return {}
    try:
        raw = runtime.redis.hmget(runtime.keys.meta("mcp_servers"),
                                  [server.fingerprint for server in config.servers])
    except RedisError:
        return {}
    return {server.name: json.loads(found) for server, found in zip(config.servers, raw,
                                                                   strict=True) if found}


def described(runtime: Any, config: McpConfig) -> dict[str, str]:
    """One line per server: its entry's description, else what was learned ('' if none)."""
    known = learned(runtime, config)
    return {server.name: server.entry.description or known.get(server.name, {}).get("line", "")
            for server in config.servers}


def learn_in_background(runtime: Any, config: McpConfig | None) -> None:
    """Start each server without a description or a learned line once, in the background,
    to learn what it offers (one process of an instance does)."""
    if config is None:
        return
    known = learned(runtime, config)
    missing = [s for s in config.servers if not s.entry.description and s.name not in known]
    if missing:
        threading.Thread(target=_learn, args=(runtime, config, missing), name="mcp-learn",
                         daemon=True).start()


def _learn(runtime: Any, config: McpConfig, servers: list[Server]) -> None:
    from mimikit.mcp.run import RunServers  # the SDK is loaded where a server is started

    for server in servers:
        try:
            if not runtime.redis.set(runtime.keys.meta(f"mcp_learning|{server.fingerprint}"),
                                     "1", nx=True, ex=LEARN_LOCK_SECONDS):
                continue
        except RedisError:
            return
        try:
            with RunServers(runtime.settings, config, [server.name]) as running:
                running.start()
                remember(runtime, server, running.listings[server.name])
        except McpFailure as error:
            log.warning("%s (mimikit doctor checks it)", error)


def overview(settings: Settings, runtime: Any = None) -> dict[str, Any]:
    """The servers as ``mimikit status`` and the page list them, without starting any:
    ``{config, servers: [{name, kind, target, description}], error?}`` (with ``runtime``,
    what was learned of each too)."""
    path = config_path(settings)
    report: dict[str, Any] = {"config": str(path), "servers": []}
    try:
        config = load_config(settings)
    except ConfigError as error:
        report["error"] = str(error)
        return report
    if config is None:
        return report
    said = described(runtime, config) if runtime is not None else \
        {server.name: server.entry.description or "" for server in config.servers}
    # a stdio server's command only: its arguments may hold a token
    report["servers"] = [{"name": server.name, "kind": server.kind,
                          "target": server.entry.command if isinstance(server.entry, StdioEntry)
                          else server.target, "description": said.get(server.name) or None}
                         for server in config.servers]
    return report
