"""One live session with one MCP server, over the official SDK (``mcp``).

The SDK is asynchronous and a Worker run is not: a run's servers share one event loop on a
thread of their own (an anyio blocking portal, see ``run``). Each server's session is held by
one task of that loop, entered and left there as the SDK's task groups require; the run's
thread calls into it, each call bounded by its timeout. A server started over stdio writes its
stderr to a file of its own, whose last lines say why it failed.
"""

from __future__ import annotations

import logging
import tempfile
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, AsyncExitStack, suppress
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types
from anyio.from_thread import BlockingPortal
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from mimikit.exceptions import McpFailure
from mimikit.mcp.config import Server, StdioEntry

log = logging.getLogger("mimikit.mcp")
STDERR_TAIL_CHARS = 500
CLOSE_SECONDS = 10.0  # the SDK closes stdin, waits 2 s, terminates, waits 2 s, kills
LIST_PAGES = 20  # tools/list pages read at most (a server that pages for ever is cut off)
SAID_CHARS = 200  # of what a server says it is for
HTTP_CONNECT_SECONDS = 30.0


@dataclass(frozen=True)
class Listing:
    """What a server offers: its tools, and what it says it is for ('' when nothing)."""

    tools: tuple[mcp_types.Tool, ...]
    said: str = ""


