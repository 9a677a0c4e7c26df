"""``mimikit up``: Redis (embedded when none answers), workers, beat and web, in the foreground.

Few processes, for a small footprint: the agents worker runs beat on a thread (``--beat``),
both workers run Celery's threads pool (a run waiting for the LLM costs a thread, not a
process), and the web is one gunicorn worker.

Children that die are restarted with backoff; Ctrl-C or SIGTERM stops them all, Redis last, and
leaves no process behind. A lock file keeps a second ``up`` off the same state dir. Each child's
output goes to ``STATE_DIR/logs/NAME.log``, rotated by size (``mimikit.logfiles``).
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from redis.exceptions import RedisError

from mimikit import embedded_redis, logs
from mimikit.config import Settings, check_web_bind, hide_password
from mimikit.exceptions import AlreadyRunning, MimikitError
from mimikit.logfiles import pump, rotate_if_over
from mimikit.models import utcnow
from mimikit.workspace.sandbox import sandbox_report

STOP_GRACE_SECONDS = 20
BEAT_GRACE_SECONDS = 60
BEAT_CHECK_SECONDS = 10
MAX_BACKOFF_SECONDS = 30
READY_PROBE_SECONDS = 0.5
READY_WARN_SECONDS = 60
ROTATE_CHECK_SECONDS = 10  # how often the embedded Redis's own log is checked for its size
PUMP_DRAIN_SECONDS = 5  # how long the last lines of a stopped child may take to reach its log
# Threads of the agents worker: one Teller run at a time, the supervisor tick, trigger firings,
# memory archival and start-up recovery side by side.
AGENT_THREADS = 4
BEAT_CHILD = "worker-agents"  # the child that runs beat (on a thread)
# The log that tells why a part is not ready, for the parts that are not a child of their own.
PART_LOGS = {"beat": BEAT_CHILD, "schema": BEAT_CHILD, "recovery": BEAT_CHILD,
             "llm prompts": BEAT_CHILD}
log = logging.getLogger("mimikit.up")


@dataclass
class Child:
    """One supervised process."""

    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    next_start: float = 0.0
    started_at: float = field(default=0.0)
    pumps: list[threading.Thread] = field(default_factory=list)


def lock_state_dir(state_dir: Path) -> IO[str]:
    """Hold an exclusive lock on ``STATE_DIR/mimikit.lock`` for the life of the process."""
    state_dir.mkdir(parents=True, exist_ok=True)
    handle = open(state_dir / "mimikit.lock", "a+")  # noqa: SIM115
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        pid = handle.read().strip() or "?"
        raise AlreadyRunning(
            f"mimikit is already running on {state_dir.resolve()} (pid {pid}); stop it first "
            "or use another --state-dir"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def children_for(settings: Settings) -> list[Child]:
    """The processes of one instance: an agents worker (the Teller and the supervisor, so they
    never wait behind planning or tasks, and beat on a thread), a task worker (Planner and
    Worker runs, as many at once as ``MIMIKIT_CONCURRENCY``), web. Both workers run Celery's
    threads pool."""
    # -P: the current directory (often the work directory) is not put on sys.path, so a
    # mimikit/ there cannot replace the installed package.
    me = [sys.executable, "-P", "-m", "mimikit"]
    return [
        Child("worker-agents", me + ["worker", "--queues", "teller,supervisor",
                                     "--concurrency", str(AGENT_THREADS),
                                     "--name", "agents@%h", "--beat"]),
        Child("worker-tasks", me + ["worker", "--queues", "planner,worker",
                                    "--concurrency", str(settings.concurrency),
                                    "--name", "tasks@%h"]),
        Child("web", me + ["web"]),
    ]


class Launcher:
    """Starts, watches and stops the children of ``mimikit up``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.log_dir = settings.state_dir / "logs"
        self.redis: subprocess.Popen[bytes] | None = None
        self.children = children_for(settings)
        self.stopping = False
        self._beat_checked = 0.0
        self._runtime: Any = None
        self._ready = False
        self._slow_start_said = False
        self._started_at = 0.0
        self._launched_at = utcnow()
        self._next_probe = 0.0
        self._next_rotate_check = 0.0

    def say(self, text: str) -> None:
        log.info(text)

    def run(self) -> int:
        """Run until a signal; returns the exit status."""
        lock = lock_state_dir(self.settings.state_dir)
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        try:
            announce_sandbox(self.settings)
            self._ensure_redis()
            self._started_at, self._launched_at = time.monotonic(), utcnow()
            for child in self.children:
                self._start(child)
            while not self.stopping:
                self._watch()
                self._announce()
                time.sleep(0.2 if not self._ready else 0.5)
        finally:
            self._stop_all()
            lock.close()
        return 0

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stopping = True

    def _ensure_redis(self) -> None:
        url = self.settings.redis_url
        if embedded_redis.reachable(url):
            self.say(f"using Redis at {hide_password(url)}")
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.say(f"no Redis answers at {hide_password(url)}; starting the embedded "
                 "redis-server (AOF on)")
        self.redis = embedded_redis.start(url, self.settings.state_dir / "redis",
                                          self.log_dir / "redis.log")

    def _start(self, child: Child) -> None:
        child.process = spawn(child.argv, None)
        assert child.process.stdout is not None  # a pipe: spawn was given no log file
        child.pumps = [p for p in child.pumps if p.is_alive()]
        child.pumps.append(pump(child.process.stdout, self.log_dir / f"{child.name}.log"))
        child.started_at = time.monotonic()

    def _watch(self) -> None:
        if self.redis is not None and self.redis.poll() is not None:
            self.say(f"redis-server exited ({self.redis.returncode}); restarting it")
            self._ensure_redis()
        now = time.monotonic()
        self._check_beat(now)
        if now >= self._next_rotate_check:
            self._next_rotate_check = now + ROTATE_CHECK_SECONDS
            rotate_if_over(self.log_dir / "redis.log")
        for child in self.children:
            process = child.process
            if process is None:
                if now >= child.next_start:
                    self._start(child)
                continue
            if process.poll() is None:
                if now - child.started_at > 60:
                    child.restarts = 0
                continue
            delay = min(2 ** child.restarts, MAX_BACKOFF_SECONDS)
            self.say(f"{child.name} exited with {process.returncode}; restarting in {delay} s "
                     f"(log: {self.log_dir / (child.name + '.log')})")
            child.restarts += 1
            child.process = None
            child.next_start = now + delay

    def _check_beat(self, now: float) -> None:
        """Restart our beat (the agents worker, which embeds it) when no beat has ticked for a
        while although ours is running."""
        beat = next(c for c in self.children if c.name == BEAT_CHILD)
        if beat.process is None or now - beat.started_at < BEAT_GRACE_SECONDS:
            return
        if now - self._beat_checked < BEAT_CHECK_SECONDS:
            return
        self._beat_checked = now
        from mimikit.scheduling.liveness import liveness

        try:
            alive = liveness(self._get_runtime())["alive"]
        except RedisError:
            return  # Redis itself is down: the watch above deals with it
        if not alive:
            self.say(f"beat stopped scheduling (no liveness mark); restarting {BEAT_CHILD}, "
                     "which runs it")
            signal_group(beat.process, signal.SIGKILL)
            beat.process.wait(timeout=10)
            beat.process, beat.next_start = None, now

    def _announce(self) -> None:
        """Say "ready" once every part can take its first job (``mimikit.readiness``), or that
        the web failed when it exits first, or which parts are still missing after a while.

        Called from the watch loop, so the children are still watched meanwhile.
        """
        if self._ready or self.stopping:
            return
        web = next(c for c in self.children if c.name == "web")
        if web.process is None or web.process.poll() is not None:
            if not self._slow_start_said:
                self._slow_start_said = True
                self.say(f"web failed to start; see {self._log_of('web')}")
            return
        now = time.monotonic()
        if now < self._next_probe:
            return
        self._next_probe = now + READY_PROBE_SECONDS
        from mimikit.readiness import missing_parts

        host = self.settings.host
        url = f"http://{f'[{host}]' if ':' in host else host}:{self.settings.port}"
        worker_pids = {c.name: c.process.pid for c in self.children
                       if c.name.startswith("worker") and c.process is not None}
        missing = missing_parts(self._get_runtime(), url, worker_pids, self._launched_at)
        if missing:
            if now - self._started_at > READY_WARN_SECONDS and not self._slow_start_said:
                self._slow_start_said = True
                self.say("not ready yet, still waiting for " + ", ".join(
                    f"{name} (log: {self._log_of(PART_LOGS.get(name, name))})"
                    for name in missing))
            return
        self._ready = True
        self.say(f"ready at {url} in {now - self._started_at:.1f} s  "
                 f"(Ctrl-C stops everything; logs in {self.log_dir})")

    def _log_of(self, name: str) -> Path:
        return (self.log_dir / f"{name}.log").resolve()

    def _get_runtime(self) -> Any:
        from mimikit.store.runtime import build_runtime

        self._runtime = self._runtime or build_runtime(self.settings)
        return self._runtime

    def _stop_all(self) -> None:
        self.say("stopping")
        stop_processes([c.process for c in self.children if c.process], STOP_GRACE_SECONDS)
        if self.redis is not None:
            stop_processes([self.redis], 10)
        deadline = time.monotonic() + PUMP_DRAIN_SECONDS
        for thread in (t for c in self.children for t in c.pumps):
            thread.join(timeout=max(deadline - time.monotonic(), 0.01))
        self.say("stopped")


