"""docker-compose.yml parses and every service runs a real command of this project."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import yaml

from mimikit.cli import cli

ROOT = Path(__file__).resolve().parents[1]


def _load() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _parse(argv: list[str]) -> click.Context:
    """Parse ``mimikit ARGV`` as the command line would, without running the command."""
    root = cli.make_context("mimikit", list(argv), resilient_parsing=False)
    command = cli.get_command(root, argv[0])
    assert command is not None, f"no command {argv[0]!r}"
    return command.make_context(argv[0], list(argv[1:]), parent=root)


def test_compose_services_run_real_mimikit_commands():
    compose = _load()
    services = compose["services"]
    assert set(services) == {"redis", "web", "worker", "beat", "flower"}
    assert "--appendonly" in services["redis"]["command"]
    for name in ("web", "worker", "beat", "flower"):
        command = services[name]["command"]
        assert command[0] == "mimikit", name
        parsed = _parse(command[1:])
        assert parsed.command.name == name
        assert services[name]["image"] == "mimikit:latest"
    assert services["worker"].get("stop_grace_period")
    assert "MIMIKIT_API_TOKEN" in services["web"]["environment"]


def test_a_command_line_the_cli_refuses_fails_the_compose_check():
    try:
        _parse(["web", "--prot", "8787"])
    except click.UsageError as error:
        assert "--prot" in error.format_message()
    else:
        raise AssertionError("a misspelt option parsed")


def test_compose_uses_one_image_built_from_the_dockerfile():
    compose = _load()
    builds = {name: s.get("build") for name, s in compose["services"].items() if name != "redis"}
    assert set(builds.values()) == {"."}
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"pip install .*\.", dockerfile)


def test_the_web_health_check_asks_health_on_the_port_web_serves():
    web = _load()["services"]["web"]
    check = web["healthcheck"]
    assert check["test"][0] == "CMD" and check["retries"] >= 1
    script = " ".join(check["test"][1:])
    port = _parse(web["command"][1:]).params["port"]
    assert f"http://127.0.0.1:{port}/api/health" in script


def _run_health_check(port: int) -> subprocess.CompletedProcess[str]:
    """The web service's health check command, as the container runs it, on ``port``."""
    argv = _load()["services"]["web"]["healthcheck"]["test"][1:]
    argv = [sys.executable if argv[0] == "python" else argv[0],
            *[a.replace(":8787/", f":{port}/") for a in argv[1:]]]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def test_the_web_health_check_passes_on_a_live_web_and_fails_without_redis(runtime, tmp_path):
    from processes import free_port
    from web_helpers import WebServer

    live = WebServer(tmp_path / "live.log", env={"MIMIKIT_API_TOKEN": "s3cret"}).start()
    dead_redis = WebServer(tmp_path / "dead.log", env={
        "MIMIKIT_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}).start()
    try:
        passed = _run_health_check(live.port)
        assert passed.returncode == 0, passed.stderr
        failed = _run_health_check(dead_redis.port)
        assert failed.returncode != 0 and "503" in failed.stderr
    finally:
        live.stop()
        dead_redis.stop()
