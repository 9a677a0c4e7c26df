"""What the end-to-end benchmarks run against, started as a user would start it.

- one redis-server (the embedded one) shared by everything, each ``mimikit up`` on a Redis
  database of its own;
- the scripted LLM (answering at once), so what is measured is Mimikit's own overhead;
- a raw Celery worker: a bare ``Celery`` app on the same Redis (``raw_app.py``), the baselines;
- ``mimikit up`` itself, talked to over HTTP like the page does: ``POST /api/input``, the
  ``/api/events`` stream, ``GET /api/messages``.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT / "tests"), str(BENCH), str(ROOT)]

from processes import free_port  # noqa: E402

READY_TIMEOUT_SECONDS = 120
REPLY_TIMEOUT_SECONDS = 60


class Services:
    """Redis, the scripted LLM and the raw Celery worker, for the whole run."""

    def __init__(self, tmp: Path, concurrency: int) -> None:
        from llm_server import ScriptedLLM

        from mimikit import embedded_redis

        self.tmp = tmp
        self.concurrency = concurrency
        self.redis_port = free_port()
        self.llm = ScriptedLLM().start()
        self.redis = embedded_redis.start(self.redis_url(0), tmp / "redis", tmp / "redis.log")
        self.raw_worker = self._start_raw_worker()

    def redis_url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/{db}"

    def _start_raw_worker(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ, MIMIKIT_BENCH_RAW_URL=self.redis_url(0),
                   MIMIKIT_BENCH_LLM_URL=self.llm.url, PYTHONPATH=str(BENCH))
        argv = [sys.executable, "-m", "celery", "-A", "raw_app", "worker", "-Q", "raw",
                "-c", str(self.concurrency), "-n", "raw@bench", "-l", "WARNING",
                "--without-mingle", "--without-gossip"]
        with open(self.tmp / "raw-worker.log", "ab") as log:
            return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=BENCH)

    def raw_app(self) -> Any:
        os.environ["MIMIKIT_BENCH_RAW_URL"] = self.redis_url(0)
        from raw_app import app

        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while not app.control.ping(timeout=0.5):
            if time.monotonic() > deadline:
                raise SystemExit(f"the raw Celery worker did not start; see {self.tmp}")
        return app

    def close(self) -> None:
        self.raw_worker.terminate()
        self.raw_worker.wait(timeout=30)
        self.redis.terminate()
        self.redis.wait(timeout=30)
        self.llm.shutdown()


class Instance:
    """One ``mimikit up`` on its own Redis database and state dir, in the foreground."""

    def __init__(self, services: Services, name: str, db: int,
                 env: dict[str, str] | None = None) -> None:
        self.dir = services.tmp / name
        self.port = free_port()
        self.settings = {
            "MIMIKIT_REDIS_URL": services.redis_url(db), "MIMIKIT_STATE_DIR": str(self.dir / "state"),
            "MIMIKIT_WORK_DIR": str(self.dir / "work"), "MIMIKIT_PORT": str(self.port),
            "MIMIKIT_CONCURRENCY": str(services.concurrency),
            "MIMIKIT_LLM_BASE_URL": services.llm.url, "MIMIKIT_TELLER_MODEL": "teller",
            "MIMIKIT_PLANNER_MODEL": "planner", "MIMIKIT_WORKER_MODEL": "worker",
            **(env or {}),
        }
        (self.dir / "work").mkdir(parents=True, exist_ok=True)
        self.output: list[str] = []
        self._ready = threading.Event()
        self.ready_timeout = float(self.settings.get("MIMIKIT_BENCH_READY_SECONDS",
                                                    READY_TIMEOUT_SECONDS))
        began = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mimikit", "up"], env={**os.environ, **self.settings},
            cwd=self.dir / "work", stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read_output, daemon=True).start()
        if not self._ready.wait(self.ready_timeout):
            self.stop()
            raise SystemExit("mimikit up did not say ready:\n" + "".join(self.output[-30:]))
        self.ready_seconds = time.monotonic() - began
        self.client = Client(self.port)

    def _read_output(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            if "ready at" in line:
                self._ready.set()

    def runtime(self) -> Any:
        """A runtime in this process on the instance's Redis, to submit and count tasks (call
        it once, before anything of Mimikit sends a task here: Mimikit's Celery app reads its
        broker from the environment when first used)."""
        os.environ.update(self.settings)
        from mimikit.config import load_settings
        from mimikit.store.runtime import build_runtime

        fields = {name.removeprefix("MIMIKIT_").lower(): value
                  for name, value in self.settings.items()}
        return build_runtime(load_settings(**fields))

    def stop(self) -> None:
        if hasattr(self, "client"):
            self.client.close()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


class Client:
    """The page's side of the HTTP API: posts input, follows ``/api/events``, reads messages."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.events: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        # HTTP/1.0, so the stream comes unchunked and ends with the connection.
        self._stream = socket.create_connection(("127.0.0.1", port))
        self._stream.sendall(f"GET /api/events HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
                             .encode())
        lines = self._stream.makefile("rb")
        status = lines.readline().decode()
        if " 200 " not in status:
            raise SystemExit(f"GET /api/events answered {status.strip()!r}")
        while lines.readline().strip():
            pass  # the headers
        threading.Thread(target=self._follow, args=(lines,), daemon=True).start()

    def _follow(self, lines: Any) -> None:
        event, data = "", ""
        try:
            for raw in lines:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data += line[6:]
                elif not line:
                    if event:
                        self.events.put((event, json.loads(data) if data else {}))
                    event, data = "", ""
        except (OSError, ValueError):
            return  # closed

    def call(self, method: str, path: str, body: Any = None) -> Any:
        payload = None if body is None else json.dumps(body)
        headers = {"Content-Type": "application/json"} if payload else {}
        try:
            self.http.request(method, path, body=payload, headers=headers)
            response = self.http.getresponse()
        except (http.client.RemoteDisconnected, ConnectionError):
            self.http.close()  # the server closed the idle connection: a new one
            self.http.request(method, path, body=payload, headers=headers)
            response = self.http.getresponse()
        data = response.read()
        if response.status >= 400:
            raise SystemExit(f"{method} {path} answered {response.status}: {data[:300]!r}")
        return json.loads(data)

    def say(self, text: str, answered: Callable[[str], bool]) -> float:
        """Post ``text``; seconds until a Teller message for which ``answered(text)`` holds is
        in ``GET /api/messages`` (seen on the event stream, then read back)."""
        while not self.events.empty():
            self.events.get_nowait()
        began = time.perf_counter()
        self.call("POST", "/api/input", {"text": text})
        deadline = time.monotonic() + REPLY_TIMEOUT_SECONDS
        while True:
            try:
                event, data = self.events.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise SystemExit(f"no answer to {text!r} in {REPLY_TIMEOUT_SECONDS} s") from None
            if event == "message" and data.get("role") == "assistant" and answered(data["text"]):
                break
        shown = self.call("GET", "/api/messages?limit=20")["messages"]
        if not any(m["id"] == data["id"] for m in shown):
            raise SystemExit(f"the answer to {text!r} is not in GET /api/messages")
        return time.perf_counter() - began

    def close(self) -> None:
        self.http.close()
        self._stream.close()
