"""``mimikit send``, ``mimikit tasks`` and ``mimikit cancel`` as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from llm_server import delay, tool_call, tool_calls
from processes import ROOT, TESTS, free_port, wait_for
from web_helpers import commands_running

from mimikit.lifecycle.submit import submit
from mimikit.models import Message, Result, Task

SLEEP_ARG = "37.25"  # an unusual duration, so the test finds only its own sleep process


def mimikit(*args: str, env_extra: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
    env = {**os.environ, **(env_extra or {}),
           "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)])}
    return subprocess.Popen([sys.executable, "-m", "mimikit", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, **kwargs)


def run(*args: str, timeout: float = 30, env_extra: dict[str, str] | None = None
        ) -> tuple[int, str, str]:
    process = mimikit(*args, env_extra=env_extra)
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def sleep_processes() -> list[int]:
    return commands_running("sleep", SLEEP_ARG)


def test_send_prints_the_replies_as_they_stream_in(stack, llm):
    llm.script("teller", tool_calls([("reply", {"text": "On it."}),
                                     ("delegate", {"prompt": "count the files"})]))
    llm.script("planner", tool_call("delegate", prompt="count the files", title="count files"),
               tool_call("submit_result", status="done", resultType="text",
                         result={"text": "planned"}))
    llm.script("worker", delay(2.5, tool_call("submit_result", status="done", resultType="text",
                                              result={"text": "3 files"})))
    llm.default("teller", tool_call("reply", text="Report: 3 files."))
    process = mimikit("send", "count the files", "--timeout", "60")
    first = process.stdout.readline().strip()
    still_running = process.poll() is None
    rest, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert first == "On it."
    assert still_running, "the first reply was printed only at the end"
    lines = rest.strip().splitlines()
    assert lines[0] == "[system] Task created: count files", rest
    assert lines[-1] == "Report: 3 files.", rest
    assert "count the files" not in first + rest  # the user's own text is not echoed
    # the message carried its trace to the tasks it started
    (user,) = [m for m in stack.conversation.between(None, None) if m.role == "user"]
    assert {t.traceId for t in stack.tasks.with_status("done")} == {user.id}


def test_send_stops_at_a_question_and_answer_continues_the_conversation(stack, llm):
    llm.script("teller", tool_call("ask_user", question="Staging or production?",
                                   options=["staging", "production"]))
    code, out, _err = run("send", "deploy it", "--timeout", "30")
    assert code == 0
    assert "[question] Staging or production?  (options: staging, production)" in out
    assert '[question] answer it with: mimikit answer "staging"' in out
    llm.script("teller", tool_call("reply", text="Deploying to production."))
    code, out, err = run("answer", "production", "--wait", "--timeout", "30")
    assert code == 0, err
    assert out.splitlines() == ["answered: Staging or production?", "Deploying to production."]
    assert stack.conversation.question() is None
    teller_prompt = json.dumps(llm.requests_for("teller")[-1]["messages"])
    assert "production" in teller_prompt


def test_send_without_workers_gives_up_after_its_timeout(runtime):
    started = time.monotonic()
    code, _out, err = run("send", "anyone there?", "--timeout", "2")
    assert code == 1 and "no answer within the timeout" in err
    assert time.monotonic() - started < 20


def test_tasks_lists_queued_running_and_finished_tasks(runtime):
    queued, running, done = runtime.tasks.add([
        Task(prompt="queued work", title="Queued one"), Task(prompt="running work"),
        Task(prompt="finished work"),
    ])
    runtime.tasks.start(running.id, "o", "c", lambda _owner: True)
    runtime.tasks.start(done.id, "o", "c", lambda _owner: True)
    runtime.tasks.complete(Result(id=done.id, status="done", result={"text": "ok"}),
                                )
    code, out, _err = run("tasks")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()}
    assert "queued" in rows[queued.id] and "Queued one" in rows[queued.id]
    assert "running" in rows[running.id] and "done" in rows[done.id]
    code, out, _err = run("tasks", "--scope", "queue", "--json")
    assert code == 0 and [t["id"] for t in json.loads(out)] == [queued.id]


def test_tasks_says_so_when_there_are_none_and_refuses_a_bad_scope(runtime):
    assert run("tasks")[1].strip() == "no tasks"
    code, _out, err = run("tasks", "--scope", "later")
    assert code == 1 and "Invalid value for '--scope': 'later' is not one of" in err
    assert len(err.strip().splitlines()) == 1 and "mimikit tasks --help" in err, err


def test_cancel_of_a_queued_task_and_of_an_unknown_id(runtime):
    task = runtime.tasks.add([Task(prompt="never mind")])[0]
    code, out, _err = run("cancel", task.id)
    assert code == 0 and out.strip() == "canceled"
    assert runtime.tasks.get(task.id).status == "canceled"
    code, out, _err = run("cancel", "task_nope")
    assert code == 1 and "no task with id 'task_nope'" in out


def test_cancel_stops_a_running_worker_and_its_shell_command(stack, llm):
    llm.script("worker", tool_call("shell", command=f"sleep {SLEEP_ARG}", timeout=120))
    llm.default("teller", tool_call("reply", text="ok"))
    task = submit(stack, [Task(prompt="wait a while")])[0]
    wait_for(sleep_processes, timeout=30, message="the sleep command to run")
    assert stack.tasks.get(task.id).status == "running"
    code, out, _err = run("cancel", task.id)
    assert code == 0, out
    wait_for(lambda: stack.tasks.get(task.id).status == "canceled", timeout=20,
             message="the task to be canceled")
    wait_for(lambda: not sleep_processes(), timeout=10, message="the sleep to be gone")


def test_commands_with_redis_down_say_so_in_one_line_without_a_traceback():
    url = f"redis://127.0.0.1:{free_port()}/0"
    for args in (["send", "hi"], ["tasks"], ["cancel", "task_x"], ["answer", "yes"],
                 ["task", "show", "task_x"]):
        code, _out, err = run(*args, env_extra={"MIMIKIT_REDIS_URL": url})
        assert code == 1, (args, err)
        assert f"mimikit: cannot reach Redis at {url}" in err, (args, err)
        assert "mimikit up" in err and "Traceback" not in err, (args, err)
        assert len(err.strip().splitlines()) == 1, (args, err)


def test_send_refuses_an_empty_or_too_long_text_before_posting(runtime):
    for text, words in (("", ["text", "at least 1 character"]),
                        ("x" * 32_769, ["text", "32768"])):
        code, _out, err = run("send", text, "--timeout", "2")
        assert code == 1, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert all(word in err for word in words), err
    assert runtime.conversation.count() == 0 and not runtime.inbox.read()


def test_prompt_full_shows_the_history_and_memory_a_teller_run_would_get(runtime):
    memory = runtime.settings.state_dir / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "2026-01-28-deploy.md").write_text("The kubernetes deploy used helm charts.\n",
                                                 encoding="utf-8")
    runtime.conversation.append(Message(role="user", text="how did the kubernetes deploy go?"))
    runtime.conversation.append(Message(role="assistant", text="It went fine."))
    code, full, err = run("prompt", "teller", "--mode", "full")
    assert code == 0, err
    _code, minimal, _err = run("prompt", "teller")
    assert full.startswith(minimal.rstrip("\n")) and full != minimal
    assert "## History" in full and "how did the kubernetes deploy go?" in full
    assert "It went fine." in full
    assert "## Memory" in full and "helm charts" in full
    assert "## History" not in minimal
    # the Teller reads its Memory right before its inputs, after the rest of the context
    assert full.index("It went fine.") < full.index("--- and has right before its inputs ---"
                                                    "\n## Memory")


def test_prompt_full_without_redis_falls_back_to_minimal_with_a_note():
    url = f"redis://127.0.0.1:{free_port()}/0"
    code, full, err = run("prompt", "teller", "--mode", "full",
                          env_extra={"MIMIKIT_REDIS_URL": url})
    _code, minimal, _err = run("prompt", "teller", env_extra={"MIMIKIT_REDIS_URL": url})
    assert code == 0, err
    assert full == minimal and full.startswith("You are the Mimikit runtime teller.")
    assert "cannot reach Redis" in err and "minimal prompt" in err and "Traceback" not in err
