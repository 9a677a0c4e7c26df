"""The installed ``mimikit`` command: version, completion, answer, task show, worker options,
and errors as one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from llm_server import tool_call
from processes import ROOT, children_of, wait_for

from mimikit.launcher import spawn, stop_processes
from mimikit.lifecycle.submit import submit
from mimikit.models import PendingQuestion, Task

INSTALLED = Path(sys.executable).with_name("mimikit")


def installed(*args: str, env_extra: dict[str, str] | None = None, timeout: float = 30
              ) -> subprocess.CompletedProcess[str]:
    """Run the ``mimikit`` console script of this environment to completion."""
    return subprocess.run([str(INSTALLED), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, **(env_extra or {})})


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, \
        done.stderr
    return done.stderr.strip()


def test_version_is_the_installed_package_version():
    from importlib.metadata import version

    done = installed("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"mimikit {version('mimikit')}"


def test_completion_prints_a_bash_script_that_completes_commands_and_choices():
    done = installed("completion", "bash")
    assert done.returncode == 0, done.stderr
    assert "complete -o nosort -F _mimikit_completion mimikit" in done.stdout
    assert "_MIMIKIT_COMPLETE=bash_complete" in done.stdout
    # what the script asks the command for, as bash would on `mimikit ta<TAB>`
    words = installed(env_extra={"_MIMIKIT_COMPLETE": "bash_complete", "COMP_WORDS": "mimikit ta",
                                 "COMP_CWORD": "1"})
    assert sorted(words.stdout.split()) == ["plain,task", "plain,tasks"]
    scopes = installed(env_extra={"_MIMIKIT_COMPLETE": "bash_complete",
                                  "COMP_WORDS": "mimikit tasks --scope ", "COMP_CWORD": "3"})
    assert "plain,running" in scopes.stdout.split()


def test_completion_for_an_unknown_shell_names_the_choices():
    done = installed("completion", "powershell")
    assert done.returncode == 1 and "'bash', 'zsh', 'fish'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_mimikit_alone_shows_the_commands_and_a_typo_is_one_line():
    done = installed()
    assert done.returncode == 1 and "Usage: mimikit [OPTIONS] COMMAND" in done.stderr
    commands = done.stderr.split("Commands:")[1].split()
    for name in ("up", "worker", "beat", "web", "flower", "status", "doctor", "send", "answer",
                 "tasks", "task", "cancel", "prompt", "completion"):
        assert name in commands, name
    typo = installed("stauts")
    assert typo.returncode == 1 and typo.stderr.startswith("mimikit: No such command 'stauts'")
    assert len(typo.stderr.strip().splitlines()) == 1 and "mimikit --help" in typo.stderr


def test_every_command_and_option_has_help_text():
    from mimikit.cli import cli

    def walk(command, path):
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, f"{path} {name}")

    for path, command in walk(cli, "mimikit"):
        assert command.help, f"{path} has no help"
        for param in command.params:
            if param.param_type_name == "option":
                assert param.help, f"{path} {param.opts} has no help"


def test_state_and_work_dir_options_override_the_settings(runtime, tmp_path):
    state, work = tmp_path / "other-state", tmp_path / "other-work"
    state.mkdir()
    done = installed("doctor", "--json", "--state-dir", str(state), "--work-dir", str(work))
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["state dir"]["status"] == "ok" and str(state) in checks["state dir"]["detail"]
    assert checks["work dir"]["status"] == "fail" and str(work) in checks["work dir"]["detail"]


def test_an_invalid_setting_is_one_line_naming_the_variable(runtime):
    for args in (["worker"], ["status"], ["doctor"], ["tasks"]):
        error = one_line_error(installed(*args, env_extra={"MIMIKIT_PORT": "abc"}))
        assert error.startswith("mimikit: invalid configuration: MIMIKIT_PORT='abc': "), error


def test_answer_resolves_the_pending_question_and_queues_it_for_the_teller(runtime):
    runtime.conversation.ask(PendingQuestion(question="Staging or production?",
                                               options=["staging", "production"]))
    done = installed("answer", "staging", "please")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "answered: Staging or production?"
    assert runtime.conversation.question() is None
    (message,) = runtime.conversation.between(None, None)
    assert (message.role, message.text) == ("user", "staging please")
    assert "staging please" in json.dumps([i.model_dump() for i in runtime.inbox.read()])


def test_answer_without_a_pending_question_fails_and_changes_nothing(runtime):
    error = one_line_error(installed("answer", "staging"))
    assert "no question is pending" in error and "mimikit send" in error
    assert runtime.conversation.count() == 0 and not runtime.inbox.read()


def test_answer_refuses_an_empty_answer_and_keeps_the_question(runtime):
    runtime.conversation.ask(PendingQuestion(question="Which branch?"))
    error = one_line_error(installed("answer", "  "))
    assert "invalid answer" in error and "1 to 4000 characters" in error
    assert runtime.conversation.question().question == "Which branch?"


def test_task_show_prints_the_status_result_events_and_transcript(stack, llm):
    llm.script("worker", tool_call("shell", command="echo three files"),
               tool_call("submit_result", status="done", resultType="text",
                         result={"text": "three files"}))
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="count the files", title="count files")])[0]
    wait_for(lambda: stack.tasks.get(task.id).status == "done", timeout=30,
             message="the task to finish")
    done = installed("task", "show", task.id)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{task.id}  done  worker oneshot")
    assert "title:          count files" in lines and "prompt:         count the files" in lines
    assert lines[lines.index("result: done (text)") + 1] == "  three files"
    events = lines[lines.index("events: " + str(len(stack.tasks.log_of(task.id)))):]
    assert any("task_started" in line for line in events)
    runs = lines[lines.index("runs: 1"):]
    assert runs[1].split()[1:4] == ["worker", "model", "worker"]
    assert any(line.startswith("    user: ") and "count the files" in line for line in runs)
    assert any(line.startswith('    assistant: shell({"command": "echo three files"}') for line in runs)
    assert any(line.startswith("    tool: ") and "three files" in line for line in runs)


def test_task_show_json_is_what_the_api_answers(stack, llm):
    llm.script("worker", tool_call("submit_result", status="failed", resultType="text",
                                   result={}, error="no files here"))
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="count the files")])[0]
    wait_for(lambda: stack.tasks.get(task.id).status == "failed", timeout=30,
             message="the task to fail")
    done = installed("task", "show", task.id, "--json")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["task"] == stack.tasks.get(task.id).dump()
    assert body["result"]["status"] == "failed" and body["result"]["error"] == "no files here"
    assert body["events"] == stack.tasks.log_of(task.id)
    assert body["runs"] == stack.runs.of(task.id) and len(body["runs"]) == 1
    text = installed("task", "show", task.id).stdout
    assert "result: failed (text)" in text and "  error: no files here" in text


def test_task_show_of_an_unknown_id_is_one_line(runtime):
    for args in (["task", "show", "task_nope"], ["task", "show", "task_nope", "--json"]):
        error = one_line_error(installed(*args))
        assert error == "mimikit: no task with id 'task_nope'; see `mimikit tasks`"


def test_worker_passes_celery_options_through_and_registers(runtime, tmp_path):
    name = "passthrough@test"
    argv = [str(INSTALLED), "worker", "--queues", "worker", "--name", name, "--concurrency",
            "3", "--pool", "solo", "--max-tasks-per-child", "5", "--without-gossip"]
    process = spawn(argv, tmp_path / "worker.log", cwd=ROOT, env=dict(os.environ))
    try:
        key = runtime.keys.worker(name)
        wait_for(lambda: runtime.redis.exists(key) or process.poll() is not None, timeout=30,
                 message="the worker to register")
        log = (tmp_path / "worker.log").read_text()
        assert process.poll() is None, log
        entry = json.loads(runtime.redis.get(key))
        assert entry["queues"] == ["worker"] and entry["pid"] == process.pid
        assert entry["concurrency"] == 1, entry  # the solo pool, not 3 prefork processes
        assert children_of(process.pid) == [], "a solo pool starts no child processes"
        assert "(solo)" in log, log
    finally:
        stop_processes([process], 10, first_signal=signal.SIGTERM)


def test_worker_with_an_option_celery_does_not_know_is_one_line(runtime):
    done = installed("worker", "--queues", "worker", "--pool", "sideways")
    assert done.returncode == 1, done.stderr
    assert "Invalid value for '-P' / '--pool': 'sideways'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_worker_runs_the_threads_pool_and_beat_on_a_thread_of_its_own(runtime, tmp_path):
    name = "beating@test"
    argv = [str(INSTALLED), "worker", "--queues", "supervisor", "--name", name,
            "--concurrency", "4", "--beat"]
    process = spawn(argv, tmp_path / "worker.log", cwd=ROOT, env=dict(os.environ))
    try:
        wait_for(lambda: runtime.redis.exists(runtime.keys.worker(name))
                 or process.poll() is not None, timeout=30, message="the worker to register")
        wait_for(lambda: runtime.redis.get(runtime.keys.meta("last_tick")), timeout=20,
                 message="a supervisor tick sent by its beat")
        log = (tmp_path / "worker.log").read_text()
        entry = json.loads(runtime.redis.get(runtime.keys.worker(name)))
        assert entry["concurrency"] == 4 and "(thread)" in log, log
        assert children_of(process.pid) == [], "neither the pool nor beat forks a process"
        beat = json.loads(runtime.redis.get(runtime.keys.meta("beat")))
        assert beat["owner"].endswith(f":{process.pid}")
    finally:
        stop_processes([process], 15, first_signal=signal.SIGTERM)
    assert process.returncode == 0 and "Releasing lock" in (tmp_path / "worker.log").read_text()
