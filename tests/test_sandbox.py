"""The Worker's shell in bubblewrap: writes only in the work dir, the state dir and .env out of
sight, no network unless allowed, no process left behind; ``on`` without it refuses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from agent_helpers import last_tool_result
from llm_server import tool_call
from processes import pid_alive, wait_for
from test_cli_commands import installed
from web_helpers import commands_running

from mimikit.workspace.local import Workspace
from mimikit.workspace.procgroup import live_process_groups
from mimikit.workspace.sandbox import NETWORK_NOTE, choose_sandbox

FOUND = choose_sandbox("auto")
needs_bwrap = pytest.mark.skipif(
    FOUND.kind != "bwrap",
    reason=f"no bubblewrap sandbox on this host ({choose_sandbox('bwrap').missing}); "
           "`apt-get install bubblewrap` runs these tests (CI installs it)")
MEMORY = "MEMORY-SECRET-7d1f"
ENV_SECRET = "sk-ENV-SECRET-7d1f"


def _work_with_state(work: Path) -> Path:
    """``work`` with the default layout: the state dir ``.mimikit`` inside it, and a ``.env``."""
    state = work / ".mimikit"
    (state / "memory").mkdir(parents=True)
    (state / "memory.md").write_text(MEMORY)
    (work / ".env").write_text(f"MIMIKIT_LLM_API_KEY={ENV_SECRET}\n")
    return state


@pytest.fixture
def box(tmp_path: Path) -> Workspace:
    """A Workspace in bubblewrap over a work dir holding the state dir and a .env."""
    work = tmp_path / "work"
    state = _work_with_state(work)
    return Workspace(work, private=(state,), sandbox=FOUND, shell_timeout_default=20)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the work dir and outside /tmp (whose private copy hides it anyway)."""
    path = Path(tempfile.mkdtemp(prefix="mimikit-sandbox-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def host_server() -> Iterator[str]:
    """An HTTP server on a loopback port of the host, answering ``hello-from-the-host``."""

    class Hello(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello-from-the-host")

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def fetch(url: str) -> str:
    """A shell command that prints what ``url`` answers (Python: on every host that runs us)."""
    code = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=5).read().decode())"
    return f"{sys.executable} -c {json.dumps(code)}"


# --- the file system ----------------------------------------------------------------------------


@needs_bwrap
def test_writes_to_tmp_home_and_the_state_dir_are_refused_and_the_work_dir_takes_them(box):
    probe = f"mimikit-probe-{uuid.uuid4().hex}"
    result = box.shell(f'echo x > /tmp/{probe}; echo x > "$HOME/{probe}"; '
                       f"echo planted > .mimikit/memory.md; echo x > .mimikit/{probe}; "
                       "echo kept > made-here.txt; cat /tmp/" + probe)
    assert not Path("/tmp", probe).exists()  # written to the command's own /tmp, gone with it
    assert not (Path.home() / probe).exists()
    assert "Read-only file system" in result["stderr"]
    assert (box.root / ".mimikit" / "memory.md").read_text() == MEMORY
    assert not (box.root / ".mimikit" / probe).exists()
    assert (box.root / "made-here.txt").read_text() == "kept\n"
    assert result["stdout"] == "x\n"  # its private /tmp works while it runs


@needs_bwrap
def test_memory_md_and_env_cannot_be_read(box):
    result = box.shell("cat .mimikit/memory.md; cat .env; ls -A .mimikit; grep -rs SECRET .")
    assert MEMORY not in result["stdout"] and ENV_SECRET not in result["stdout"]
    assert "Permission denied" in result["stderr"]  # .env
    assert "memory.md: No such file" in result["stderr"]  # the state dir shows up empty
    assert box.shell("echo planted > .env")["exitCode"] != 0
    assert (box.root / ".env").read_text() == f"MIMIKIT_LLM_API_KEY={ENV_SECRET}\n"


@needs_bwrap
def test_a_state_dir_elsewhere_the_runtimes_env_and_its_environment_are_out_of_sight(
        tmp_path, outside, monkeypatch):
    state = outside / "state"
    state.mkdir()
    (state / "memory.md").write_text(MEMORY)
    (outside / ".env").write_text(f"MIMIKIT_LLM_API_KEY={ENV_SECRET}\n")
    monkeypatch.chdir(outside)  # the runtime reads the .env of its current directory
    monkeypatch.setenv("MIMIKIT_API_TOKEN", ENV_SECRET)
    (tmp_path / "work").mkdir()
    ws = Workspace(tmp_path / "work", private=(state,), sandbox=FOUND)
    result = ws.shell(f"cat {state}/memory.md {outside}/.env; cat /proc/*/environ; "
                      f"echo x > {outside}/planted")
    assert MEMORY not in result["stdout"] and ENV_SECRET not in result["stdout"]
    assert "Read-only file system" in result["stderr"]
    assert not (outside / "planted").exists()


# --- the network --------------------------------------------------------------------------------


@needs_bwrap
def test_the_network_is_off_and_the_result_says_so(box, host_server):
    result = box.shell(fetch(host_server))
    assert result["exitCode"] != 0 and "hello-from-the-host" not in result["stdout"]
    assert "Connection refused" in result["stderr"]
    assert result["note"] == NETWORK_NOTE
    assert "note" not in box.shell("ls /nonexistent")  # other failures get no such note


@needs_bwrap
def test_programs_installed_under_tmp_still_run_and_the_rest_of_tmp_stays_hidden(box, monkeypatch):
    place = Path(tempfile.mkdtemp(prefix="mimikit-venv-", dir="/tmp"))
    beside = Path(tempfile.mkdtemp(prefix="mimikit-beside-", dir="/tmp"))
    try:
        (place / "bin").mkdir()
        tool = place / "bin" / "hello-tool"
        tool.write_text("#!/bin/sh\necho hello-from-tmp\n")
        tool.chmod(0o755)
        monkeypatch.setenv("PATH", f"{place / 'bin'}{os.pathsep}{os.environ['PATH']}")
        assert box.shell("hello-tool")["stdout"] == "hello-from-tmp\n"
        assert box.shell(f"ls {beside}")["exitCode"] != 0  # the private /tmp hides the rest
        assert box.shell(f"touch {place}/x")["exitCode"] != 0  # shown read-only
    finally:
        shutil.rmtree(place, ignore_errors=True)
        shutil.rmtree(beside, ignore_errors=True)


@needs_bwrap
def test_shell_network_on_reaches_the_host(tmp_path, host_server):
    (tmp_path / "work").mkdir()
    ws = Workspace(tmp_path / "work", sandbox=choose_sandbox("auto", network=True))
    result = ws.shell(fetch(host_server))
    assert result["exitCode"] == 0, result
    assert result["stdout"] == "hello-from-the-host\n" and "note" not in result


# --- processes ----------------------------------------------------------------------------------


def _family(pid: int, stop: int) -> set[int]:
    """``pid`` and its ancestors up to (without) ``stop``: the sleep, its shell, the bwraps."""
    found = set()
    while pid not in (stop, 0, 1):
        found.add(pid)
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return found


def _run_and_stop(ws: Workspace, marker: str, stop, timeout: float | None = None,
                  processes: int = 6) -> dict:
    """Run three sleeps (one in its own session) and ``stop`` them; returns the result after
    checking that every process the command had (at least ``processes``) is gone."""
    command = f"sleep {marker} & setsid sleep {marker} & sleep {marker}"
    outcome: dict = {}
    runner = threading.Thread(target=lambda: outcome.update(ws.shell(command, timeout)))
    runner.start()
    sleeps = wait_for(lambda: len(found := commands_running("sleep", marker)) == 3 and found,
                      timeout=20, message="the three sleeps to start")
    pids = set().union(*(_family(pid, os.getpid()) for pid in sleeps))
    assert len(pids) >= processes  # 3 sleeps, the shell, bwrap and the namespace's init
    stop()
    runner.join(timeout=15)
    wait_for(lambda: not [p for p in pids if pid_alive(p)], timeout=5,
             message=f"every process of the command to be gone: {sorted(pids)}")
    assert live_process_groups() == [] and ws.live_pgids == set()
    return outcome


@needs_bwrap
def test_a_timeout_kills_every_process_of_a_sandboxed_command(box):
    result = _run_and_stop(box, "47.125", lambda: None, timeout=1.5)
    assert result["timedOut"] is True and result["durationMs"] < 5000


@needs_bwrap
def test_a_cancel_kills_every_process_of_a_sandboxed_command(box):
    result = _run_and_stop(box, "47.375", box.cancel)
    assert result["canceled"] is True


@needs_bwrap
def test_a_sandboxed_command_dies_with_the_process_that_ran_it_even_by_kill_9(tmp_path):
    assert_dies_with_its_runner(tmp_path, "auto", "sleep {marker} & sleep {marker}", "47.625")


def assert_dies_with_its_runner(tmp_path: Path, mode: str, command: str, marker: str) -> None:
    """Run ``command`` (two sleeps for ``marker``) in a process confined as ``mode`` chooses,
    kill that process with SIGKILL, and wait for every process of the command to be gone."""
    script = ("from mimikit.workspace.local import Workspace\n"
              "from mimikit.workspace.sandbox import choose_sandbox\n"
              f"Workspace({str(tmp_path)!r}, sandbox=choose_sandbox({mode!r}))"
              f".shell({command.format(marker=marker)!r})\n")
    runner = subprocess.Popen([sys.executable, "-c", script])
    try:
        sleeps = wait_for(lambda: len(found := commands_running("sleep", marker)) == 2 and found,
                          timeout=20, message="the sleeps to start")
        pids = set().union(*(_family(pid, runner.pid) for pid in sleeps))
    finally:
        runner.kill()
        runner.wait(timeout=10)
    wait_for(lambda: not [p for p in pids if pid_alive(p)], timeout=5,
             message=f"every process of the command to be gone: {sorted(pids)}")


# --- without bubblewrap -------------------------------------------------------------------------


@pytest.fixture
def no_bwrap(tmp_path, monkeypatch) -> Path:
    """PATH without bwrap (bash keeps its absolute path)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


def test_bwrap_required_without_bubblewrap_refuses_with_the_install_hint_and_runs_nothing(
        runtime, tmp_path, no_bwrap):
    from mimikit.agents.common import registry
    from mimikit.tools.context import ToolContext

    ws = Workspace(runtime.settings.work_dir, sandbox=choose_sandbox("bwrap"))
    ctx = ToolContext(runtime=runtime, role="worker", workspace=ws)
    outcome = registry().call("worker", "shell", '{"command": "echo ran > ran.txt"}', ctx)
    assert outcome.content.startswith("error: shell commands cannot run here: "
                                      "MIMIKIT_SHELL_SANDBOX=bwrap requires bubblewrap and "
                                      "bubblewrap (bwrap) is not installed")
    assert "`apt-get install bubblewrap`" in outcome.content
    assert "The file tools (read_file, write_file, list_files) still work." in outcome.content
    assert not (ws.root / "ran.txt").exists()


# --- what doctor, status and the API say --------------------------------------------------------


def _sandbox_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("sandbox "))


def _sandbox_check(runtime, **settings):
    from mimikit.doctor import check_sandbox

    return check_sandbox(runtime.settings.model_copy(update=settings), [])


def test_doctor_and_status_say_when_the_required_sandbox_is_missing_and_how_to_get_it(
        runtime, no_bwrap, capsys):
    from mimikit.console.report import print_status

    assert print_status(runtime.settings.model_copy(update={"shell_sandbox": "bwrap"})) == 0
    status = capsys.readouterr().out
    assert _sandbox_line(status) == ("sandbox   none: bubblewrap (bwrap) is not installed, so "
                                     "shell commands are refused (MIMIKIT_SHELL_SANDBOX=bwrap)")
    assert "fix: install bubblewrap (`apt-get install bubblewrap`" in status
    assert "or set MIMIKIT_SHELL_SANDBOX=auto or off" in status
    required = _sandbox_check(runtime, shell_sandbox="bwrap")
    assert required.status == "fail" and "`apt-get install bubblewrap`" in (required.fix or "")
    off = _sandbox_check(runtime, shell_sandbox="off")
    assert off.status == "ok" and "unconfined" in off.detail
    codex = _sandbox_check(runtime, worker_backend="codex")
    assert codex.status == "ok" and "codex exec's own" in codex.detail


def test_doctor_names_task_workers_that_run_commands_without_a_sandbox(runtime):
    from mimikit.doctor import check_sandbox

    live = [{"name": "tasks@far", "queues": ["worker"], "sandbox": "none"},
            {"name": "agents@far", "queues": ["teller"], "sandbox": "none"},
            {"name": "tasks@near", "queues": ["worker"], "sandbox": "bwrap"}]
    check = check_sandbox(runtime.settings, live)
    assert check.status != "ok" and "task workers without one: tasks@far" in check.detail
    assert "agents@far" not in check.detail
    silenced = check_sandbox(runtime.settings.model_copy(update={"shell_sandbox": "off"}), live)
    assert silenced.status == "ok"


def test_up_warns_once_at_start_up_that_commands_are_refused_without_the_required_sandbox(
        runtime, no_bwrap, caplog):
    from mimikit.launcher import announce_sandbox

    with caplog.at_level("WARNING", logger="mimikit.up"):
        announce_sandbox(runtime.settings.model_copy(update={"shell_sandbox": "bwrap"}))
        announce_sandbox(runtime.settings.model_copy(update={"shell_sandbox": "off"}))
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith("Worker shell sandbox: none: bubblewrap (bwrap) is not installed")
    assert "fix: install bubblewrap (`apt-get install bubblewrap`" in said


@needs_bwrap
def test_doctor_status_and_the_api_name_bubblewrap_when_it_is_in_force(runtime):
    from web import create_app

    doctor = installed("doctor")
    line = next(line for line in doctor.stdout.splitlines() if line[6:23].strip() == "sandbox")
    assert line.startswith(f"ok    sandbox           bwrap ({FOUND.program}): shell commands "
                           "write only to the work dir and a private /tmp")
    status = installed("status").stdout
    assert "network off (MIMIKIT_SHELL_NETWORK=on allows it)" in _sandbox_line(status)
    body = create_app(runtime.settings).test_client().get("/api/status").get_json()
    assert body["sandbox"]["kind"] == "bwrap" and body["sandbox"]["state"] == "ok"
    assert body["sandbox"]["network"] is False


def test_bad_sandbox_settings_are_refused_naming_the_variable(monkeypatch):
    from mimikit.config import load_settings
    from mimikit.exceptions import ConfigError

    monkeypatch.setenv("MIMIKIT_SHELL_SANDBOX", "maybe")
    with pytest.raises(ConfigError, match="MIMIKIT_SHELL_SANDBOX='maybe': .*'auto', 'on', 'off', "
                       "'bwrap', 'landlock' or 'sandbox-exec'"):
        load_settings()
    monkeypatch.setenv("MIMIKIT_SHELL_SANDBOX", "ON")
    monkeypatch.setenv("MIMIKIT_SHELL_NETWORK", "sometimes")
    with pytest.raises(ConfigError, match="MIMIKIT_SHELL_NETWORK='sometimes'"):
        load_settings()
    monkeypatch.setenv("MIMIKIT_SHELL_NETWORK", "on")
    settings = load_settings()
    assert settings.shell_sandbox == "on" and settings.shell_network is True


# --- end to end ---------------------------------------------------------------------------------


@pytest.fixture
def state_inside_work(runtime, monkeypatch):
    """The default layout: the state dir inside the work dir (set before the workers start)."""
    work = runtime.settings.work_dir
    monkeypatch.setenv("MIMIKIT_STATE_DIR", str(work / ".mimikit"))
    runtime.settings = runtime.settings.model_copy(update={"state_dir": work / ".mimikit"})
    return _work_with_state(work)


@needs_bwrap
def test_a_worker_task_changes_and_reads_nothing_outside_and_still_completes(
        state_inside_work, stack, llm):
    from mimikit.delivery.workers import workers
    from mimikit.lifecycle.submit import submit
    from mimikit.models import Task

    probe = f"mimikit-probe-{uuid.uuid4().hex}"
    command = (f'echo x > "$HOME/{probe}"; echo x > /tmp/{probe}; '
               f"echo planted > {state_inside_work}/memory.md; cat {state_inside_work}/memory.md; "
               f"cat .env; echo made > made-here.txt; {fetch(llm.url + '/models')}")
    tried = tool_call("submit_result", status="done", resultType="text", result={"text": "tried"})
    llm.script("worker", tool_call("shell", command=command), tried, tried)  # told once
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="try to get out")])[0]
    wait_for(lambda: stack.tasks.get(task.id).status == "done", timeout=40,
             message="the task to complete")
    seen = last_tool_result(llm.requests_for("worker")[1])  # after the command
    assert MEMORY not in seen["stdout"] and ENV_SECRET not in seen["stdout"]
    assert "Read-only file system" in seen["stderr"]
    assert seen["note"] == NETWORK_NOTE
    assert not (Path.home() / probe).exists() and not Path("/tmp", probe).exists()
    assert (state_inside_work / "memory.md").read_text() == MEMORY
    assert (stack.settings.work_dir / "made-here.txt").read_text() == "made\n"
    task_workers = [w for w in workers(stack) if "worker" in w["queues"]]
    assert task_workers and all(w["sandbox"] == "bwrap" for w in task_workers)
