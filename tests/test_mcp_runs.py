"""MCP servers in Planner and Worker runs on real Redis and Celery workers, with a real MCP
server process: the Planner names the server a task needs, its Worker calls the server's tool;
broken servers fail their own tasks only; a call that hangs or kills its server fails the call,
not the run; tasks that need no server send what they always sent."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from agent_helpers import post_input, tool_messages, user_prompt
from fault_helpers import wait_until
from llm_server import delay, text, tool_call, tool_calls
from mcp_helpers import stdio_entry, write_config
from processes import wait_for

from mimikit.agents.prompts import role_text
from mimikit.lifecycle.cancel import cancel_task
from mimikit.lifecycle.submit import submit
from mimikit.models import RetryPolicy, Task
from mimikit.tokens import estimate_tokens


def _done(runtime, task_id: str, timeout: float = 60):
    return wait_for(lambda: runtime.tasks.require(task_id).status in ("done", "failed"),
                    timeout=timeout, message=f"task {task_id} to finish")


def _result(runtime, task_id: str, timeout: float = 60):
    _done(runtime, task_id, timeout)
    return runtime.tasks.result(task_id)


def _submit_text(text: str):
    return tool_call("submit_result", status="done", resultType="text", result={"text": text})


def _live_steps(runtime, task_id: str) -> list[dict]:
    steps = []
    for _id, fields in runtime.redis.xrange(runtime.keys.events):
        if fields[b"event"] == b"run":
            data = json.loads(fields[b"data"])
            if data.get("taskId") == task_id:
                steps.append(data["step"])
    return steps


def _secret_word_worker(body):
    """Call the secret word tool, then report what it answered."""
    results = tool_messages(body)
    if not results:
        return tool_call("secrets__secret_word", seed=6)
    return _submit_text(f"The secret word is {results[-1]}")


def test_a_worker_does_what_only_an_mcp_tool_can_once_the_planner_names_its_server(stack, llm):
    write_config(stack, {"secrets": stdio_entry(description="Secret words by seed")})
    llm.script("teller", tool_calls([("reply", {"text": "On it."}),
                                     ("delegate", {"prompt": "the secret word of seed 6"})]))
    llm.default("teller", tool_call("reply", text="It is word-42."))
    llm.script("planner", tool_call("delegate", prompt="Find the secret word of seed 6.",
                                    title="Secret word", mcp=["secrets"]),
               _submit_text("A worker will find it."))
    llm.default("worker", _secret_word_worker)
    post_input(stack, "What is the secret word of seed 6?")
    worker = wait_for(lambda: next((t for t in stack.tasks.with_status("done")
                                    if t.role == "worker"), None), timeout=60,
                      message="the Worker task to finish")
    assert worker.mcp == ["secrets"]
    assert stack.tasks.result(worker.id).result == {"text": "The secret word is word-42"}
    planner = llm.requests_for("planner")[0]
    system = planner["messages"][0]["content"]
    assert "# MCP servers" in system and "- secrets: Secret words by seed" in system
    delegate = next(t["function"] for t in planner["tools"]
                    if t["function"]["name"] == "delegate")
    named = delegate["parameters"]["properties"]["mcp"]["items"]
    assert named.get("enum", [named.get("const")]) == ["secrets"]  # only a configured name
    first, second = llm.requests_for("worker")
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert tools["secrets__secret_word"]["parameters"]["required"] == ["seed"]
    assert {"shell", "submit_result"} <= set(tools)
    assert tool_messages(second) == ["word-42"]
    # journaled and counted like any call, and shown live as it happened
    (run,) = stack.runs.of(worker.id)
    assert [c["name"] for c in run["toolCalls"]] == ["secrets__secret_word", "submit_result"]
    finished = [e for e in stack.events.recent(500) if e["type"] == "run_finished"
                and e.get("taskId") == worker.id]
    assert finished and finished[-1]["ownCalls"] == 1
    assert any(s.get("kind") == "tool" and s["name"] == "secrets__secret_word" and s["ok"]
               for s in _live_steps(stack, worker.id))


def test_broken_servers_fail_their_own_tasks_with_why_and_other_tasks_run(stack, llm):
    write_config(stack, {
        "gone": {"command": "/nonexistent/mcp-server"},
        "quits": stdio_entry("--exit-at-start"),
        "stuck": stdio_entry("--hang-at-start", startTimeout=3),
        "secrets": stdio_entry(),
    })
    llm.default("worker", _secret_word_worker)
    broken = submit(stack, [Task(prompt=f"use {name}", mcp=[name])
                            for name in ("gone", "quits", "stuck")])
    fine = submit(stack, [Task(prompt="secret word", mcp=["secrets"]),
                          Task(prompt="no servers")])
    errors = {task.prompt: _result(stack, task.id) for task in broken}
    assert all(result.status == "failed" for result in errors.values())
    assert "MCP server 'gone' (stdio: /nonexistent/mcp-server) could not be started: " \
           "command not found" in errors["use gone"].error
    assert "exited (or closed its output) before answering" in errors["use quits"].error
    assert "no licence key found in LICENCE_KEY" in errors["use quits"].error
    assert "'stuck'" in errors["use stuck"].error
    assert "did not answer within 3 s" in errors["use stuck"].error
    assert _result(stack, fine[0].id).result == {"text": "The secret word is word-42"}
    assert _result(stack, fine[1].id).status == "done"
    # a task whose server could not start asked the model nothing
    asked = [user_prompt(body) for body in llm.requests_for("worker")]
    assert not [p for p in asked if "use gone" in p or "use quits" in p or "use stuck" in p]


def _hang_then_crash_then_work(body):
    calls = len(tool_messages(body))
    return [tool_call("secrets__wait", seconds=60), tool_call("secrets__crash"),
            tool_call("secrets__secret_word", seed=1),
            _submit_text("done after two failures: word-7")][calls]


def test_a_call_that_hangs_or_kills_its_server_fails_that_call_not_the_run(stack, llm):
    write_config(stack, {"secrets": stdio_entry(timeout=2)})
    llm.default("worker", _hang_then_crash_then_work)
    (task,) = submit(stack, [Task(prompt="try the server", mcp=["secrets"])])
    assert _result(stack, task.id).result == {"text": "done after two failures: word-7"}
    hung, crashed, worked = tool_messages(llm.requests_for("worker")[-1])
    assert hung.startswith("error: MCP server 'secrets' did not answer wait within 2 s")
    assert "closed the connection during crash" in crashed and "crashing on purpose" in crashed
    assert worked == "word-7"  # started again for the next call


def test_a_task_without_servers_sends_the_same_requests_with_and_without_a_config(
        stack, llm, figures):
    llm.default("worker", _submit_text("ok"))
    llm.default("planner", _submit_text("nothing to do"))
    sizes = {}
    for configured in (False, True):
        if configured:
            write_config(stack, {"secrets": stdio_entry(description="Secret words by seed"),
                                 "notes": stdio_entry()})
        llm.reset()
        llm.default("worker", _submit_text("ok"))
        llm.default("planner", _submit_text("nothing to do"))
        (worker,) = submit(stack, [Task(prompt="say ok", title="same")])
        (planner,) = submit(stack, [Task(role="planner", prompt="plan nothing")])
        _done(stack, worker.id), _done(stack, planner.id)
        sizes[configured] = {role: llm.requests_for(role)[0] for role in ("worker", "planner")}
    worker_before, worker_after = sizes[False]["worker"], sizes[True]["worker"]
    assert worker_after["tools"] == worker_before["tools"]
    assert worker_after["messages"][0] == worker_before["messages"][0]
    assert len(json.dumps(worker_after["messages"])) == len(json.dumps(worker_before["messages"]))
    planner_before, planner_after = sizes[False]["planner"], sizes[True]["planner"]
    assert planner_before["messages"][0]["content"] == role_text("planner")
    assert "mcp" not in json.dumps(planner_before["tools"])
    assert "- notes: no description" in planner_after["messages"][0]["content"]
    figures.record("first request, estimated prompt tokens (system + tools + task)", **{
        f"{role}_{'with' if on else 'without'}_config": estimate_tokens(
            json.dumps(sizes[on][role]["messages"]) + json.dumps(sizes[on][role]["tools"]))
        for role in ("worker", "planner") for on in (False, True)})


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in command and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def test_a_canceled_task_stops_its_mcp_call_and_its_server_at_once(stack, llm):
    marker = f"--tag=cancel-{uuid.uuid4().hex[:8]}"
    write_config(stack, {"secrets": stdio_entry(marker)})
    llm.default("worker", tool_call("secrets__wait", seconds=120))
    (task,) = submit(stack, [Task(prompt="wait long", mcp=["secrets"])])
    wait_until(lambda: any(s.get("calls") == ["secrets__wait"]
                           for s in _live_steps(stack, task.id)),
               timeout=60, message="the call of wait to be made")
    assert _processes_with(marker)
    time.sleep(0.5)  # the call is in flight
    assert cancel_task(stack, task.id, stop_running=True)[0]
    stopped_in = wait_until(lambda: stack.tasks.require(task.id).status == "canceled",
                            timeout=30, message="the task to be canceled")
    gone_in = wait_until(lambda: not _processes_with(marker), timeout=30,
                         message="the MCP server to be stopped")
    assert stopped_in < 5 and gone_in < 10, (stopped_in, gone_in)


def test_where_answers_are_held_to_a_schema_an_mcp_tool_is_one_branch_of_the_step(
        runtime, procs, llm, monkeypatch):
    from mimikit.llm.profile import ServerProfile
    from mimikit.llm.profile_store import RedisProfiles
    from mimikit.store.runtime import reset_runtime

    monkeypatch.setenv("MIMIKIT_LLM_BASE_URL", llm.url)
    reset_runtime()
    runtime.settings = runtime.settings.model_copy(update={"llm_base_url": llm.url})
    keeper = RedisProfiles(runtime.redis, runtime.keys.llm_profiles)
    keeper.save(ServerProfile(baseUrl=llm.url, model="worker", server="llama.cpp server",
                              constraint="json_schema", probed=True))
    write_config(runtime, {"secrets": stdio_entry()})

    def worker(body):
        said = [m["content"] for m in body["messages"][2:] if m["role"] == "user"]
        if not said:
            return text(json.dumps({"secrets__secret_word": {"seed": 6}}))
        return text(json.dumps({"submit_result": {"status": "done",
                                                   "result": {"text": said[-1]}}}))

    llm.default("worker", worker)
    procs.wait_ready(procs.worker(queues="worker", concurrency=1, name="tasks", wait=False))
    (task,) = submit(runtime, [Task(prompt="the secret word of seed 6", mcp=["secrets"])])
    assert _result(runtime, task.id).result == {"text": "Results:\n- secrets__secret_word: "
                                                        "word-42"}
    first = llm.requests_for("worker")[0]
    schema = first["response_format"]["json_schema"]["schema"]
    branches = [set(branch["properties"]) - {"check"} for branch in schema["anyOf"]]  # the note
    assert {"secrets__secret_word"} in branches and {"shell"} in branches
    system = first["messages"][0]["content"]
    assert "# Tools of MCP servers" in system
    assert '- {"secrets__secret_word": {seed}}: [secrets] The secret word of a seed.' in system


@pytest.mark.slow
def test_a_worker_killed_after_an_mcp_call_resumes_without_calling_it_again(
        wired, procs, llm, tmp_path, figures):
    runtime = wired
    calls = tmp_path / "calls.log"
    write_config(runtime, {"secrets": stdio_entry(env={"MCP_TEST_CALLS": str(calls)})})

    def worker(body):
        if not tool_messages(body):
            return tool_call("secrets__secret_word", seed=6)
        return delay(6, _submit_text(f"got {tool_messages(body)[-1]}"))

    llm.default("worker", worker)
    procs.worker(queues="teller,planner,supervisor", concurrency=2, name="agents")
    procs.beat()
    victim = procs.worker(queues="worker", concurrency=1, name="victim")
    (task,) = submit(runtime, [Task(prompt="secret", mcp=["secrets"],
                                    retry=RetryPolicy(maxAttempts=3))])
    wait_for(lambda: len(llm.requests_for("worker")) == 2, timeout=60,
             message="the answer after the MCP call in flight")
    procs.kill(victim)
    procs.worker(queues="worker", concurrency=1, name="rescuer")
    assert _result(runtime, task.id, timeout=90).result == {"text": "got word-42"}
    figures.record("kill -9 after an MCP call", mcp_calls=len(calls.read_text().split()),
                   ideal=1)
    assert calls.read_text().split() == ["6"]  # the journaled call was not made again
    assert runtime.runs.of(task.id)[-1]["resumed"] >= 1