class Connection:
    """One session with one server on a run's event loop (``portal``)."""

    def __init__(self, server: Server, portal: BlockingPortal, env: dict[str, str]) -> None:
        self.server, self.portal, self.env = server, portal, env
        self._errlog = tempfile.TemporaryFile("a+", encoding="utf-8", errors="replace")
        self._session: ClientSession | None = None
        self._closing: anyio.Event | None = None
        self._held: Future[None] | None = None
        self._calls: set[anyio.CancelScope] = set()
        self._stopped = False

    @property
    def name(self) -> str:
        return self.server.name

    def open(self, timeout: float) -> Listing:
        """Start (or reach) the server, shake hands and list its tools, within ``timeout``.

        Raises:
            McpFailure: It could not be started, exited, hung or refused (with why).
        """
        try:
            self._held, listing = self.portal.start_task(self._hold, timeout)
        except Exception as error:  # noqa: BLE001 - every way a start fails is said
            if isinstance(_root(error), TimeoutError):
                raise self._failure(f"did not answer within {timeout:g} s (initialize and "
                                    "tools/list)") from None
            raise self._failure("could not be started" if self.server.kind == "stdio" else
                                "could not be reached", error) from None
        return listing

    def call(self, tool: str, arguments: dict[str, Any], timeout: float,
             ) -> mcp_types.CallToolResult:
        """Call ``tool`` within ``timeout`` seconds.

        Raises:
            McpFailure: The server hung past the timeout, exited or was stopped; the
                connection is unusable afterwards (``broken``).
            MCPError: The server refused the request itself (e.g. an unknown tool).
        """
        if self._session is None or self._stopped:
            raise McpFailure(f"MCP server {self.name!r} is not running")
        try:
            result = self.portal.call(self._call, tool, arguments, timeout)
        except TimeoutError:
            self._stopped = True
            stopped = "the server stopped" if self.server.kind == "stdio" else "its session ended"
            raise McpFailure(f"MCP server {self.name!r} did not answer {tool} within "
                             f"{timeout:g} s; the call was given up and {stopped} (it starts "
                             "again for the next call)") from None
        except MCPError as error:
            if error.code != mcp_types.CONNECTION_CLOSED:
                raise
            self._stopped = True
            raise self._failure(f"closed the connection during {tool} (it exited?)") from None
        except Exception as error:  # noqa: BLE001 - a transport failure of any kind
            self._stopped = True
            raise self._failure(f"failed during {tool}", error) from None
        if result is None:
            raise McpFailure(f"the call of {tool} on MCP server {self.name!r} was stopped "
                             "with its run")
        return result

    @property
    def broken(self) -> bool:
        """True once a call hung, the server went away, or the run stopped it."""
        return self._stopped

    def stop(self) -> None:
        """Cut calls in flight short and let the session end (from any thread, at once)."""
        self._stopped = True
        if self._held is not None:
            with suppress(RuntimeError):  # the loop is gone already
                self.portal.call(self._stop_now)

    def close(self) -> None:
        """End the session and stop the server (bounded), once."""
        self.stop()
        held, self._held = self._held, None
        if held is not None:
            try:
                held.result(timeout=CLOSE_SECONDS)
            except Exception as error:  # noqa: BLE001 - an ending that failed ends all the same
                log.info("MCP server %r ended with %s", self.name, _root(error))
        self._errlog.close()

    # -- on the event loop --

    async def _hold(self, timeout: float, *, task_status: Any) -> None:
        self._closing = anyio.Event()
        async with AsyncExitStack() as stack:
            streams = await stack.enter_async_context(await self._transport(stack))
            session = await stack.enter_async_context(ClientSession(*streams))
            with anyio.fail_after(timeout):
                started = await session.initialize()
                tools = await _all_tools(session)
            self._session = session
            task_status.started(Listing(tools, _said(started)))
            await self._closing.wait()

    async def _transport(self, stack: AsyncExitStack) -> AbstractAsyncContextManager[Any]:
        entry = self.server.entry
        if isinstance(entry, StdioEntry):
            parameters = StdioServerParameters(command=entry.command, args=list(entry.args),
                                               env=self.env, cwd=entry.cwd)
            return stdio_client(parameters, errlog=self._errlog)
        client = await stack.enter_async_context(create_mcp_http_client(
            headers=dict(entry.headers),
            timeout=httpx2.Timeout(HTTP_CONNECT_SECONDS, read=entry.timeout)))
        return streamable_http_client(entry.url, http_client=client)

    async def _call(self, tool: str, arguments: dict[str, Any], timeout: float,
                    ) -> mcp_types.CallToolResult | None:
        assert self._session is not None
        with anyio.CancelScope() as scope:
            self._calls.add(scope)
            try:
                with anyio.fail_after(timeout):
                    return await self._session.call_tool(tool, arguments)
            finally:
                self._calls.discard(scope)
        return None  # stopped

    def _stop_now(self) -> None:
        for scope in list(self._calls):
            scope.cancel()
        if self._closing is not None:
            self._closing.set()

    # -- what went wrong --

    def _failure(self, what: str, error: BaseException | None = None) -> McpFailure:
        cause = _cause(_root(error)) if error is not None else ""
        said = self._stderr_tail()
        return McpFailure(f"MCP server {self.name!r} ({self.server.kind}: {self.server.target}) "
                          f"{what}" + (f": {cause}" if cause else "")
                          + (f"; its stderr: {said}" if said else ""))

    def _stderr_tail(self) -> str:
        try:
            self._errlog.flush()
            size = self._errlog.seek(0, 2)
            self._errlog.seek(max(size - STDERR_TAIL_CHARS * 4, 0))
            text = self._errlog.read()
        except (OSError, ValueError):
            return ""
        return " | ".join(line.strip() for line in text.splitlines()
                          if line.strip())[-STDERR_TAIL_CHARS:]


async def _all_tools(session: ClientSession) -> tuple[mcp_types.Tool, ...]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)


def _said(started: mcp_types.InitializeResult) -> str:
    """What the server says it is for: its description, else its instructions' first line."""
    info = started.server_info
    text = getattr(info, "description", None) or (started.instructions or "").strip()
    line = text.strip().splitlines()[0] if text and text.strip() else ""
    return line[:SAID_CHARS]


def _root(error: BaseException) -> BaseException:
    """The first error inside the SDK's task-group wrappers."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _cause(error: BaseException) -> str:
    if isinstance(error, FileNotFoundError):
        return f"command not found ({error.filename or error.strerror})"
    if isinstance(error, PermissionError):
        return f"permission denied ({error.filename or error.strerror})"
    if isinstance(error, MCPError) and error.code == mcp_types.CONNECTION_CLOSED:
        return "it exited (or closed its output) before answering"
    if isinstance(error, TimeoutError):
        return "it did not answer in time"
    if isinstance(error, httpx2.HTTPStatusError):
        return f"HTTP {error.response.status_code} from {error.request.url}"
    if isinstance(error, httpx2.ConnectError):
        return f"cannot connect ({error})"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
