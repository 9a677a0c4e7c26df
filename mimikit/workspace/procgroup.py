"""Subprocesses in process groups of their own, killed as a whole.

A timeout or a cancel kills a command together with everything it started in the background.
Several runs share one process (a threads pool), so each caller tracks its own groups
(``owner``) and stops only those (``kill_groups``); the registry of the whole process is for
looking only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KILL_GRACE_SECONDS = 2.0
POLL_SECONDS = 0.05

_live_lock = threading.Lock()
_live_pgids: set[int] = set()


# --- process groups ---------------------------------------------------------------------------


def _group_members(pgid: int) -> list[int]:
    """Pids of the live (non-zombie) processes in process group ``pgid``."""
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: ask the kernel whether the group exists at all
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended between listing and reading
            continue
        fields = stat.rsplit(")", 1)[1].split()
        # Zombies are dead already; they linger when nobody reaps them (e.g. PID 1 in a container).
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:  # the group ended on its own meanwhile
        return


def _wait_group_gone(pgid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _group_members(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True


def kill_process_group(pgid: int, grace_seconds: float = KILL_GRACE_SECONDS) -> bool:
    """Stop every process of a group: SIGTERM, then SIGKILL after ``grace_seconds``.

    Args:
        pgid: the process group id (the pid of the process started with a new session).
        grace_seconds: how long the group may take to exit after SIGTERM.

    Returns:
        True when there was something to kill.
    """
    if not _group_members(pgid):
        return False
    _signal_group(pgid, signal.SIGTERM)
    if not _wait_group_gone(pgid, grace_seconds):
        _signal_group(pgid, signal.SIGKILL)
        _wait_group_gone(pgid, 1.0)
    return True


def live_process_groups() -> list[int]:
    """Process groups started by this process (by any of its runs) and still running."""
    with _live_lock:
        return sorted(_live_pgids)


class _Capture:
    """Reads a pipe to its end, keeping the first and last ``limit / 2`` bytes (and handing
    each whole line to ``on_line`` as it arrives, when given)."""

    def __init__(self, stream: Any, limit: int, on_line: Callable[[str], None] | None = None
                 ) -> None:
        self.head, self.tail = bytearray(), bytearray()
        self.half, self.dropped = max(limit // 2, 1), 0
        self.on_line, self.partial = on_line, bytearray()
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _lines(self, chunk: bytes) -> None:
        if self.on_line is None:
            return
        self.partial += chunk
        *lines, rest = self.partial.split(b"\n")
        self.partial = bytearray(rest)
        for line in lines:
            self.on_line(line.decode(errors="replace"))

    def _pump(self, stream: Any) -> None:
        with stream:
            while chunk := stream.read1(65536):
                self._lines(chunk)
                room = self.half - len(self.head)
                self.head += chunk[:room]
                self.tail += chunk[max(room, 0) :]
                if len(self.tail) > self.half:
                    self.dropped += len(self.tail) - self.half
                    del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        self.thread.join(KILL_GRACE_SECONDS)
        head, tail = bytes(self.head), bytes(self.tail)
        marker = f"\n[truncated {self.dropped} bytes]\n" if self.dropped else ""
        return head.decode(errors="replace") + marker + tail.decode(errors="replace")


def _feed(stream: Any, data: bytes) -> None:
    try:
        with stream:
            stream.write(data)
    except BrokenPipeError:  # the program exited without reading all of its input
        return


@dataclass(frozen=True)
class ProcessRun:
    """How a process group run ended."""

    exitCode: int | None
    stdout: str
    stderr: str
    timedOut: bool
    stopped: bool
    durationMs: int


def run_process_group(
    argv: list[str],
    *,
    cwd: Path,
    timeout: float,
    stdin_data: bytes | None = None,
    output_limit_bytes: int = 64_000,
    stop: Callable[[], bool] | None = None,
    env: dict[str, str] | None = None,
    owner: set[int] | None = None,
    on_line: Callable[[str], None] | None = None,
) -> ProcessRun:
    """Run ``argv`` in a new process group; kill the whole group when it ends, times out or stops.

    Args:
        argv: the program and its arguments.
        cwd: the working directory.
        timeout: seconds before the group is killed (``timedOut`` is then True).
        stdin_data: bytes written to stdin; stdin is /dev/null when None.
        output_limit_bytes: how much of stdout and of stderr is kept (head and tail).
        stop: polled while running; when it returns True the group is killed (``stopped``).
        env: the environment (default: this process's).
        owner: a set that holds the group id while it runs (besides the module registry).
        on_line: given each line of stdout as it arrives.
    """
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL if stdin_data is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    with _live_lock:
        _live_pgids.add(proc.pid)
        if owner is not None:
            owner.add(proc.pid)
    out = _Capture(proc.stdout, output_limit_bytes, on_line)
    err = _Capture(proc.stderr, output_limit_bytes)
    if stdin_data is not None:
        threading.Thread(target=_feed, args=(proc.stdin, stdin_data), daemon=True).start()
    timed_out = stopped = False
    try:
        while proc.poll() is None:
            if stop is not None and stop():
                stopped = True
                break
            if time.monotonic() - started >= timeout:
                timed_out = True
                break
            time.sleep(POLL_SECONDS)
        # A stop that killed the group from another thread ends the loop through poll().
        stopped = stopped or (stop is not None and stop())
    finally:
        # Also on a normal exit: background children must not outlive the command.
        kill_process_group(proc.pid)
        proc.wait()
        with _live_lock:
            _live_pgids.discard(proc.pid)
            if owner is not None:
                owner.discard(proc.pid)
    return ProcessRun(
        exitCode=proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timedOut=timed_out,
        stopped=stopped,
        durationMs=int((time.monotonic() - started) * 1000),
    )


def kill_groups(pgids: set[int]) -> None:
    """Kill the groups in ``pgids`` (a set that ``run_process_group`` keeps up to date)."""
    with _live_lock:
        snapshot = sorted(pgids)
    for pgid in snapshot:
        kill_process_group(pgid)
