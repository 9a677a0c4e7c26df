"""docker-compose.yml parses and every service runs a real command of this project."""

from __future__ import annotations

import re
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
