"""docker-compose.yml parses and every service runs a real command of this project."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from mimikit.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def _load() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_services_run_real_mimikit_commands():
    compose = _load()
    services = compose["services"]
    assert set(services) == {"redis", "web", "worker", "beat", "flower"}
    assert "--appendonly" in services["redis"]["command"]
    parser = build_parser()
    for name in ("web", "worker", "beat", "flower"):
        command = services[name]["command"]
        assert command[0] == "mimikit", name
        parsed = parser.parse_args(command[1:])
        assert parsed.command == name
        assert services[name]["image"] == "mimikit:latest"
    assert services["worker"].get("stop_grace_period")
    assert "MIMIKIT_API_TOKEN" in services["web"]["environment"]


def test_compose_uses_one_image_built_from_the_dockerfile():
    compose = _load()
    builds = {name: s.get("build") for name, s in compose["services"].items() if name != "redis"}
    assert set(builds.values()) == {"."}
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"pip install .*\.", dockerfile)
