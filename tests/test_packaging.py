"""The built wheel: ``mimikit`` is its only top-level name; web/, prompts/ and celeryconfig.py
install inside it, and an installed copy finds them away from the repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from processes import ROOT

# What the Dockerfile copies into its build: the wheel is built from these alone.
BUILD_INPUTS = ("pyproject.toml", "README.md", "celeryconfig.py", "mimikit", "web", "prompts")
# The source folders and where their files are installed.
INSTALLED_AS = {"web": "mimikit/web", "prompts": "mimikit/prompts"}

CHECK_INSTALLED = r"""
import importlib, json, sys
found = {}
for name in ("web", "prompts", "celeryconfig"):
    try:
        found[name] = importlib.import_module(name).__file__
    except ModuleNotFoundError:
        found[name] = None
import mimikit, mimikit.celeryconfig
from mimikit.agents.prompts import role_text
from mimikit.celery_app import app
from mimikit.web import create_app
client = create_app().test_client()
found.update(
    mimikit=mimikit.__file__, settings=mimikit.celeryconfig.__file__,
    broker=app.conf.broker_url, teller=role_text("teller"), evaluator=role_text("llm_eval"),
    page=client.get("/").get_data(as_text=True), script=client.get("/static/app.js").status_code,
)
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel pip builds from a clean copy of the build inputs (no stale ``build/``)."""
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                           str(out), str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    [built] = out.glob("mimikit-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; its dependencies come from the test environment's
    site-packages through a ``.pth`` line, which adds that folder but not its ``.pth`` files,
    so the editable mimikit installed there stays out of sight."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, **extra}


def test_the_wheel_holds_nothing_but_mimikit_at_its_top_level(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
        record = archive.read(f"{info}/RECORD").decode().splitlines()
        top_level = archive.read(f"{info}/top_level.txt").decode().split()
    assert {name.split("/")[0] for name in names} == {"mimikit", info}
    assert {line.split(",")[0].split("/")[0] for line in record} == {"mimikit", info}
    assert top_level == ["mimikit"]


def test_the_wheel_holds_every_file_of_web_prompts_and_the_celery_settings(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    expected = {"mimikit/celeryconfig.py", "mimikit/py.typed"}
    for folder, target in INSTALLED_AS.items():
        expected |= {f"{target}/{path.relative_to(ROOT / folder).as_posix()}"
                     for path in (ROOT / folder).rglob("*")
                     if path.is_file() and "__pycache__" not in path.parts}
    assert expected - names == set()
    assert any(name.startswith("mimikit/prompts/agents/teller/") for name in expected)


def test_an_installed_wheel_imports_only_under_mimikit_outside_the_repository(installed, tmp_path):
    broker = "redis://127.0.0.1:1/0"  # never connected to: the settings are only read
    done = subprocess.run([installed / "bin" / "python", "-c", CHECK_INSTALLED], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env=_clean_env(MIMIKIT_REDIS_URL=broker))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["web"], found["prompts"], found["celeryconfig"]) == (None, None, None)
    package = Path(found["mimikit"]).parent
    assert package.is_relative_to(installed) and not package.is_relative_to(ROOT)
    assert Path(found["settings"]) == package / "celeryconfig.py"
    assert found["broker"] == broker
    identity = (ROOT / "prompts/agents/teller/identity.md").read_text(encoding="utf-8").strip()
    assert identity in found["teller"]
    assert "submit_verdicts" in found["evaluator"]
    assert '<div id="messages"' in found["page"] and found["script"] == 200


def test_the_installed_command_runs_outside_the_repository(installed, tmp_path):
    done = subprocess.run([installed / "bin" / "mimikit", "--version"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=_clean_env())
    assert done.returncode == 0, done.stderr
    assert "0.1.0" in done.stdout
