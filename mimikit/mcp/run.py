"""The MCP servers of one Worker run.

They start when the run begins (their tools are part of its first request) and stop when it
ends; they share one event loop on a thread of the run's own. Each call is bounded by its
server's ``timeout`` and by the run's deadline. A server that hung past a call's timeout or
went away is stopped at once, the call failing with why; the next call to it starts it again.
A cancel of the run cuts a call in flight short.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import AbstractContextManager
from typing import Any

import mcp_types
from anyio.from_thread import BlockingPortal, start_blocking_portal

from mimikit.config import Settings
from mimikit.exceptions import McpFailure
from mimikit.llm.registry import Tool
from mimikit.mcp.config import McpConfig, Server, StdioEntry
from mimikit.mcp.connection import Connection, Listing
from mimikit.mcp.environment import server_environment
from mimikit.mcp.tools import server_tools

log = logging.getLogger("mimikit.mcp")


class RunServers:
    """The servers one run names (``names``), bounded by its ``deadline`` (monotonic)."""

    def __init__(self, settings: Settings, config: McpConfig, names: list[str],
                 deadline: float | None = None) -> None:
        self.settings, self.config, self.deadline = settings, config, deadline
        self.names = list(dict.fromkeys(names))
        self.listings: dict[str, Listing] = {}
        self.tools: list[Tool] = []
        self._open: dict[str, Connection] = {}
        self._lock = threading.Lock()
        self._portal_context: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._stopped = False

    def start(self) -> list[Tool]:
        """Start every named server and give their tools.

        Raises:
            McpFailure: A name is not in the config, or a server could not be started or
                listed (every one that failed is named, with why); none is left running.
        """
        unknown = [name for name in self.names if self.config.get(name) is None]
        if unknown:
            raise McpFailure(f"no MCP server named {', '.join(map(repr, unknown))} in "
                             f"{self.config.path} (configured: "
                             f"{', '.join(self.config.names) or 'none'})")
        failures = []
        for name in self.names:
            try:
                self.listings[name] = self._connect(name)
            except McpFailure as error:
                failures.append(str(error))
        if failures:
            self.close()
            raise McpFailure("; ".join(failures))
        self.tools = [tool for name in self.names
                      for tool in server_tools(name, self.listings[name].tools, self)]
        return self.tools

    def call(self, server: str, tool: str, arguments: dict[str, Any],
             ) -> mcp_types.CallToolResult:
        """Call ``tool`` of ``server`` (started again first if it hung or went away).

        Raises:
            McpFailure: It hung, went away, could not be started again, or the run's deadline
                has passed.
        """
        connection = self._open.get(server)
        if connection is None or connection.broken:
            if connection is not None:
                connection.close()
            self._connect(server)
            connection = self._open[server]
        spec = self._server(server)
        try:
            return connection.call(tool, arguments, self._bounded(spec.entry.timeout))
        except McpFailure:
            if connection.broken:
                connection.close()  # a hung server is stopped now, not at the end of the run
            raise

    def stop(self) -> None:
        """Cut calls in flight short (from the thread that stops the run, at once)."""
        self._stopped = True
        with self._lock:
            open_now = list(self._open.values())
        for connection in open_now:
            connection.stop()

    def close(self) -> None:
        """Stop every server and the run's event loop."""
        with self._lock:
            open_now, self._open = list(self._open.values()), {}
        for connection in open_now:
            connection.close()
        context, self._portal_context, self._portal = self._portal_context, None, None
        if context is not None:
            context.__exit__(None, None, None)

    def __enter__(self) -> RunServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- inside --

    def _server(self, name: str) -> Server:
        found = self.config.get(name)
        if found is None:
            raise McpFailure(f"no MCP server named {name!r} in {self.config.path}")
        return found

    def _connect(self, name: str) -> Listing:
        if self._stopped:
            raise McpFailure(f"MCP server {name!r} was not started: the run is stopping")
        server = self._server(name)
        env = server_environment(self.settings, server.entry.env) \
            if isinstance(server.entry, StdioEntry) else {}
        connection = Connection(server, self._loop(), env)
        try:
            listing = connection.open(self._bounded(server.entry.startTimeout))
        except McpFailure:
            connection.close()
            raise
        with self._lock:
            self._open[name] = connection
        log.info("MCP server %r started: %d tools", name, len(listing.tools))
        return listing

    def _loop(self) -> BlockingPortal:
        if self._portal is None:
            self._portal_context = start_blocking_portal()
            self._portal = self._portal_context.__enter__()
        return self._portal

    def _bounded(self, seconds: float) -> float:
        if self.deadline is None:
            return seconds
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise McpFailure("the run's deadline has passed")
        return min(seconds, left)
