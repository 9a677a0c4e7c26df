"""Teller, Planner and Worker runs over the scripted LLM, on real Redis and Celery workers."""

from __future__ import annotations

import json
import time
from pathlib import Path

from agent_helpers import (
    history,
    last_tool_result,
    post_input,
    script_deploy_question,
    tool_messages,
    tool_names,
    user_prompt,
    wait_history,
)
from llm_server import raw_arguments, text, tool_call, tool_calls
from processes import wait_for

TELLER_TOOLS = ["ask_user", "cancel_task", "delegate", "list_tasks", "manage_trigger",
                "remember", "reply", "show", "update_backlog"]


def test_user_input_gets_a_teller_reply_and_the_llm_saw_only_teller_tools(stack, llm):
    llm.script("teller", tool_call("reply", text="Hello! How can I help?"))
    post_input(stack, "hi there")
    found = wait_history(stack, lambda h: ("assistant", "Hello! How can I help?") in h)
    assert found == [("user", "hi there"), ("assistant", "Hello! How can I help?")]
    request = llm.requests_for("teller")[0]  # (then whether more follows the lone reply)
    assert tool_names(request) == TELLER_TOOLS
    assert request["messages"][0]["content"].startswith("You are the Mimikit runtime teller.")
    assert "hi there" in user_prompt(request)
    reply = stack.conversation.recent(1)[0]
    assert reply.usage.totalTokens > 0 and reply.elapsedMs is not None
    # the run is recorded when it ends, which may be after its reply is shown
    runs = wait_for(lambda: stack.runs.of("teller"), timeout=10, message="the Teller's run")
    assert runs[0]["status"] == "done" and runs[0]["toolCalls"][0]["name"] == "reply"


def test_plain_text_without_a_tool_call_counts_as_a_reply(stack, llm):
    llm.script("teller", text("Just text."))
    post_input(stack, "hello")
    wait_history(stack, lambda h: ("assistant", "Just text.") in h)


def _plan_a_then_b(body):
    """Planner script: delegate A, then B on task_done A, then submit done."""
    tools_seen = [m for m in body["messages"] if m["role"] == "tool"]
    if not tools_seen:
        return tool_call("delegate", prompt="Read src/utils.py and list its functions",
                         title="A: read")
    if len(tools_seen) == 1:
        a_id = last_tool_result(body)["taskId"]
        return tool_call("delegate", prompt="Split the functions into modules", title="B: split",
                         type="conditional",
                         condition={"type": "task_done", "params": {"taskId": a_id}})
    return tool_call("submit_result", status="done", resultType="text",
                     result={"text": "A then B"})


def _worker(body):
    prompt = user_prompt(body)
    if "B: split" in prompt:
        assert "functions: f, g" in prompt  # A's result is in B's prompt
        return tool_call("submit_result", status="done", resultType="text",
                         result={"text": "split into 2 modules"})
    return tool_call("submit_result", status="done", resultType="text",
                     result={"text": "functions: f, g"})


def test_refactor_flow_runs_a_then_b_with_a_result_and_the_teller_reports(stack, llm):
    llm.script("teller", tool_calls([("reply", {"text": "On it."}),
                                     ("delegate", {"prompt": "Refactor src/utils.py"})]))
    llm.default("planner", _plan_a_then_b)
    llm.default("worker", _worker)
    llm.default("teller", tool_call("reply", text="Report: done."))
    post_input(stack, "Refactor X")
    wait_history(stack, lambda h: ("assistant", "Report: done.") in h, timeout=60,
                 message="the report of the chain's final step")
    time.sleep(1.0)  # no report of the intermediate step comes after it
    texts = [m.text for m in stack.conversation.between(None, None)]
    assert texts[:2] == ["Refactor X", "On it."]
    # A is a step B waits on: it stays in the task panel; the chat hears of B, the last step.
    assert "Task completed: A: read" not in texts and texts.count("Report: done.") == 1
    assert texts.index("Task created: A: read") < texts.index("Task completed: B: split")
    assert texts.index("Task completed: B: split") < texts.index("Report: done.")
    assert len(llm.requests_for("teller")) == 2
    worker_prompts = [user_prompt(b) for b in llm.requests_for("worker")]
    assert any("functions: f, g" in p and "B: split" in p for p in worker_prompts)
    # one trace id follows the input through every run and task
    trace = stack.conversation.recent(100)[0].traceId
    tasks = stack.tasks.with_status("done")
    assert tasks and all(t.traceId == trace for t in tasks)
    ran = [t for t in tasks if not t.is_trigger]  # B, the step that ran, retired as done too
    assert {t.role for t in ran} == {"planner", "worker"} and all(t.celeryId for t in ran)
    assert [t.title for t in tasks if t.is_trigger] == ["B: split"]


