"""The Worker's shell under Landlock, where bubblewrap is missing: writes only in the work dir
and its own temporary directory, the state dir and .env out of reach also when they lie inside
the work dir, no TCP unless allowed, no process left behind; and what status, doctor and the
page say of it. ``MIMIKIT_SHELL_SANDBOX=landlock`` forces this path where bubblewrap exists.

The tests of the default layout run both ways of hiding the state dir (``test_landlock_hiding``
tells them apart): in a mount namespace of the command's own, where one can be made (as for
root), and granting entries one by one, where none can (as in an unprivileged container; forced
here with ``choose_sandbox(..., namespace=False)``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from agent_helpers import last_tool_result
from llm_server import tool_call
from processes import wait_for
from test_cli_commands import installed
from test_sandbox import (
    ENV_SECRET,
    MEMORY,
    _run_and_stop,
    _work_with_state,
    assert_dies_with_its_runner,
    fetch,
    host_server,
    outside,
)
from web_helpers import commands_running

from mimikit.workspace.local import Workspace
from mimikit.workspace.sandbox import NETWORK_NOTE, Sandbox, choose_sandbox

__all__ = ["host_server", "outside"]  # fixtures
LANDLOCK = choose_sandbox("landlock")  # with a mount namespace where this host can make one
ENTRIES = choose_sandbox("landlock", namespace=False)
ABI = LANDLOCK.abi
NAMESPACE = LANDLOCK.no_namespace is None
needs_landlock = pytest.mark.skipif(
    LANDLOCK.kind is None, reason=f"no Landlock sandbox on this host ({LANDLOCK.missing})")
needs_namespace = pytest.mark.skipif(
    not NAMESPACE, reason=f"no mount namespace can be made here ({LANDLOCK.no_namespace})")
pytestmark = needs_landlock


def _default_layout(tmp_path: Path, sandbox: Sandbox) -> Workspace:
    """A Workspace in ``sandbox`` over a work dir holding the state dir and a .env."""
    work = tmp_path / "work"
    state = _work_with_state(work)
    (work / "src").mkdir()
    (work / "notes.txt").write_text("first\n")
    return Workspace(work, private=(state,), sandbox=sandbox, shell_timeout_default=60)


@pytest.fixture(params=[pytest.param(LANDLOCK, id="namespace", marks=needs_namespace),
                        pytest.param(ENTRIES, id="entries")])
def box(request, tmp_path: Path) -> Workspace:
    """A Workspace under Landlock over a work dir holding the state dir and a .env (the default
    layout), hidden in a mount namespace, then granted entry by entry."""
    return _default_layout(tmp_path, request.param)


@pytest.fixture
def free(tmp_path: Path) -> Workspace:
    """A Workspace under Landlock whose state dir lies outside its work dir."""
    (tmp_path / "state").mkdir()
    (tmp_path / "work").mkdir()
    return Workspace(tmp_path / "work", private=(tmp_path / "state",), sandbox=LANDLOCK,
                     shell_timeout_default=120)


# --- the file system ----------------------------------------------------------------------------


def test_writes_to_tmp_home_and_the_state_dir_are_refused_and_the_work_dir_takes_them(box):
    probe = f"mimikit-probe-{uuid.uuid4().hex}"
    result = box.shell(f'echo x > /tmp/{probe}; echo x > "$HOME/{probe}"; '
                       f"echo planted > .mimikit/memory.md; echo x > .mimikit/{probe}; "
                       "rm -f .mimikit/memory.md; mkdir .mimikit/memory/new; "
                       'echo kept > src/made-here.txt; echo second >> notes.txt; '
                       'echo private > "$TMPDIR/t"; cat "$TMPDIR/t"')
    assert not Path("/tmp", probe).exists()
    assert not (Path.home() / probe).exists()
    assert f"/tmp/{probe}: Permission denied" in result["stderr"]
    assert f"{Path.home()}/{probe}: Permission denied" in result["stderr"]
    assert (box.root / ".mimikit" / "memory.md").read_text() == MEMORY
    assert not (box.root / ".mimikit" / probe).exists()
    assert not (box.root / ".mimikit" / "memory" / "new").exists()
    assert (box.root / "src" / "made-here.txt").read_text() == "kept\n"
    assert (box.root / "notes.txt").read_text() == "first\nsecond\n"
    assert result["stdout"] == "private\n"  # its own temporary directory works while it runs


def test_memory_md_and_env_cannot_be_read_even_by_a_search_of_the_work_dir(box):
    result = box.shell("cat .mimikit/memory.md; cat .env; grep -rs SECRET .; "
                       "cp .mimikit/memory.md src/copy.md; echo done")
    assert MEMORY not in result["stdout"] and ENV_SECRET not in result["stdout"]
    hidden = "No such file or directory" if box.sandbox is LANDLOCK else "Permission denied"
    assert f"cat: .mimikit/memory.md: {hidden}" in result["stderr"]
    assert "cat: .env: Permission denied" in result["stderr"]
    assert not (box.root / "src" / "copy.md").exists()
    assert box.shell("echo planted > .env")["exitCode"] != 0
    assert (box.root / ".env").read_text() == f"MIMIKIT_LLM_API_KEY={ENV_SECRET}\n"


def test_with_the_state_dir_elsewhere_python_a_venv_pip_and_git_work_in_the_work_dir(free):
    result = free.shell("python3 -c 'print(6 * 7)' > answer.txt && python3 -m venv .venv && "
                        ".venv/bin/pip --version && .venv/bin/python -c 'import sys; "
                        "print(sys.prefix)' && git init -q repo && git -C repo -c user.name=m "
                        "-c user.email=m@example.org commit -q --allow-empty -m first && "
                        "git -C repo log --format=%s", timeout=120)
    assert result["exitCode"] == 0, result
    assert result["stdout"].endswith("first\n")
    assert (free.root / "answer.txt").read_text() == "42\n"
    assert f"{free.root}/.venv" in result["stdout"] and "pip " in result["stdout"]


def test_a_state_dir_elsewhere_the_runtimes_env_and_its_environment_are_out_of_sight(
        tmp_path, outside, monkeypatch):
    state = outside / "state"
    state.mkdir()
    (state / "memory.md").write_text(MEMORY)
    (outside / ".env").write_text(f"MIMIKIT_LLM_API_KEY={ENV_SECRET}\n")
    monkeypatch.chdir(outside)  # the runtime reads the .env of its current directory
    monkeypatch.setenv("MIMIKIT_API_TOKEN", ENV_SECRET)
    (tmp_path / "work").mkdir()
    ws = Workspace(tmp_path / "work", private=(state,), sandbox=LANDLOCK)
    # A process of this user with a secret in its environment, as the runtime's are.
    holder = subprocess.Popen(["sleep", "60"], env={"MIMIKIT_API_TOKEN": ENV_SECRET})
    try:
        result = ws.shell(f"cat {state}/memory.md {outside}/.env; cat /proc/{holder.pid}/environ; "
                          f"echo x > {outside}/planted; ls ~")
    finally:
        holder.kill()
        holder.wait()
    assert f"/proc/{holder.pid}/environ: Permission denied" in result["stderr"]
    assert MEMORY not in result["stdout"] and ENV_SECRET not in result["stdout"]
    assert f"{outside}/planted: Permission denied" in result["stderr"]
    assert not (outside / "planted").exists()
    assert "cannot open directory" in result["stderr"]  # $HOME is not readable either


def test_a_command_run_by_any_user_has_no_capabilities(box):
    result = box.shell("grep -E '^Cap(Prm|Eff|Amb)' /proc/self/status")
    assert result["stdout"].split() == ["CapPrm:", "0" * 16, "CapEff:", "0" * 16,
                                        "CapAmb:", "0" * 16]


# --- the network and signals --------------------------------------------------------------------


@pytest.mark.skipif(ABI < 4, reason=f"Landlock ABI {ABI} cannot close TCP (ABI 4 can)")
def test_tcp_is_off_and_the_result_says_so(box, host_server):
    result = box.shell(fetch(host_server))
    assert result["exitCode"] != 0 and "hello-from-the-host" not in result["stdout"]
    assert "[Errno 13] Permission denied" in result["stderr"]
    assert result["note"] == NETWORK_NOTE


def test_shell_network_on_reaches_the_host(tmp_path, host_server):
    (tmp_path / "work").mkdir()
    ws = Workspace(tmp_path / "work", sandbox=choose_sandbox("landlock", network=True))
    result = ws.shell(fetch(host_server))
    assert result["exitCode"] == 0, result
    assert result["stdout"] == "hello-from-the-host\n" and "note" not in result


@pytest.mark.skipif(ABI < 6, reason=f"Landlock ABI {ABI} does not scope signals (ABI 6 does)")
def test_a_command_can_neither_signal_the_worker_nor_kill_its_reaper_to_leave_a_process_behind(
        box):
    marker = "47.5625"
    result = box.shell(f"kill -0 {os.getpid()}; kill -9 $PPID; setsid sleep {marker} & "
                       "echo still-reaped")
    assert result["stderr"].count("Operation not permitted") == 2, result["stderr"]
    assert result["stdout"] == "still-reaped\n"
    wait_for(lambda: not commands_running("sleep", marker), timeout=5,
             message="the sleep to be gone with the command")


# --- processes ----------------------------------------------------------------------------------


def test_a_timeout_kills_every_process_of_a_confined_command_even_one_in_its_own_session(box):
    result = _run_and_stop(box, "47.8125", lambda: None, timeout=1.5, processes=5)
    assert result["timedOut"] is True and result["durationMs"] < 5000


def test_a_cancel_kills_every_process_of_a_confined_command(box):
    result = _run_and_stop(box, "47.9375", box.cancel, processes=5)
    assert result["canceled"] is True


def test_background_processes_end_with_the_command_that_started_them(box):
    marker = "47.4375"
    result = box.shell(f"(setsid sleep {marker} &); sleep {marker} & echo started")
    assert result["stdout"] == "started\n"
    wait_for(lambda: not commands_running("sleep", marker), timeout=5,
             message="the background sleeps to be gone")


def test_a_confined_command_dies_with_the_process_that_ran_it_even_by_kill_9(tmp_path):
    assert_dies_with_its_runner(tmp_path, "landlock", "sleep {marker} & setsid sleep {marker}",
                                "47.6875")


# --- without any sandbox ------------------------------------------------------------------------

# Landlock nests at most 16 rulesets: a process that used them all up cannot make a sandbox.
NO_SANDBOX_LEFT = """
import json, os, sys, tempfile
from mimikit.workspace.landlock import restrict
for _ in range(16):
    restrict([("/", "write")], network=True)
