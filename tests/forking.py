"""Celery workers and beats and ``mimikit web`` for tests, forked from one parent that has
imported their code already.

A test worker's interpreter spends about three seconds of a core importing Celery, the OpenAI
SDK and Mimikit before it reads a task; the suite starts hundreds. The parent
(``python forking.py``, one per test session) imports that code once and, for each line it
reads (``{"module": ..., "argv": [...], "env": {...}, "cwd": ..., "log": ...}``), forks a child
that becomes a session of its own, takes that environment, and runs the module as ``python -m
MODULE ARGV`` would. The children are real Celery workers, beats and web servers; only the
imports are shared. Nothing the parent imports reads the settings: the Celery configuration is
read in each child, from the child's environment.

The parent reaps its children and writes each exit status to ``<pid>.rc`` in its directory;
``Forked`` reads it, so a test holds a child as it holds a ``subprocess.Popen``.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

READY = "ready"
PRELOADED = (
    "worker_app", "mimikit.celery_tasks", "celery.bin.celery", "celery.apps.worker",
    "celery.apps.beat", "celery.concurrency.thread", "celery.concurrency.prefork",
    "celery.concurrency.solo", "kombu.transport.redis", "mimikit.scheduling.beat",
    "mimikit.memory.search", "mimikit.mcp.run", "mimikit.supervisor.tick",
    "mimikit.supervisor.recovery", "mimikit.supervisor.archival", "mimikit.scheduling.timed",
    "mimikit.cli", "mimikit.web", "mimikit.web.server",
)
TESTS = Path(__file__).resolve().parent
_shared: list[Forker] = []


class Forked:
    """A child of the forking parent, held like a ``subprocess.Popen``: ``pid``, ``poll``,
    ``wait``, ``returncode``, ``send_signal``, ``terminate``, ``kill``."""

    def __init__(self, pid: int, status_dir: Path, args: list[str]) -> None:
        self.pid, self.args = pid, args
        self.returncode: int | None = None
        self._status = status_dir / f"{pid}.rc"

    def poll(self) -> int | None:
        if self.returncode is None and self._status.exists():
            self.returncode = int(self._status.read_text())
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.02)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Forker:
    """The test side of the forking parent: started once, asked for one child at a time."""

    def __init__(self, status_dir: Path, env: dict[str, str], cwd: Path) -> None:
        status_dir.mkdir(parents=True, exist_ok=True)
        self.status_dir = status_dir
        self._lock = threading.Lock()
        self._parent = subprocess.Popen(
            [sys.executable, str(Path(__file__)), str(status_dir)], cwd=cwd, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert self._read() == READY, "the forking parent did not start"

    def _read(self) -> str:
        assert self._parent.stdout is not None
        return self._parent.stdout.readline().strip()

    def start(self, module: str, argv: list[str], env: dict[str, str], cwd: Path, log: Path
              ) -> Forked:
        """Fork a child running ``python -m MODULE ARGV`` with ``env`` in ``cwd``, its output
        appended to ``log``."""
        request = json.dumps({"module": module, "argv": argv, "env": env, "cwd": str(cwd),
                              "log": str(log)})
        with self._lock:
            assert self._parent.stdin is not None
            self._parent.stdin.write(request + "\n")
            self._parent.stdin.flush()
            pid = int(self._read())
        return Forked(pid, self.status_dir, [module, *argv])

    def close(self) -> None:
        if self._parent.stdin is not None:
            self._parent.stdin.close()
        self._parent.wait(timeout=10)


def shared() -> Forker:
    """The forking parent of this test session, started on first need (with the environment
    as it is then, the tests and the repository importable) and closed at exit."""
    if not _shared:
        status_dir = Path(tempfile.mkdtemp(prefix="mimikit-forked-"))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")])}
        _shared.append(Forker(status_dir, env, TESTS.parent))
        atexit.register(shutil.rmtree, status_dir, True)  # after the close: last in, first run
        atexit.register(_shared[0].close)
    return _shared[0]


def _reap(status_dir: Path, *_: Any) -> None:
    """Record the exit status of every child that has ended."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        temporary = status_dir / f"{pid}.rc.tmp"
        temporary.write_text(str(os.waitstatus_to_exitcode(status)))
        temporary.rename(status_dir / f"{pid}.rc")


def _become(request: dict[str, Any]) -> None:
    """In the child: a session of its own, the request's environment, output and arguments;
    then the module, as ``python -m`` runs it."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [request["module"], *request["argv"]]
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # noqa: BLE001  (told in the log, as an interpreter would)
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _preload() -> None:
    """Import what every child would import for itself, and what some load on first need
    (the MCP SDK, jieba's dictionary): each child starts as a long-running worker would be."""
    for module in PRELOADED:
        importlib.import_module(module)
    from mimikit.memory.tokenize import prepare_tokenizer

    prepare_tokenizer()
    assert "mimikit.celeryconfig" not in sys.modules, "the settings must be read in the child"


def serve(status_dir: Path) -> None:
    """The forking parent: import once, then fork a child per request until stdin closes."""
    _preload()
    signal.signal(signal.SIGCHLD, lambda *args: _reap(status_dir, *args))
    print(READY, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _become(request)
        print(pid, flush=True)


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