def test_needs_input_asks_the_user_and_the_answer_redelegates(stack, llm):
    script_deploy_question(llm)
    post_input(stack, "deploy it")
    question = wait_for(stack.conversation.question, timeout=30, message="a pending question")
    assert question.options == ["staging", "production"]
    llm.script("teller", tool_calls([("delegate", {"prompt": "Deploy the app to staging"}),
                                     ("reply", {"text": "Deploying to staging."})]))
    llm.script("planner", tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "ok"}))
    assert stack.conversation.resolve("staging", source="user")
    from mimikit.conversation.gate import wake

    wake(stack)
    # the plan, the look for an answer given already, the plan with the person's answer
    wait_for(lambda: len(llm.requests_for("planner")) == 3, timeout=30, message="re-delegation")
    # The Teller run that got the answer (the Planner's "ok" wakes it once more afterwards).
    assert any("Answer to your question 'Deploy to staging or production?' (asked for task "
               in user_prompt(r) and "), from the user: staging" in user_prompt(r)
               for r in llm.requests_for("teller"))
    assert "staging" in user_prompt(llm.requests_for("planner")[-1])


def test_expired_question_uses_the_default_or_reports_a_timeout(stack, llm):
    from mimikit.conversation.question import expire_question

    llm.default("teller", tool_call("reply", text="noted"))
    llm.script("teller", tool_call("ask_user", question="Which one?", timeout=0.5,
                                   default="first"))
    post_input(stack, "pick one")
    wait_for(stack.conversation.question, timeout=20, message="question")
    wait_for(lambda: expire_question(stack), timeout=5, message="expiry")
    wait_for(lambda: any("'Which one?': none in time, so its default applies: first"
                         in user_prompt(b) for b in llm.requests_for("teller")), timeout=20,
             message="default")

    llm.script("teller", tool_call("ask_user", question="Really?", timeout=0.5))
    post_input(stack, "again")
    wait_for(stack.conversation.question, timeout=20, message="second question")
    wait_for(lambda: expire_question(stack), timeout=5, message="second expiry")
    wait_for(lambda: any("'Really?': none; it timed out unanswered" in user_prompt(b)
                         for b in llm.requests_for("teller")), timeout=20, message="timeout")


def test_ten_inputs_during_a_teller_run_are_all_answered_by_one_run_at_a_time(stack, llm):
    from itertools import count as counting

    from llm_server import delay

    passes = counting(1)

    def answer(body):
        if body["messages"][-1]["role"] == "tool":
            return text("")  # asked whether more follows its reply: nothing
        pending = user_prompt(body).split("## Pending inputs", 1)[-1]
        count = pending.count("] user: ")
        # each pass's reply its own: one that says an earlier reply again is tried anew
        return tool_call("reply", text=f"answered {count} in pass {next(passes)}")

    llm.script("teller", delay(1.5, tool_call("reply", text="first")))
    llm.default("teller", answer)
    post_input(stack, "first")
    wait_for(lambda: stack.redis.exists(stack.keys.teller_lock), message="teller running")
    for n in range(10):
        post_input(stack, f"more {n}")
    wait_history(stack, lambda h: sum(int(t.split()[1]) for r, t in h
                                      if r == "assistant" and t.startswith("answered ")) == 10,
                 timeout=40, message="all ten answered")
    runs = stack.runs.of("teller")
    spans = sorted((r["startedAt"], r["durationMs"]) for r in runs)
    from datetime import datetime, timedelta

    for (start_a, dur_a), (start_b, _d) in zip(spans, spans[1:], strict=False):
        end_a = datetime.fromisoformat(start_a) + timedelta(milliseconds=dur_a)
        assert end_a <= datetime.fromisoformat(start_b), "two Teller runs overlapped"
    # an input leaves the inbox just after its reply is stored
    wait_for(lambda: stack.inbox.read() == [], timeout=10, message="the inbox emptied")