from mimikit.workspace.local import Workspace
from mimikit.workspace.sandbox import choose_sandbox
out = tempfile.mkdtemp(dir=sys.argv[1])
found = {mode: choose_sandbox(mode) for mode in ("auto", "on")}
ran = Workspace(sys.argv[1], sandbox=found["auto"]).shell(f"echo x > {out}/outside")
print(json.dumps({"missing": found["auto"].missing, "kind": found["auto"].kind,
                  "refusal": found["on"].refusal, "wrote": os.path.exists(f"{out}/outside"),
                  "exit": ran["exitCode"]}))
"""


def test_where_no_sandbox_can_be_made_auto_runs_unconfined_and_on_refuses(tmp_path):
    bare_path = tmp_path / "bin"  # PATH without bwrap
    bare_path.mkdir()
    env = {**os.environ, "PATH": str(bare_path)}
    done = subprocess.run([sys.executable, "-c", NO_SANDBOX_LEFT, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["kind"] is None and seen["wrote"] is True and seen["exit"] == 0
    assert seen["missing"].startswith("bubblewrap (bwrap) is not installed and Landlock cannot "
                                      "make a sandbox here")
    assert seen["refusal"].startswith("shell commands cannot run here: MIMIKIT_SHELL_SANDBOX=on "
                                      "requires a sandbox and bubblewrap (bwrap) is not "
                                      "installed and Landlock cannot make a sandbox here")


# --- what up, doctor, status and the API say ----------------------------------------------------


def test_doctor_status_and_the_api_name_landlock_its_abi_and_its_limits(runtime, monkeypatch):
    from mimikit.workspace.sandbox import sandbox_report
    from web import create_app

    forced = {"MIMIKIT_SHELL_SANDBOX": "landlock"}
    doctor = installed("doctor", env_extra=forced)
    line = next(line for line in doctor.stdout.splitlines() if line[6:23].strip() == "sandbox")
    network = "network off: TCP connect and bind are refused" if ABI >= 4 else \
        "the network is NOT off"
    assert line.startswith(f"{'ok' if ABI >= 4 else 'WARN':<5} sandbox           "
                           f"{LANDLOCK.label}, covering files")
    assert "shell commands write only to the work dir and a private temporary directory" in line
    assert "cannot read the state dir or .env" in line and network in line
    status = installed("status", env_extra=forced).stdout
    assert f"sandbox   {LANDLOCK.label}, covering files" in status
    monkeypatch.setenv("MIMIKIT_SHELL_SANDBOX", "landlock")
    settings = runtime.settings.model_copy(update={"shell_sandbox": "landlock"})
    body = create_app(settings).test_client().get("/api/status").get_json()
    assert body["sandbox"]["kind"] == "landlock"
    assert body["sandbox"]["label"] == LANDLOCK.label
    assert body["sandbox"]["network"] is (ABI < 4)
    inside = settings.model_copy(update={"state_dir": settings.work_dir / ".mimikit"})
    blocked = "the state dir lies in the work dir, so commands cannot add or remove entries " \
              "beside it (write_file can)"
    assert (blocked in sandbox_report(inside)["detail"]) is not NAMESPACE
    assert "cannot add or remove" not in sandbox_report(settings)["detail"]


def test_up_names_landlock_at_start_up(runtime, caplog):
    from mimikit.launcher import announce_sandbox

    with caplog.at_level("INFO", logger="mimikit.up"):
        announce_sandbox(runtime.settings.model_copy(update={"shell_sandbox": "landlock"}))
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith(f"Worker shell sandbox: {LANDLOCK.label}, covering files")


# --- end to end ---------------------------------------------------------------------------------


@pytest.fixture
def landlock_default_layout(runtime, monkeypatch):
    """The default layout, the state dir inside the work dir, and Landlock forced (both set
    before the workers start)."""
    work = runtime.settings.work_dir
    monkeypatch.setenv("MIMIKIT_STATE_DIR", str(work / ".mimikit"))
    monkeypatch.setenv("MIMIKIT_SHELL_SANDBOX", "landlock")
    runtime.settings = runtime.settings.model_copy(
        update={"state_dir": work / ".mimikit", "shell_sandbox": "landlock"})
    (work / "out").mkdir()
    return _work_with_state(work)


def test_a_worker_task_under_landlock_changes_and_reads_nothing_outside_and_still_completes(
        landlock_default_layout, stack, llm):
    from mimikit.delivery.workers import workers
    from mimikit.lifecycle.submit import submit
    from mimikit.models import Task

    state = landlock_default_layout
    probe = f"mimikit-probe-{uuid.uuid4().hex}"
    made = "made-here.txt" if NAMESPACE else "out/made-here.txt"  # entry by entry: not at the top
    command = (f'echo x > "$HOME/{probe}"; echo x > /tmp/{probe}; '
               f"echo planted > {state}/memory.md; cat {state}/memory.md; cat .env; "
               f"python3 -c 'print(\"made\")' > {made}; {fetch(llm.url + '/models')}")
    tried = tool_call("submit_result", status="done", resultType="text", result={"text": "tried"})
    llm.script("worker", tool_call("shell", command=command), tried, tried)  # told once
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="try to get out")])[0]
    wait_for(lambda: stack.tasks.get(task.id).status == "done", timeout=40,
             message="the task to complete")
    seen = last_tool_result(llm.requests_for("worker")[1])  # after the command
    assert MEMORY not in seen["stdout"] and ENV_SECRET not in seen["stdout"]
    assert f"cat: {state}/memory.md: " in seen["stderr"]
    assert not (Path.home() / probe).exists() and not Path("/tmp", probe).exists()
    assert (state / "memory.md").read_text() == MEMORY
    assert (stack.settings.work_dir / made).read_text() == "made\n"
    if ABI >= 4:
        assert seen["note"] == NETWORK_NOTE
    task_workers = [w for w in workers(stack) if "worker" in w["queues"]]
    assert task_workers and all(w["sandbox"] == "landlock" for w in task_workers)

