"""Stopping a run's LLM request while it is in flight.

A run that must stop (canceled, past its deadline, taken over by another delivery) is told so
from another thread (the heartbeat's). Its request may then be waiting for an answer that takes
minutes: the run's ``StopHandle`` shuts down the socket that request reads from, so the reading
thread gets an error at once and the server sees the client go (a streaming server stops
generating). The handle is bound to the thread that runs the request (``stoppable``); the LLM
client asks ``stopped()`` before another attempt and waits out its backoff with ``pause``.

The sockets are tracked by a network backend of the SDK's HTTP client (``http_client``): each
read and write registers its stream with the handle of the calling thread for its duration.
Through a proxy from the environment the SDK uses a transport of its own: such a request is
not cut short and ends at its timeout.
"""

from __future__ import annotations

import importlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import openai

log = logging.getLogger("mimikit.llm")
# The SDK's own connection limits (a run holds at most one connection at a time).
MAX_CONNECTIONS = 1000
MAX_KEEPALIVE_CONNECTIONS = 100


class StopHandle:
    """The stop switch of one run's LLM requests (thread-safe)."""

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._streams: set[Any] = set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def stop(self) -> None:
        """Stop the run's requests: the one in flight now, and any it would start."""
        self._stopped.set()
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.cut()

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True (at once) when the handle is stopped meanwhile."""
        return self._stopped.wait(seconds)

    def enter(self, stream: Any) -> None:
        with self._lock:
            self._streams.add(stream)
        if self.stopped:  # stopped between the caller's check and the registration
            stream.cut()

    def leave(self, stream: Any) -> None:
        with self._lock:
            self._streams.discard(stream)


_current: ContextVar[StopHandle | None] = ContextVar("mimikit_llm_stop", default=None)


@contextmanager
def stoppable(handle: StopHandle) -> Iterator[StopHandle]:
    """Make ``handle`` stop the LLM requests this thread makes inside the block."""
    token = _current.set(handle)
    try:
        yield handle
    finally:
        _current.reset(token)


def stopped() -> bool:
    """True when the run of the calling thread was told to stop."""
    handle = _current.get()
    return handle is not None and handle.stopped


def pause(seconds: float) -> bool:
    """Sleep ``seconds``, or less when the calling thread's run is stopped meanwhile; returns
    True when it was."""
    handle = _current.get()
    if handle is None:
        time.sleep(seconds)
        return False
    return handle.wait(seconds)


def _libraries() -> tuple[Any, Any]:
    """The HTTP client library the SDK is built on (``httpx``, or ``httpx2`` in newer ones)
    and its transport library (``httpcore`` / ``httpcore2``)."""
    base = next(cls for cls in openai.DefaultHttpxClient.__mro__ if cls.__name__ == "Client")
    name = base.__module__.split(".")[0]
    core = "httpcore2" if name == "httpx2" else "httpcore"
    return importlib.import_module(name), importlib.import_module(core)


class _Stream:
    """A connection's stream whose reads and writes a stop of the caller's handle cuts."""

    def __init__(self, inner: Any, core: Any) -> None:
        self.inner = inner
        self.core = core

    def _guarded(self, operation: Any, *args: Any) -> Any:
        handle = _current.get()
        if handle is None:
            return operation(*args)
        if handle.stopped:
            raise self.core.ReadError("the run was stopped")
        handle.enter(self)
        try:
            return operation(*args)
        finally:
            handle.leave(self)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = self._guarded(self.inner.read, max_bytes, timeout)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._guarded(self.inner.write, buffer, timeout)

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> _Stream:
        return _Stream(self.inner.start_tls(ssl_context, server_hostname, timeout), self.core)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)

    def cut(self) -> None:
        """Wake the thread blocked on this stream: shut its socket down (closing alone would
        leave a blocked read waiting)."""
        sock = self.inner.get_extra_info("socket")
        if sock is None:
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed or never connected
            return


class _Backend:
    """The transport library's network backend, handing out ``_Stream``s."""

    def __init__(self, inner: Any, core: Any) -> None:
        self.inner = inner
        self.core = core

    def connect_tcp(self, *args: Any, **kwargs: Any) -> _Stream:
        if stopped():
            raise self.core.ConnectError("the run was stopped")
        return _Stream(self.inner.connect_tcp(*args, **kwargs), self.core)

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> _Stream:
        if stopped():
            raise self.core.ConnectError("the run was stopped")
        return _Stream(self.inner.connect_unix_socket(*args, **kwargs), self.core)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def http_client(timeout: float) -> Any:
    """The SDK's default HTTP client (its limits, redirects), whose requests a run's
    ``StopHandle`` can cut short."""
    httpx, core = _libraries()
    limits = httpx.Limits(max_connections=MAX_CONNECTIONS,
                          max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS)
    transport = httpx.HTTPTransport(limits=limits)
    pool = getattr(transport, "_pool", None)
    if pool is not None and hasattr(pool, "_network_backend"):
        pool._network_backend = _Backend(pool._network_backend, core)
    else:  # a transport library laid out otherwise: requests then end at their timeout
        log.warning("LLM requests cannot be cut short in this HTTP library; a stopped run "
                    "waits for its request to end")
    return openai.DefaultHttpxClient(transport=transport, timeout=timeout)