def test_planner_calling_reply_gets_an_error_and_continues(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "plan something"}),
                                     ("reply", {"text": "ok"})]))
    llm.script("planner", tool_call("reply", text="hi"),
               tool_call("submit_result", status="done", resultType="text", result={"text": "x"}))
    post_input(stack, "do it")
    wait_for(lambda: len(llm.requests_for("planner")) == 2, timeout=30, message="planner step 2")
    second = llm.requests_for("planner")[1]
    assert "reply" not in tool_names(second)
    assert "not available to the Planner" in tool_messages(second)[-1]
    wait_for(lambda: stack.tasks.with_status("done"), timeout=20, message="planner done")


def test_worker_is_never_offered_teller_tools():
    from mimikit.agents.common import registry

    names = registry().names_for("worker")
    assert names == ["append_file", "copy", "list_files", "make_dir", "read_file", "remove",
                     "rename", "shell", "submit_result", "write_file"]
    assert registry().call("worker", "reply", '{"text": "x"}', None).content.startswith("error:")


def _worker_task(stack, prompt="do work", **fields):
    from mimikit.lifecycle.submit import submit
    from mimikit.models import Task

    return submit(stack, [Task(prompt=prompt, **fields)])[0]


def test_malformed_calls_are_fed_back_and_the_step_limit_fails_readably(stack, llm):
    llm.script("worker",
               raw_arguments("read_file", "{not json"),
               tool_call("nope"),
               tool_call("read_file", wrong="x"),
               tool_call("submit_result", status="done", resultType="analysis",
                         result={"text": "not an analysis"}))
    llm.default("worker", tool_call("list_files"))
    llm.default("teller", tool_call("reply", text="ok"))
    task = _worker_task(stack)
    wait_for(lambda: stack.tasks.get(task.id).status == "failed", timeout=40,
             message="task to fail at the step limit")
    contents = tool_messages(llm.requests_for("worker")[4])
    assert "invalid JSON" in contents[0] or "JSON" in contents[0]
    assert "unknown tool 'nope'" in contents[1]
    assert "path" in contents[2] and "wrong" in contents[2]
    assert "result.findings" in contents[3]
    error = stack.tasks.result(task.id).error
    assert "same call again" in error and "list_files" in error  # not to the step limit
    # the worker process survived: another task still runs
    llm.script("worker", tool_call("submit_result", status="done", resultType="text",
                                   result={"text": "fine"}))
    other = _worker_task(stack, prompt="second")
    wait_for(lambda: stack.tasks.get(other.id).status == "done", timeout=20,
             message="second task")


def test_worker_file_tools_refuse_paths_outside_the_work_dir(stack, llm):
    llm.script("worker", tool_call("read_file", path="../../etc/passwd"),
               tool_call("read_file", path="/etc/passwd"),
               tool_call("shell", command="sleep 30", timeout=1),
               tool_call("submit_result", status="done", resultType="text",
                         result={"text": "ok"}))
    llm.default("teller", tool_call("reply", text="ok"))
    task = _worker_task(stack)
    wait_for(lambda: stack.tasks.get(task.id).status == "done", timeout=40,
             message="task done")
    contents = tool_messages(llm.requests_for("worker")[-1])
    assert "outside the work directory" in contents[0]
    assert "outside the work directory" in contents[1]
    assert json.loads(contents[2])["timedOut"] is True
    transcript = stack.runs.of(task.id)[0]
    assert [c["name"] for c in transcript["toolCalls"]][:3] == ["read_file", "read_file", "shell"]


