"""``GET /api/health``: liveness without the token or a loopback Host, and nothing else."""

from __future__ import annotations

import signal
import time

from processes import RedisServer, free_port
from pydantic import SecretStr

from mimikit.web.health import HEALTH_TIMEOUT_SECONDS


def _client(settings):
    from mimikit.web import create_app

    return create_app(settings).test_client()


def test_health_says_ok_and_nothing_else(runtime):
    response = _client(runtime.settings).get("/api/health")
    assert response.status_code == 200 and response.get_json() == {"ok": True}


def test_health_needs_no_token_where_every_other_call_does(runtime):
    client = _client(runtime.settings.model_copy(update={"api_token": SecretStr("s3cret")}))
    assert client.get("/api/health").get_json() == {"ok": True}
    assert client.get("/api/status").status_code == 401


def test_health_answers_whatever_host_a_health_check_sends(runtime):
    client = _client(runtime.settings)  # no token: other calls must name a loopback host
    for host in ("web:8787", "10.0.0.7:8787", "mimikit.example.com"):
        response = client.get("/api/health", headers={"Host": host})
        assert response.status_code == 200 and response.get_json() == {"ok": True}, host
        assert client.get("/api/status", headers={"Host": host}).status_code == 403


def test_health_is_a_503_without_details_when_redis_does_not_answer(runtime):
    down = runtime.settings.model_copy(
        update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    response = _client(down).get("/api/health")
    assert response.status_code == 503 and response.get_json() == {"ok": False}


def test_health_gives_up_on_a_redis_that_hangs(runtime, tmp_path):
    server = RedisServer(free_port(), tmp_path / "redis").start()
    try:
        client = _client(runtime.settings.model_copy(update={"redis_url": server.url}))
        assert client.get("/api/health").status_code == 200
        server.process.send_signal(signal.SIGSTOP)
        started = time.monotonic()
        response = client.get("/api/health")
        elapsed = time.monotonic() - started
        print(f"health answered {response.status_code} after {elapsed:.2f} s of a hung Redis")
        assert response.status_code == 503 and response.get_json() == {"ok": False}
        assert elapsed < HEALTH_TIMEOUT_SECONDS + 2
    finally:
        server.process.send_signal(signal.SIGCONT)
        server.stop()
