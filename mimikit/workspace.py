"""The Worker's file and shell actions, confined to the work directory.

Every subprocess runs in its own process group so that a timeout, a cancel or a Celery
revoke can kill the command together with everything it started in the background.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimikit.exceptions import ConfigError, ToolError

READ_LIMIT_BYTES = 1_000_000
LIST_LIMIT_ENTRIES = 500
KILL_GRACE_SECONDS = 2.0
POLL_SECONDS = 0.05
# Secrets of the runtime itself; a shell command run on behalf of a model never needs them.
HIDDEN_ENV_VARS = ("MIMIKIT_API_TOKEN", "MIMIKIT_LLM_API_KEY")

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
    """Process groups started by this process and still running (for revoke handlers)."""
    with _live_lock:
        return sorted(_live_pgids)


def kill_live_process_groups() -> int:
    """Kill every process group this process started; returns how many were killed."""
    return sum(kill_process_group(pgid) for pgid in live_process_groups())


class _Capture:
    """Reads a pipe to its end, keeping the first and last ``limit / 2`` bytes."""

    def __init__(self, stream: Any, limit: int) -> None:
        self.head, self.tail = bytearray(), bytearray()
        self.half, self.dropped = max(limit // 2, 1), 0
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream: Any) -> None:
        with stream:
            while chunk := stream.read1(65536):
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
    out = _Capture(proc.stdout, output_limit_bytes)
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


# --- the workspace ----------------------------------------------------------------------------


class Workspace:
    """File and shell actions confined to one work directory."""

    def __init__(
        self,
        root: Path,
        shell_timeout_default: float = 120,
        shell_timeout_max: float = 3600,
        output_limit_bytes: int = 64_000,
    ) -> None:
        root = Path(root).expanduser()
        if not root.is_dir():
            raise ConfigError(
                f"work directory {str(root)!r} does not exist or is not a directory; "
                "create it or set MIMIKIT_WORK_DIR"
            )
        self.root = root.resolve()
        self.shell_timeout_default = shell_timeout_default
        self.shell_timeout_max = shell_timeout_max
        self.output_limit_bytes = output_limit_bytes
        self.live_pgids: set[int] = set()
        self._canceled = threading.Event()

    # -- paths --

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (relative to the root); refuses anything outside the root."""
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            raise ToolError(f"path {path!r} is not a valid file path; use e.g. 'notes/todo.md'")
        candidate = Path(path) if Path(path).is_absolute() else self.root / path
        lexical = Path(os.path.normpath(candidate))
        if not lexical.is_relative_to(self.root):
            raise ToolError(
                f"path {path!r} is outside the work directory {self.root}; use a path inside it"
            )
        real = Path(os.path.realpath(candidate))
        if not real.is_relative_to(self.root):
            raise ToolError(
                f"path {path!r} goes through a symlink to {real}, outside the work directory "
                f"{self.root}; use a path inside it"
            )
        return real

    def _relative(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix() or "."

    # -- files --

    def read_file(self, path: str) -> str:
        """The text of a UTF-8 file of at most 1 MB."""
        real = self.resolve(path)
        if not real.exists():
            raise ToolError(f"no such file: {path!r}; use list_files to see what exists")
        if real.is_dir():
            raise ToolError(f"{path!r} is a directory; use list_files to see its entries")
        size = real.stat().st_size
        if size > READ_LIMIT_BYTES:
            raise ToolError(
                f"file {path!r} is {size} bytes, over the {READ_LIMIT_BYTES} byte limit; "
                "use shell (e.g. head, grep) to read parts of it"
            )
        data = real.read_bytes()
        try:
            if b"\x00" in data[:8192]:
                raise UnicodeDecodeError("utf-8", data, 0, 1, "NUL byte")
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(
                f"file {path!r} is binary (not UTF-8 text); use shell (e.g. file, xxd) to inspect it"
            ) from None

    def write_file(self, path: str, content: str) -> dict[str, Any]:
        """Write ``content`` as UTF-8, creating parent directories; returns {path, bytes}."""
        real = self.resolve(path)
        if real.is_dir():
            raise ToolError(f"{path!r} is a directory; give a file path to write")
        data = content.encode("utf-8")
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_bytes(data)
        return {"path": self._relative(real), "bytes": len(data)}

    def list_files(self, path: str = ".") -> list[str]:
        """Entries of a directory, relative to the root, sorted; directories end with '/'."""
        real = self.resolve(path)
        if not real.is_dir():
            raise ToolError(f"no such directory: {path!r}; use list_files('.') to start at the top")
        entries = sorted(
            self._relative(child) + ("/" if child.is_dir() else "") for child in real.iterdir()
        )
        if len(entries) > LIST_LIMIT_ENTRIES:
            hidden = len(entries) - LIST_LIMIT_ENTRIES
            entries = entries[:LIST_LIMIT_ENTRIES]
            entries.append(f"[{hidden} more entries not shown; list a subdirectory]")
        return entries

    # -- shell --

    def shell(self, command: str, timeout: float | None = None) -> dict[str, Any]:
        """Run ``command`` in the work directory; background children die with it.

        Returns:
            {exitCode, stdout, stderr, timedOut, canceled, durationMs}.
        """
        if self._canceled.is_set():
            raise ToolError("the task was canceled; no more commands run")
        if not command.strip():
            raise ToolError("command is empty; give a shell command such as 'ls -la'")
        if timeout is not None and timeout <= 0:
            raise ToolError(f"timeout {timeout} is not positive; give seconds, e.g. 60")
        seconds = min(timeout or self.shell_timeout_default, self.shell_timeout_max)
        shell = shutil.which("bash") or "/bin/sh"
        env = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV_VARS}
        run = run_process_group(
            [shell, "-c", command],
            cwd=self.root,
            timeout=seconds,
            output_limit_bytes=self.output_limit_bytes,
            stop=self._canceled.is_set,
            env=env,
            owner=self.live_pgids,
        )
        return {
            "exitCode": run.exitCode,
            "stdout": run.stdout,
            "stderr": run.stderr,
            "timedOut": run.timedOut,
            "canceled": run.stopped,
            "durationMs": run.durationMs,
        }

    @property
    def canceled(self) -> bool:
        return self._canceled.is_set()

    def cancel(self) -> None:
        """Kill the running command (from any thread) and refuse further ones."""
        self._canceled.set()
        with _live_lock:
            pgids = sorted(self.live_pgids)
        for pgid in pgids:
            kill_process_group(pgid)