def test_a_worker_renames_appends_and_makes_folders_but_does_not_overwrite_unread(stack, llm):
    work = Path(stack.settings.work_dir)
    (work / "todo.md").write_text("buy milk\n")
    llm.script("worker", tool_call("write_file", path="todo.md", content="tasks.md"),
               tool_call("rename", path="todo.md", to="tasks.md"),
               tool_call("append_file", path="tasks.md", content="walk the dog"),
               tool_call("make_dir", path="photos"),
               tool_call("submit_result", status="done", resultType="text",
                         result={"text": "renamed, appended, made photos/"}))
    llm.default("teller", tool_call("reply", text="ok"))
    task = _worker_task(stack, prompt="Rename todo.md to tasks.md, add walk the dog, make photos")
    wait_for(lambda: stack.tasks.get(task.id).status == "done", timeout=40,
             message="task done")
    contents = tool_messages(llm.requests_for("worker")[-1])
    assert "'todo.md' already exists (9 bytes): append_file adds to its end" in contents[0]
    assert (work / "tasks.md").read_text() == "buy milk\nwalk the dog\n"
    assert not (work / "todo.md").exists() and (work / "photos").is_dir()


def test_delegate_refuses_a_duplicate_of_an_active_task(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "same"}),
                                     ("delegate", {"prompt": "same"}),
                                     ("reply", {"text": "ok"})]))
    llm.default("planner", text("thinking"))  # planner never finishes in this test
    post_input(stack, "go")
    wait_history(stack, lambda h: ("assistant", "ok") in h)
    run = wait_for(lambda: stack.runs.of("teller"), message="the Teller's run kept")[0]
    first, second = (json.loads(c["content"]) for c in run["toolCalls"][:2])
    assert second["taskId"] == first["taskId"] and second["duplicate"] is True


def test_without_an_llm_the_chat_gets_a_clear_system_message(runtime, procs):
    procs.worker(queues="teller,planner,supervisor", concurrency=1, name="agents")
    post_input(runtime, "anyone there?")
    found = wait_history(runtime, lambda h: any(r == "system" for r, _t in h),
                         message="a system message")
    system = next(t for r, t in found if r == "system")
    assert "no LLM is configured" in system and "MIMIKIT_LLM_BASE_URL" in system
    from mimikit.status import status

    assert status(runtime)["llm"]["configured"] is False


def test_task_detail_returns_the_run_transcript_with_trace_and_usage(stack, llm):
    from mimikit.web import create_app

    llm.script("worker", tool_call("list_files"),
               tool_call("submit_result", status="done", resultType="text",
                         result={"text": "listed"}))
    task = _worker_task(stack, prompt="list the files", traceId="trace-42")
    wait_for(lambda: stack.tasks.get(task.id).status == "done", timeout=30,
             message="task done")
    body = create_app(stack.settings).test_client().get(f"/api/tasks/{task.id}").get_json()
    assert body["task"]["traceId"] == "trace-42" and body["task"]["celeryId"]
    assert body["result"]["result"] == {"text": "listed"}
    (run,) = body["runs"]
    assert [c["name"] for c in run["toolCalls"]] == ["list_files", "submit_result"]
    assert run["usage"]["totalTokens"] > 0 and run["durationMs"] >= 0
    assert run["messages"][0]["role"] == "system"
    types = [e["type"] for e in body["events"]]
    assert types[:2] == ["task_created", "task_started"] and "task_done" in types
    assert all(e.get("traceId") == "trace-42" for e in body["events"] if e["type"] != "run_finished")


