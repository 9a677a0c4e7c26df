"""``mimikit up`` on a machine with no Redis running: it starts one, serves, stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest
from processes import free_port, pid_alive, wait_for


def _status(port: int) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2) as reply:
            return json.loads(reply.read())
    except OSError:
        return None


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:  # the thread or process ended meanwhile
                continue
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def _up_env(redis_port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMIKIT_")}
    env["MIMIKIT_REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
    env.update(extra)
    return env


class Output:
    """The lines ``up`` prints, collected as they come by a thread."""

    def __init__(self, up: subprocess.Popen[str]) -> None:
        assert up.stdout is not None
        self.lines: list[str] = []
        self._thread = threading.Thread(
            target=lambda: self.lines.extend(iter(up.stdout.readline, "")), daemon=True)
        self._thread.start()

    def says(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def text(self) -> str:
        """All of it, once ``up`` has exited."""
        self._thread.join(timeout=10)
        return "".join(self.lines)


def _stop_up(up: subprocess.Popen[str], output: Output | None = None) -> str:
    """SIGINT ``up`` (it stops its children, Redis last) and return its output: the rest of it,
    or all of it when ``output`` follows it."""
    if up.poll() is None:
        up.send_signal(signal.SIGINT)
    try:
        if output is None:
            rest, _ = up.communicate(timeout=60)
            return rest or ""
        up.wait(timeout=60)
        return output.text()
    finally:
        if up.poll() is None:
            up.kill()


def test_up_refuses_a_public_host_without_a_token_before_starting_anything(tmp_path):
    env = _up_env(free_port(), MIMIKIT_HOST="0.0.0.0")
    up = subprocess.Popen([sys.executable, "-m", "mimikit", "up", "--port", str(free_port())],
                          cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = up.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("up kept running: " + _stop_up(up))
    assert up.returncode == 1, output
    assert "refusing to serve on 0.0.0.0 without a token" in output
    assert "MIMIKIT_API_TOKEN" in output
    assert "Redis" not in output and "ready" not in output
    assert not (tmp_path / ".mimikit").exists()  # no lock, no embedded Redis, no logs


def test_up_says_web_failed_instead_of_ready_when_web_cannot_start(tmp_path):
    import threading

    web_port = free_port()
    taken = socket.socket()  # bound, not listening: web cannot bind it, nothing answers there
    taken.bind(("127.0.0.1", web_port))
    up = subprocess.Popen([sys.executable, "-m", "mimikit", "up", "--port", str(web_port)],
                          cwd=tmp_path, env=_up_env(free_port()), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(up.stdout.readline, "")),
                              daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 40  # well under the old 60 s wait before "ready"
        while not any("web failed to start" in line for line in lines):
            assert time.monotonic() < deadline, f"no 'web failed to start' in {lines}"
            time.sleep(0.2)
        failed = next(line for line in lines if "web failed to start" in line)
        assert str(tmp_path / ".mimikit" / "logs" / "web.log") in failed
        assert any("web exited with" in line for line in lines)  # the watch loop runs meanwhile
    finally:
        up.send_signal(signal.SIGINT)  # the reader thread keeps reading its output meanwhile
        try:
            up.wait(timeout=60)
        finally:
            if up.poll() is None:
                up.kill()
            reader.join(timeout=10)
            taken.close()
    assert not any("ready at" in line for line in lines), lines
    assert "stopped" in "".join(lines)


@pytest.mark.slow
def test_up_starts_embedded_redis_serves_status_and_leaves_nothing_behind(tmp_path):
    web_port, redis_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMIKIT_")}
    env["MIMIKIT_REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
    argv = [sys.executable, "-m", "mimikit", "up", "--port", str(web_port)]
    up = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    output = Output(up)
    try:
        started = time.monotonic()
        wait_for(lambda: output.says("ready at"), timeout=60, message="up to say ready")
        assert time.monotonic() - started < 60
        body = _status(web_port)
        assert body is not None and body["ok"] is True and body["redis"]["ok"] is True
        assert len(body["workers"]) == 2
        children = _descendants(up.pid)
        assert len(children) >= 5  # redis, two workers (beat on a thread of one), web and its worker

        second = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=30)
        assert second.returncode == 1 and "already running" in second.stderr

        # The web child leads its process group (gunicorn's worker has the same command line).
        web = next(p for p in children if b"mimikit\x00web" in _cmdline(p) and _leads_group(p))
        os.killpg(web, signal.SIGKILL)
        wait_for(lambda: not pid_alive(web), timeout=10, message="the web child to die")
        wait_for(lambda: _status(web_port), timeout=30, interval=0.2,
                 message="the web child to be restarted")
        children |= _descendants(up.pid)
    finally:
        text = _stop_up(up, output)  # also on a failure: a SIGKILL would leave the children
    assert up.returncode == 0, text
    assert "ready at http://127.0.0.1:" in text and "stopped" in text
    assert "web exited with -9; restarting in 1 s" in text
    wait_for(lambda: not [p for p in children if pid_alive(p)], timeout=10,
             message="every child to exit")
    assert (tmp_path / ".mimikit" / "redis" / "appendonly.aof").exists() or any(
        (tmp_path / ".mimikit" / "redis").glob("appendonly*"))


def test_up_says_ready_only_when_every_part_can_take_a_job(tmp_path):
    """At the moment "ready" is printed, both workers have registered (after their warm-up),
    beat has ticked, the stored data is at this version's schema and the start-up recovery has
    finished: the first message does not wait for any of them."""
    from redis import Redis

    from mimikit.store.keys import Keys
    from mimikit.store.schema import SCHEMA_VERSION

    web_port, redis_port = free_port(), free_port()
    launched = time.time()
    up = subprocess.Popen([sys.executable, "-m", "mimikit", "up", "--port", str(web_port)],
                          cwd=tmp_path, env=_up_env(redis_port), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    output = Output(up)
    keys = Keys("mimikit")
    try:
        wait_for(lambda: output.says("ready at") or up.poll() is not None, timeout=90,
                 interval=0.05, message="up to say ready")
        status = _status(web_port)  # right after "ready", before anything else could catch up
        redis = Redis(port=redis_port)
        recovered, schema = redis.mget([keys.recovered_at, keys.meta("schema")])
    finally:
        text = _stop_up(up, output)
    assert "ready at" in text and status is not None, text
    assert sorted(w["name"].split("@")[0] for w in status["workers"]) == ["agents", "tasks"]
    assert status["beat"]["alive"] is True
    assert int(schema) == SCHEMA_VERSION
    assert recovered is not None and datetime.fromisoformat(recovered.decode()).timestamp() \
        >= launched


HOSTILE_FILES = {
    "celeryconfig.py": 'broker_url = "memory://"\nresult_backend = "cache+memory://"\n',
    "web.py": 'raise SystemExit("a web.py from the work directory was imported")\n',
    "mimikit/__init__.py": 'raise SystemExit("a mimikit/ from the work directory was imported")\n',
    "prompts/__init__.py": "",
    "prompts/agents/teller/identity.md": "HOSTILE IDENTITY\n",
}


def _hostile_dir(root: Path) -> Path:
    for name, body in HOSTILE_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)
    return root


@pytest.mark.slow
def test_up_in_a_hostile_work_dir_uses_its_own_broker_modules_and_prompts(tmp_path, llm):
    from llm_server import tool_call

    llm.default("teller", tool_call("reply", text="hello from the real prompts"))
    web_port, redis_port = free_port(), free_port()
    env = _up_env(redis_port, MIMIKIT_LLM_BASE_URL=llm.url, MIMIKIT_TELLER_MODEL="teller")
    mimikit = str(Path(sys.executable).parent / "mimikit")  # the installed command
    up = subprocess.Popen([mimikit, "up", "--port", str(web_port)], cwd=_hostile_dir(tmp_path),
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: len((_status(web_port) or {}).get("workers", [])) == 2, timeout=60,
                 interval=0.2, message="both workers registered in the real Redis")
        request = urllib.request.Request(
            f"http://127.0.0.1:{web_port}/api/input", data=b'{"text": "hi"}', method="POST",
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as reply:
            assert reply.status == 202
        wait_for(lambda: llm.requests_for("teller"), timeout=30, message="a Teller run")
    finally:
        output = _stop_up(up)
    system = llm.requests_for("teller")[0]["messages"][0]["content"]
    assert system.startswith("You are the Mimikit runtime teller.") and "HOSTILE" not in system
    assert "imported" not in output, output


@pytest.mark.slow
def test_celery_a_mimikit_app_ignores_a_celeryconfig_in_the_current_directory(runtime, tmp_path):
    from mimikit.launcher import spawn, stop_processes

    (tmp_path / "celeryconfig.py").write_text(HOSTILE_FILES["celeryconfig.py"])
    celery = str(Path(sys.executable).parent / "celery")
    name = f"hostile-{os.getpid()}@test"
    worker = spawn([celery, "-A", "mimikit.celery_app", "worker", "-Q", "worker", "-c", "1",
                    "-n", name, "--without-mingle", "--without-gossip"],
                   tmp_path / "worker.log", cwd=tmp_path, env=dict(os.environ))
    try:
        wait_for(lambda: runtime.redis.exists(runtime.keys.worker(name)) or worker.poll(),
                 timeout=30, message="the worker to register in the real Redis")
        assert worker.poll() is None, (tmp_path / "worker.log").read_text()
    finally:
        stop_processes([worker], 10)
    assert "memory://" not in (tmp_path / "worker.log").read_text()
