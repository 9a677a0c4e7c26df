"""``mimikit flower``: a real Flower process that sees real ``mimikit.worker`` tasks."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from llm_server import tool_call
from processes import ROOT, TESTS, free_port, run_mimikit, wait_for
from pydantic import SecretStr

from mimikit.lifecycle.submit import submit
from mimikit.models import Task


class Flower:
    def __init__(self, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.log = tmp_path / f"flower-{self.port}.log"
        full_env = {**os.environ, **(env or {}),
                    "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)])}
        full_env.pop("FLOWER_UNAUTHENTICATED_API", None)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "mimikit", "flower", "--port", str(self.port), *args],
                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=full_env,
                start_new_session=True)

    def get(self, path: str, auth: str | None = None) -> tuple[int, str]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}")
        if auth:
            request.add_header("Authorization",
                               "Basic " + base64.b64encode(auth.encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def wait_ready(self) -> None:
        def ready() -> bool:
            assert self.process.poll() is None, self.log.read_text()
            try:
                return self.get("/healthcheck")[0] == 200
            except OSError:
                return False

        wait_for(ready, timeout=30, message="flower to answer")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


@pytest.fixture
def flowers(runtime, tmp_path):
    started: list[Flower] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Flower:
        flower = Flower(tmp_path, *args, env=env)
        started.append(flower)
        return flower

    yield start
    for flower in started:
        flower.stop()


def listening_addresses(port: int) -> set[str]:
    """Local IPv4 addresses with a socket listening on ``port`` (from /proc/net/tcp)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, port_hex = local.split(":")
        if state == "0A" and int(port_hex, 16) == port:
            found.add(".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0)))
    return found


def event_subscriptions(redis) -> int:
    """Pub/sub subscriptions on the broker (Flower's event receiver adds one)."""
    return redis.pubsub_numpat() + sum(n for _c, n in redis.pubsub_numsub(
        *redis.pubsub_channels()) or [])


def test_flower_lists_a_completed_mimikit_worker_task_through_its_api(stack, llm, flowers):
    before = event_subscriptions(stack.redis)
    flower = flowers()
    flower.wait_ready()
    # Task events are not stored: run the task only once Flower listens to them.
    wait_for(lambda: event_subscriptions(stack.redis) > before, timeout=20,
             message="flower to subscribe to task events")
    assert listening_addresses(flower.port) == {"127.0.0.1"}
    llm.script("worker", tool_call("submit_result", status="done", resultType="text",
                                   result={"text": "counted 3 files"}))
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="count the files", title="count")])[0]
    wait_for(lambda: stack.tasks.get(task.id).status == "done", timeout=30,
             message="the worker task to finish")

    def completed_in_flower() -> dict | None:
        status, body = flower.get("/api/tasks?taskname=mimikit.worker")
        assert status == 200, body  # the unauthenticated API is on for loopback
        found = [t for t in json.loads(body).values() if task.id in (t.get("args") or "")]
        return found[0] if found and found[0]["state"] == "SUCCESS" else None

    seen = wait_for(completed_in_flower, timeout=20, message="flower to list the task")
    assert seen["name"] == "mimikit.worker"
    assert seen["uuid"] == stack.tasks.get(task.id).celeryId
    assert seen["worker"].startswith("tasks-")


def test_flower_with_basic_auth_keeps_its_api_closed_to_anonymous_calls(runtime, flowers):
    flower = flowers(env={"MIMIKIT_FLOWER_BASIC_AUTH": "admin:pw",
                          "FLOWER_UNAUTHENTICATED_API": "true"})
    wait_for(lambda: listening_addresses(flower.port) or flower.process.poll() is not None,
             timeout=30, message="flower to listen")
    assert listening_addresses(flower.port) == {"127.0.0.1"}
    wait_for(lambda: flower.get("/api/tasks", auth="admin:pw")[0] == 200, timeout=10,
             message="flower API with basic auth")
    assert flower.get("/api/tasks")[0] == 401
    assert flower.get("/api/tasks", auth="admin:wrong")[0] == 401


def test_flower_refuses_a_public_address_without_auth(runtime):
    done = run_mimikit("flower", "--address", "0.0.0.0", "--port", str(free_port()),
                       drop=("MIMIKIT_FLOWER_BASIC_AUTH",))
    assert done.returncode == 1
    assert "refusing to serve Flower on 0.0.0.0 without auth" in done.stderr
    assert "MIMIKIT_FLOWER_BASIC_AUTH" in done.stderr


def test_flower_argv_opens_the_api_only_on_loopback_without_auth(runtime, monkeypatch):
    from mimikit.exceptions import ConfigError
    from mimikit.flower import flower_argv

    monkeypatch.delenv("MIMIKIT_FLOWER_BASIC_AUTH", raising=False)
    monkeypatch.delenv("FLOWER_UNAUTHENTICATED_API", raising=False)  # restored afterwards
    argv = flower_argv(runtime.settings, "127.0.0.1", 5555)
    assert "--address=127.0.0.1" in argv and os.environ["FLOWER_UNAUTHENTICATED_API"] == "true"
    with_auth = runtime.settings.model_copy(update={"flower_basic_auth": SecretStr("u:p")})
    argv = flower_argv(with_auth, "0.0.0.0", 5555)
    assert "--basic-auth=u:p" in argv and "FLOWER_UNAUTHENTICATED_API" not in os.environ
    monkeypatch.setenv("MIMIKIT_FLOWER_BASIC_AUTH", "no-colon")
    from mimikit.config import load_settings

    with pytest.raises(ConfigError, match="MIMIKIT_FLOWER_BASIC_AUTH"):
        load_settings()