def announce_sandbox(settings: Settings) -> None:
    """Say, once at start-up, which sandbox Worker shell commands run in and its limits; warn
    when they get none or it leaves the network open against the setting (``off``: a word)."""
    report = sandbox_report(settings)
    if report["state"] in ("warn", "fail"):
        log.warning("Worker shell sandbox: %s; fix: %s", report["detail"], report["fix"])
    else:
        log.info("Worker shell sandbox: %s", report["detail"])


def spawn(argv: list[str], log_path: Path | None, **options: Any) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a process group of its own, its output appended to ``log_path`` (or
    to a pipe, ``process.stdout``, without one)."""
    if log_path is None:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, **options)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, **options)


def signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    """Send ``signum`` to the process group of ``process`` (nothing when it is gone)."""
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def stop_processes(processes: list[subprocess.Popen[bytes]], grace_seconds: float,
                   first_signal: int = signal.SIGTERM) -> None:
    """Stop each process group: ``first_signal``, up to ``grace_seconds`` to exit, then SIGKILL
    for whatever is left of each group, grandchildren included."""
    live = [p for p in processes if p.poll() is None]
    for process in live:
        signal_group(process, first_signal)
    wait_all(live, grace_seconds)
    for process in live:
        signal_group(process, signal.SIGKILL)
    wait_all(live, 10)


def wait_all(processes: list[subprocess.Popen[bytes]], seconds: float) -> None:
    """Wait up to ``seconds`` in all for the processes to exit."""
    deadline = time.monotonic() + seconds
    for process in processes:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            continue


def run_up(settings: Settings) -> int:
    """Entry point of ``mimikit up``; checks the web bind before starting anything."""
    try:
        check_web_bind(settings)
        logs.configure_from(settings, sys.stdout)
        return Launcher(settings).run()
    except MimikitError as error:
        print(f"mimikit: {error}", file=sys.stderr)
        return 1