def test_an_unreadable_inbox_item_is_dropped_not_retried_forever(stack, llm):
    from mimikit.conversation.gate import wake

    llm.default("teller", tool_call("reply", text="fine"))
    stack.redis.rpush(stack.keys.inbox, '{"kind": "input"}')  # no id, no message
    wake(stack)
    wait_for(lambda: stack.redis.llen(stack.keys.inbox) == 0, message="the inbox to be cleared")
    post_input(stack, "still there?")
    wait_history(stack, lambda h: ("assistant", "fine") in h, message="a normal reply")
    assert not any("internal error" in t for _r, t in history(stack))


def test_inputs_sent_while_the_llm_is_down_are_kept_and_answered_when_it_is_back(stack, llm,
                                                                                  procs):
    from llm_server import error

    from mimikit.status import status

    llm.default("teller", error(503))
    post_input(stack, "first")
    wait_history(stack, lambda h: sum(r == "system" for r, _t in h) == 1, message="notice")
    post_input(stack, "second")
    found = wait_history(stack, lambda h: sum(r == "system" for r, _t in h) == 2,
                         message="a notice for the new message")
    assert "messages are kept" in found[-1][1]
    assert [i.message["text"] for i in stack.inbox.read()] == ["first", "second"]
    assert "503" in status(stack)["llm"]["error"]

    llm.default("teller", tool_call("reply", text="back again"))
    procs.beat()  # the supervisor tick retries after the backoff
    wait_history(stack, lambda h: ("assistant", "back again") in h, timeout=40,
                 message="the kept messages answered")
    last = llm.requests_for("teller")[-1]
    assert "first" in user_prompt(last) and "second" in user_prompt(last)
    # the pass clears the outage once its reply is stored and its items acknowledged
    wait_for(lambda: "error" not in status(stack)["llm"], timeout=10,
             message="the outage cleared after the answered pass")


def test_a_planner_answer_without_delegations_reaches_the_user_once(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "What did we decide about logs?"}),
                                     ("reply", {"text": "Let me look that up."})]))
    llm.script("planner", tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "You decided to keep logs for 30 days."}))
    llm.default("teller", lambda body: tool_call("reply", text="Found it: 30 days."))
    post_input(stack, "what did we decide about logs?")
    answer = ("assistant", "You decided to keep logs for 30 days.")
    wait_history(stack, lambda h: answer in h, message="the Planner's answer")
    time.sleep(1.0)  # no second telling, nor a model's report, arrives
    assert history(stack).count(answer) == 1 and len(llm.requests_for("teller")) == 1


def test_a_worker_running_what_a_schedule_fired_is_told_a_reminder_needs_no_tool(runtime,
                                                                                tmp_path):
    """Given "Remind the user to turn off the lights." as it fired, the 1.5B model ran
    ``sudo shutdown -h now``: a task a schedule runs says so; one handed over now does not."""
    from mimikit.agents.worker import SCHEDULED_NOTE, upstream_ids
    from mimikit.agents.worker import worker_prompt as prompt_with_upstream
    from mimikit.models import Task
    from mimikit.workspace.local import Workspace

    def worker_prompt(runtime, task, workspace):
        return prompt_with_upstream(runtime, task, workspace, upstream_ids(runtime, task))

    workspace = Workspace(tmp_path)
    fired = Task(prompt="Remind the user to turn off the lights.", triggerId="task-0123abcd4567")
    now = Task(prompt="Create notes.txt containing hello.")
    assert worker_prompt(runtime, fired, workspace).endswith(
        "Remind the user to turn off the lights.\n\n" + SCHEDULED_NOTE)
    assert SCHEDULED_NOTE not in worker_prompt(runtime, now, workspace)
    step_a = Task(prompt="Read a.txt.")
    step_b = Task(type="conditional", prompt="Split what A read.",
                  condition={"type": "task_done", "params": {"taskId": step_a.id}})
    runtime.tasks.add([step_a, step_b])
    chained = Task(prompt="Split what A read.", triggerId=step_b.id)  # a step of a chain
    assert SCHEDULED_NOTE not in worker_prompt(runtime, chained, workspace)
