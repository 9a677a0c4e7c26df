"""What real models and servers send, played by the scripted server on the real stack: calls
written as text in every shape, object arguments, empty and cut answers, a reply then a
delegate, promises without the work, an answer typed in the chat box, a Teller call that hangs,
and the LLM calls a chat turn costs."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pytest
from agent_helpers import history, post_input, user_prompt, wait_history
from llm_server import (
    cut_off,
    hang,
    object_arguments,
    raw_arguments,
    text,
    tool_call,
    tool_calls,
)
from processes import wait_for

from mimikit.lifecycle.submit import submit
from mimikit.models import Task

DELEGATE = {"name": "delegate", "arguments": {"prompt": "Create notes.txt with 'hello'"}}
REPLY = {"name": "reply", "arguments": {"text": "I'll create notes.txt."}}
WRITTEN = {
    "bare": json.dumps([DELEGATE, REPLY]),
    "parameters": json.dumps({"name": "delegate", "parameters": DELEGATE["arguments"]}),
    "fenced": "Sure.\n```json\n" + json.dumps(DELEGATE) + "\n```",
    "tagged": "<tool_call>\n" + json.dumps(DELEGATE) + "\n</tool_call>\n<tool_call>\n"
              + json.dumps(REPLY) + "\n</tool_call>",
    "prose around": "Of course! " + json.dumps(DELEGATE) + " That's on its way.",
    "python_tag": "<|python_tag|>" + json.dumps({"name": "delegate",
                                                 "parameters": DELEGATE["arguments"]}),
    "mistral": "[TOOL_CALLS] " + json.dumps([DELEGATE]),
    "function tag": "<function=delegate>" + json.dumps(DELEGATE["arguments"]) + "</function>",
    "elements": "<tools>\n  <delegate prompt=\"Create notes.txt with 'hello'\"/>\n"
                "  <reply text=\"I'll create notes.txt.\"/>\n</tools>",
}


@pytest.fixture(autouse=True)
def planner_plans(llm):
    llm.default("planner", tool_call("submit_result", status="done", resultType="text",
                                     result={"text": "planned"}))


def _replies(stack):
    return [t for r, t in history(stack) if r == "assistant"]


def _planned(stack, llm):
    return wait_for(lambda: [t for t in stack.tasks.with_status("done") if t.role == "planner"],
                    timeout=30, message="the Planner task the Teller delegated")


@pytest.mark.parametrize("shape", sorted(WRITTEN))
def test_a_teller_call_written_as_text_is_run_and_never_shown(stack, llm, shape):
    llm.script("teller", text(WRITTEN[shape]))
    llm.default("teller", tool_call("reply", text="On it."))
    post_input(stack, "create notes.txt saying hello")
    planned = _planned(stack, llm)
    assert planned[0].prompt.startswith("Create notes.txt with 'hello'")
    wait_history(stack, lambda h: any(r == "assistant" for r, _t in h), message="a reply")
    shown = _replies(stack)
    assert not any("delegate" in t or "{" in t or "<" in t for t in shown), shown


def test_arguments_sent_as_objects_are_read(stack, llm):
    llm.script("teller", object_arguments(tool_calls([("delegate", {"prompt": "count files"}),
                                                      ("reply", {"text": "Counting."})])))
    post_input(stack, "how many files?")
    wait_history(stack, lambda h: ("assistant", "Counting.") in h, message="the reply")
    assert _planned(stack, llm)[0].prompt.startswith("count files")
    assert not any("internal error" in t for _r, t in history(stack))


@pytest.mark.parametrize("nothing", ["", "<tools>\n</tools>"], ids=["empty", "empty tools list"])
def test_an_empty_answer_is_corrected_not_taken_for_the_reply(stack, llm, nothing):
    llm.script("teller", text(nothing), tool_call("reply", text="Hello!"))
    post_input(stack, "hi")
    wait_history(stack, lambda h: ("assistant", "Hello!") in h, message="the reply")
    second = llm.requests_for("teller")[1]
    assert "empty" in second["messages"][-1]["content"]
    assert _replies(stack) == ["Hello!"]
    assert not any(role == "system" for role, _t in history(stack))


def test_a_cut_off_answer_is_asked_again_shorter(stack, llm):
    llm.script("teller", cut_off(raw_arguments("reply", '{"text": "A very long answer th')),
               tool_call("reply", text="Short answer."))
    post_input(stack, "tell me everything")
    wait_history(stack, lambda h: ("assistant", "Short answer.") in h, message="the reply")
    assert "cut off" in llm.requests_for("teller")[1]["messages"][-1]["content"]
    assert not any("A very long" in t for _r, t in history(stack))


def test_a_timeout_over_its_most_is_capped_not_refused(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "Create notes.txt",
                                                   "timeout": 600000}),
                                     ("reply", {"text": "On it."})]))
    post_input(stack, "create notes.txt")
    wait_history(stack, lambda h: ("assistant", "On it.") in h, message="the reply")
    planned = _planned(stack, llm)
    assert len(planned) == 1 and planned[0].timeout == 86400
    assert _replies(stack)[0] == "On it."  # the first answer was taken: no correction asked


def test_reply_first_then_delegate_in_the_next_message_is_not_lost(stack, llm):
    llm.script("teller", tool_call("reply", text="I'll create notes.txt for you."),
               tool_call("delegate", prompt="Create notes.txt"), text(""))
    post_input(stack, "create notes.txt")
    assert _planned(stack, llm)[0].prompt.startswith("Create notes.txt")
    # the Planner's own words follow (it made no work: ``own_words``), and nothing else
    wait_history(stack, lambda h: ("assistant", "planned") in h, message="the plan's words")
    assert _replies(stack) == ["I'll create notes.txt for you.", "planned"]


def test_a_planner_forced_to_finish_is_offered_that_function_alone(stack, llm):
    def small_model(body):  # prose, unless one tool is all it is shown
        offered = [tool["function"]["name"] for tool in body.get("tools", [])]
        if offered == ["submit_result"]:
            return tool_call("submit_result", status="done", resultType="text",
                             result={"text": "Planned one task."})
        return text("1. Read the logs. 2. Summarize them.")

    llm.script("teller", tool_call("delegate", prompt="Summarize the logs"),
               tool_call("reply", text="On it."))
    llm.default("planner", small_model)
    post_input(stack, "summarize the logs")
    planned = _planned(stack, llm)
    result = stack.tasks.results_by_id([planned[0].id])[planned[0].id].result
    assert result == {"text": "Planned one task."}
    sent = [(body.get("tool_choice"), len(body.get("tools", [])))
            for body in llm.requests_for("planner")]
    named = {"type": "function", "function": {"name": "submit_result"}}
    assert sent[1:] == [("auto", sent[0][1]), (named, 1)]  # corrected, then forced: alone


def test_a_delegation_that_drops_part_of_the_request_carries_the_users_words(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "remind me to drink water at 9am"}),
                                     ("reply", {"text": "I'll set that up."})]))
    # a result in another script than the request's: the Teller's model reports it
    llm.script("planner", tool_call("submit_result", status="done", resultType="text",
                                    result={"text": "已安排。"}))
    post_input(stack, "Every day at 9am remind me to drink water.")
    prompt = _planned(stack, llm)[0].prompt
    assert prompt.startswith("remind me to drink water at 9am")
    assert prompt.endswith("## The user's words\nEvery day at 9am remind me to drink water.")
    told = wait_for(lambda: [body["messages"][1]["content"] for body in llm.requests_for("teller")
                             if "## Task results" in body["messages"][1]["content"]],
                    message="the Teller told the Planner's result")
    assert "original request: remind me to drink water at 9am" in told[0]
    assert "## The user's words" not in told[0]  # the Teller sees what it delegated
    llm.script("teller", tool_calls([("delegate", {"prompt": "Summarize  README.md"}),
                                     ("reply", {"text": "Summarizing."})]))
    post_input(stack, "summarize readme.md")
    wait_for(lambda: len(_planned(stack, llm)) == 2, message="the second Planner task")
    assert "Summarize  README.md" in [t.prompt for t in _planned(stack, llm)]  # quoted already


def test_a_model_running_on_into_its_next_input_is_stopped_at_its_heading(stack, llm):
    llm.script("teller", tool_call("reply", text="Hi!"))
    post_input(stack, "hello")
    wait_history(stack, lambda h: ("assistant", "Hi!") in h, message="reply")
    body = llm.requests_for("teller")[0]
    shown = body["messages"][-1]["content"]
    assert "\nToday is " in shown and "\n\n## Pending inputs\n" in shown  # the stops below
    assert {"\nToday is ", "\n## Pending inputs"} <= set(body["stop"])
    assert len(body["stop"]) <= 4  # OpenAI's limit


def test_a_reply_with_its_delegate_costs_one_call_and_a_lone_reply_one_more(stack, llm):
    llm.script("teller", tool_call("reply", text="Hi! How can I help?"), text(""))
    post_input(stack, "hello")  # the work may follow a lone reply: it is asked once more
    wait_history(stack, lambda h: ("assistant", "Hi! How can I help?") in h, message="reply")
    wait_for(lambda: llm.pending("teller") == 0, message="the turn's second request")
    llm.script("teller", tool_calls([("delegate", {"prompt": "Summarize README.md"}),
                                     ("reply", {"text": "Summarizing it now."})]))
    post_input(stack, "summarize the readme")
    wait_history(stack, lambda h: ("assistant", "Summarizing it now.") in h, message="reply")
    turns = [body for body in llm.requests_for("teller")  # not the pass on the result
             if "## Task results" not in body["messages"][1]["content"]]
    assert len(turns) == 3 and all("tool_choice" not in body for body in turns)


def test_an_answer_typed_in_the_chat_box_answers_the_pending_question(stack, llm):
    from mimikit.models import PendingQuestion

    stack.conversation.ask(PendingQuestion(question="Staging or production?",
                                           options=["staging", "production"], traceId="t1"))
    llm.script("teller", tool_call("answer", answer="yes"))  # asked alone, with one call
    llm.default("teller", tool_call("reply", text="Deploying to staging."))
    post_input(stack, "staging, and please go ahead")
    wait_history(stack, lambda h: ("assistant", "Deploying to staging.") in h, message="reply")
    assert stack.conversation.question() is None
    judging, passing = llm.requests_for("teller")[:2]
    assert judging["tool_choice"] == {"type": "function", "function": {"name": "answer"}}
    assert [tool["function"]["name"] for tool in judging["tools"]] == ["answer"]
    prompt = user_prompt(passing)
    assert "- Answer to your question 'Staging or production?', from the user: staging, " \
        "and please go ahead" in prompt
    assert "Pending inputs" in prompt


def test_a_question_typed_while_a_question_is_pending_is_a_new_input(stack, llm):
    from mimikit.models import PendingQuestion

    stack.conversation.ask(PendingQuestion(question="Staging or production?",
                                           options=["staging", "production"]))
    llm.default("teller", tool_call("reply", text="Staging is the test server."))
    post_input(stack, "what is staging?")
    wait_history(stack, lambda h: ("assistant", "Staging is the test server.") in h,
                 message="reply")
    assert stack.conversation.question() is not None  # still waiting for its answer
    assert "] user: what is staging?" in user_prompt(llm.requests_for("teller")[0])


@pytest.mark.slow
def test_a_teller_call_hanging_past_its_timeout_keeps_the_message_and_answers_later(
        runtime, procs, llm, monkeypatch):
    from mimikit.store.runtime import reset_runtime

    monkeypatch.setenv("MIMIKIT_LLM_BASE_URL", llm.url)
    monkeypatch.setenv("MIMIKIT_TELLER_TIMEOUT", "3")
    reset_runtime()
    procs.worker(queues="teller,planner,supervisor", concurrency=2, name="agents")
    llm.script("teller", hang(8), hang(8))  # two passes cut: the second tells no one again
    llm.default("teller", tool_call("reply", text="Sorry for the wait: hello!"))
    began = time.monotonic()
    post_input(runtime, "hello?")
    notice = wait_history(runtime, lambda h: any("kept" in t for r, t in h if r == "system"),
                          timeout=40, message="one notice that the message is kept")
    assert [r for r, _t in notice].count("system") == 1
    assert len(runtime.inbox.read()) == 1
    procs.beat()  # the supervisor brings the Teller back
    wait_history(runtime, lambda h: ("assistant", "Sorry for the wait: hello!") in h,
                 timeout=60, message="the kept message answered")
    wait_for(lambda: runtime.inbox.read() == [], timeout=10,
             message="the answered message acknowledged")
    assert sum("kept" in t for r, t in history(runtime) if r == "system") == 1
    print(f"answered after {time.monotonic() - began:.1f} s")  # noqa: T201


def test_a_glob_with_double_star_is_accepted_and_evaluated(stack, llm):
    from mimikit.agents.common import registry
    from mimikit.lifecycle.submit import submit
    from mimikit.models import utcnow
    from mimikit.supervisor.tick import fire_watched
    from mimikit.tools.context import ToolContext

    work = stack.settings.work_dir
    (work / "reports" / "2026").mkdir(parents=True)
    ctx = ToolContext(runtime=stack, role="planner", trace_id="t1")
    for pattern in ("reports/**.md", "src/**/*.ts", "*.log"):
        made = registry().call("planner", "schedule", json.dumps(
            {"prompt": f"look at {pattern}", "type": "conditional",
             "condition": {"type": "file_changed", "params": {"path": pattern}}}), ctx)
        assert made.ok, made.content
    refused = registry().call("planner", "schedule", json.dumps(
        {"prompt": "x", "type": "conditional",
         "condition": {"type": "file_changed", "params": {"path": "reports/[abc.md"}}}), ctx)
    assert not refused.ok and "never closes" in refused.content
    triggers = submit(stack, list(ctx.staged))
    assert fire_watched(stack, utcnow()) == []
    (work / "reports" / "2026" / "june.md").write_text("new")
    (work / "app.log").write_text("x")
    fired = fire_watched(stack, utcnow())
    assert set(fired) == {triggers[0].id, triggers[2].id}
    assert not any(t.status == "failed" for t in stack.tasks.by_id([t.id for t in triggers]))


def test_a_teller_answer_in_chinese_is_understood(stack, llm):
    call = json.dumps({"name": "remember", "arguments": {"content": "用户喜欢喝绿茶。",
                                                          "longTerm": True}},
                      ensure_ascii=False)
    llm.script("teller", text(f"好的，我记住了。\n<tool_call>\n{call}\n</tool_call>"),
               tool_call("reply", text="记住了：你喜欢绿茶。"))
    post_input(stack, "记住我喜欢喝绿茶")
    wait_history(stack, lambda h: ("assistant", "记住了：你喜欢绿茶。") in h, message="reply")
    memory = (stack.settings.state_dir / "memory.md").read_text(encoding="utf-8")
    assert "绿茶" in memory


def test_tools_are_offered_with_tool_choice_and_a_server_refusing_it_is_asked_without(
        stack, llm):
    from llm_server import error

    def picky(body):
        if "tool_choice" in body:
            return error(400, {"error": {"message": "tool_choice is not supported"}})
        return tool_call("submit_result", status="done", resultType="text",
                         result={"text": "planned without it"})

    llm.script("teller", tool_calls([("delegate", {"prompt": "Plan it"}),
                                     ("reply", {"text": "Planning."})]))
    llm.default("planner", picky)
    post_input(stack, "plan it")
    _planned(stack, llm)
    sent = [request.get("tool_choice") for request in llm.requests_for("planner")]
    assert sent == ["required", "auto", None]  # "auto" refused too: then nothing is sent


def test_a_server_failing_on_a_required_call_is_asked_with_auto_from_then_on(stack, llm):
    from llm_server import error

    def particular(body):  # llama-cpp-python's function calling takes "auto" or one function
        if body.get("tool_choice") == "required":
            return error(500, {"error": {"message": "AssertionError"}})
        return tool_call("submit_result", status="done", resultType="text",
                         result={"text": f"fine with {body.get('tool_choice')}"})

    llm.script("teller", tool_calls([("delegate", {"prompt": "Plan A"}),
                                     ("reply", {"text": "Planning A."})]),
               tool_calls([("delegate", {"prompt": "Plan B"}),
                           ("reply", {"text": "Planning B."})]))
    llm.default("teller", tool_call("reply", text="Planned."))
    llm.default("planner", particular)
    post_input(stack, "plan A")
    _planned(stack, llm)
    post_input(stack, "plan B")
    wait_for(lambda: len(_planned(stack, llm)) == 2, message="the second Planner task")
    sent = [request.get("tool_choice") for request in llm.requests_for("planner")]
    assert sent == ["required", "auto", "auto"]  # learned once, at no retry's cost


def test_a_slow_answer_streams_only_what_the_person_reads(stack, llm):
    from llm_server import streamed

    written = "Let me check. <tool_call>" + json.dumps(
        {"name": "reply", "arguments": {"text": "It is sunny."}}) + "</tool_call>"
    llm.script("teller", streamed(text(written), pause=0.02, chunk_chars=4))
    cursor = stack.redis.xrevrange(stack.keys.events, count=1)
    since = cursor[0][0].decode() if cursor else "0"
    post_input(stack, "weather?")
    wait_history(stack, lambda h: ("assistant", "It is sunny.") in h, message="the reply")
    shown = [json.loads(data)["text"] for _id, event, data in stack.events.read(since, 10)
             if event == "reply"]
    assert not any("tool_call" in t or "{" in t for t in shown), shown


def test_a_stream_that_runs_away_is_cut_at_the_deadline(runtime, procs, llm, monkeypatch):
    from llm_server import streamed

    from mimikit.store.runtime import reset_runtime

    monkeypatch.setenv("MIMIKIT_LLM_BASE_URL", llm.url)
    monkeypatch.setenv("MIMIKIT_TELLER_TIMEOUT", "4")
    reset_runtime()
    procs.worker(queues="teller,planner,supervisor", concurrency=2, name="agents")
    llm.script("teller", streamed(text("la " * 4000), pause=0.05, chunk_chars=3))
    llm.default("teller", tool_call("reply", text="Hello."))
    procs.beat()  # the supervisor brings back a pass the model never answered
    began = time.monotonic()
    post_input(runtime, "hi")
    wait_history(runtime, lambda h: ("assistant", "Hello.") in h, timeout=40, message="reply")
    first = llm.arrivals_for("teller")
    # cut at its deadline (4 s), then brought back by the supervisor: not after the 60 s the
    # whole answer would take
    assert first[1] - first[0] < 4 + 15, "the runaway answer outlived its deadline"
    assert not any(t.startswith("la la") for _r, t in history(runtime))
    print(f"runaway cut after {first[1] - first[0]:.1f} s; answered in "  # noqa: T201
          f"{time.monotonic() - began:.1f} s")


def test_a_planner_silent_after_its_calls_is_done_and_a_schedule_without_type_is_read(
        stack, llm):
    llm.script("teller", tool_call("delegate", prompt="Every day at 9am remind me to drink water"),
               tool_call("reply", text="I'll set that up."))
    llm.script("planner", tool_call("schedule", prompt="Remind the user to drink water",
                                    cron="0 9 * * *"),
               text(""), text(""), text(""))
    post_input(stack, "every day at 9am remind me to drink water")
    planned = _planned(stack, llm)
    assert [t.schedule.cron for t in stack.triggers.all() if t.type == "recurring"] == ["0 9 * * *"]
    summary = stack.tasks.results_by_id([planned[0].id])[planned[0].id].result["text"]
    assert "schedule" in summary
    assert len(llm.requests_for("planner")) == 4  # the call, then silence corrected twice


def test_a_planner_failing_with_the_correction_it_was_given_as_its_error_is_refused(stack, llm):
    llm.script("teller", tool_call("delegate", prompt="Remind me daily to drink water"),
               tool_call("reply", text="On it."))
    llm.script("planner", text("1. **Delegate** the reminder to run every day at 9am."),
               tool_call("submit_result", status="failed", resultType="text",
                         error="You answered in plain text, and only a call of 'submit_result' "
                               "ends this run."),
               tool_call("submit_result", status="done", resultType="text",
                         result={"text": "Could not plan it."}))
    post_input(stack, "remind me daily to drink water")
    assert _planned(stack, llm)
    refused = llm.requests_for("planner")[2]["messages"][-1]["content"]
    assert "only repeats the corrections you were given" in refused


def test_a_worker_failing_with_its_tools_error_as_its_error_is_not_refused(stack, llm):
    """A tool's error says what went wrong with the work ("backup.txt already exists"); only
    a correction of the model's answers is no error of the work."""
    (stack.settings.work_dir / "backup.txt").write_text("eggs\n")
    llm.script("worker", tool_call("write_file", path="backup.txt", content="milk\n"))
    llm.default("worker", lambda body: tool_call(
        "submit_result", status="failed", resultType="text",
        error=body["messages"][-1]["content"].removeprefix("error: ")))
    task, = submit(stack, [Task(role="worker", prompt="Write milk into backup.txt.")])
    wait_for(lambda: stack.tasks.result(task.id), message="the Worker's result")
    result = stack.tasks.result(task.id)
    assert result.status == "failed" and "already exists" in result.error
    assert len(llm.requests_for("worker")) == 2


def test_a_planner_question_that_only_repeats_the_request_is_refused(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "create notes.txt with hello"}),
                                     ("reply", {"text": "On it."})]))
    llm.script("planner",
               tool_call("submit_result", status="needs_input", resultType="text", result={},
                         question="Create a file notes.txt containing the word hello."),
               tool_call("submit_result", status="needs_input", resultType="text", result={},
                         question="Should notes.txt end with a newline?"))
    post_input(stack, "Create a file notes.txt containing the word hello.")
    wait_for(lambda: len(llm.requests_for("planner")) >= 2, message="the Planner asked again")
    refused = llm.requests_for("planner")[1]["messages"][-1]["content"]
    assert "only repeats the request" in refused
    asked = wait_for(lambda: [t for t in stack.tasks.with_status("done")
                              if t.role == "planner"], message="the Planner's real question")
    result = stack.tasks.results_by_id([asked[0].id])[asked[0].id]
    assert result.question == "Should notes.txt end with a newline?"


def test_a_planner_question_the_teller_only_relays_in_words_is_asked_all_the_same(stack, llm):
    llm.script("teller", tool_calls([("delegate", {"prompt": "Deploy the app"}),
                                     ("reply", {"text": "Planning."})]),
               tool_call("reply", text="The Planner wants to know where to deploy."))
    llm.script("planner", tool_call("submit_result", status="needs_input", resultType="text",
                                    result={"text": "two targets"},
                                    question="Staging or production?"))
    post_input(stack, "deploy")
    pending = wait_for(stack.conversation.question, timeout=30, message="the question")
    planner = next(t for t in stack.tasks.with_status("done") if t.role == "planner")
    assert (pending.question, pending.taskId) == ("Staging or production?", planner.id)
    told = ["The Planner wants to know where to deploy.", "Staging or production?"]
    wait_for(lambda: _replies(stack)[-2:] == told, message="the question told after the reply")


@pytest.mark.parametrize(("answer", "result"), [
    ('```\n{"name": "submit_result", "arguments": {"status": "done", "resultType": "text", '
     '"result": {"text": "hi"}}\n```', {"text": "hi"}),  # its last brace missing, in a fence
], ids=["last_brace_missing_in_a_closed_fence"])
def test_a_planner_result_written_as_text_ends_its_run_at_once(stack, llm, answer, result):
    llm.script("teller", tool_call("delegate", prompt="Say hi"), tool_call("reply", text="On it."))
    llm.script("planner", text(answer))
    post_input(stack, "say hi")
    planned = _planned(stack, llm)
    assert stack.tasks.results_by_id([planned[0].id])[planned[0].id].result == result
    assert len(llm.requests_for("planner")) == 1


def test_a_planner_silent_without_any_call_done_still_fails(stack, llm):
    llm.script("teller", tool_call("delegate", prompt="Summarize the logs"),
               tool_call("reply", text="On it."))
    llm.default("planner", text(""))
    post_input(stack, "summarize the logs")
    failed = wait_for(lambda: [t for t in stack.tasks.with_status("failed")
                               if t.role == "planner"], timeout=30, message="the Planner to fail")
    assert "empty" in stack.tasks.results_by_id([failed[0].id])[failed[0].id].error


def test_a_delegate_without_a_word_after_it_is_answered_with_what_was_handed_over(stack, llm):
    llm.script("teller", tool_call("delegate", prompt="Create notes.txt"), text(""))
    llm.default("teller", text(""))
    post_input(stack, "create notes.txt")
    wait_history(stack, lambda h: ("assistant", "On it: Create notes.txt") in h,
                 message="the reply saying what was handed over")
    assert len(_planned(stack, llm)) == 1
    assert llm.requests_for("teller")[1]["messages"][-1]["role"] == "tool"  # not corrected
    assert not any(role == "system" for role, _t in history(stack))


@pytest.mark.parametrize("echo", [
    "- [2026-11-25T03:21:15.713507Z] delegate: Create notes.txt <tool_response>\n\n- [2026-11",
    '[2026-11-25 03:21] user: create notes.txt<|im_end|>'])
def test_lines_the_model_copies_from_its_prompt_are_never_shown(stack, llm, echo):
    llm.script("teller", tool_call("delegate", prompt="Create notes.txt"), text(echo))
    post_input(stack, "create notes.txt")
    wait_history(stack, lambda h: ("assistant", "planned") in h, message="the plan's words")
    assert _replies(stack) == ["On it: Create notes.txt", "planned"]


def test_a_piece_copied_from_what_the_model_was_told_goes_whole_a_file_name_with_it():
    """A mark inside a word ends no piece: split at "groceries.txt", a report lost "txt is
    not in the work directory" as a copy and kept "groceries." and "txt (failed)"."""
    from mimikit.llm.echoes import without_echoes

    told = ["error: groceries.txt is not in the work directory, and this run made no call"]
    said = ("The task failed because groceries.txt already exists. groceries.txt is not in the "
            "work directory, and this run made no call. It holds 3.5 KB.")
    assert without_echoes(said, told) == ("The task failed because groceries.txt already "
                                          "exists. It holds 3.5 KB.")


def test_a_reply_written_as_a_transcript_line_keeps_only_its_text(stack, llm):
    llm.script("teller", tool_call("reply", text="[2026-11-25 03:21] assistant: Hello there!\n"
                                                 "[2026-11-25 03:21] user: hi"),
               tool_call("reply", text="[03:22] assistant: Hi again!\n[03:22] user: hi\n"
                                       "[10:00] is when the standup starts."))
    post_input(stack, "hi")
    wait_history(stack, lambda h: ("assistant", "Hello there!") in h, message="the reply")
    post_input(stack, "hi")
    wait_history(stack, lambda h: any(t.startswith("Hi again!") for r, t in h
                                      if r == "assistant"), message="the second reply")
    assert _replies(stack) == ["Hello there!",
                               "Hi again!\n\n[10:00] is when the standup starts."]


def test_a_call_of_a_known_tool_that_does_not_read_is_corrected_and_never_shown(stack, llm):
    broken = ('```json\n{\n  "name": "ask_user",\n  "arguments": {\n    "question": "When?",\n'
              '    "options": ["items": ["cron", "runAt"]]\n  }\n}\n```')
    llm.script("teller", text(broken), tool_call("reply", text="Every day at 9am, then."))
    post_input(stack, "remind me to drink water")
    wait_history(stack, lambda h: any(role == "assistant" for role, _t in h), message="a reply")
    assert _replies(stack) == ["Every day at 9am, then."]
    corrected = llm.requests_for("teller")[1]["messages"][-1]["content"]
    assert "ask_user" in corrected and ("could not be read" in corrected
                                        or "invalid arguments" in corrected)


def test_an_answer_fenced_as_code_stays_fenced(stack, llm):
    llm.script("teller", text("```bash\nls -la\n```"))
    post_input(stack, "how do I list files?")
    wait_history(stack, lambda h: any(role == "assistant" for role, _t in h), message="a reply")
    assert _replies(stack) == ["```bash\nls -la\n```"]


def test_a_reply_call_holding_only_copied_lines_is_refused_and_written_again(stack, llm):
    llm.script("teller", tool_call("reply", text="- [2026-11-25T03:21:15Z] user: hi"),
               tool_call("reply", text="Hi! What can I do for you?"))
    post_input(stack, "hi")
    wait_history(stack, lambda h: ("assistant", "Hi! What can I do for you?") in h,
                 message="the reply written again")
    assert "copied" in llm.requests_for("teller")[1]["messages"][-1]["content"]
    assert _replies(stack) == ["Hi! What can I do for you?"]


def test_the_runtimes_corrections_copied_into_a_reply_are_never_shown(stack, llm):
    llm.script("teller", text(""), text(
        "I'm sorry, I have nothing to report. Call 'reply' with your answer to the user."))
    post_input(stack, "hello!")
    wait_history(stack, lambda h: any(role == "assistant" for role, _t in h), message="a reply")
    assert _replies(stack) == [
        "I'm sorry, I have nothing to report."]


def test_a_tools_error_copied_into_a_question_is_refused_and_asked_again(stack, llm):
    llm.script("teller", tool_call("ask_user", source="user"),
               tool_call("ask_user", question="Field required; source: Extra inputs are not "
                                              "permitted"),
               tool_call("ask_user", question="What should notes.txt say?",
                         default="hello", options=["hi", "bye"]))
    post_input(stack, "create notes.txt")
    question = wait_for(stack.conversation.question, timeout=30, message="the question")
    assert question.question == "What should notes.txt say?"
    assert question.options == ["hi", "bye", "hello"]  # its default may be chosen too
    second = llm.requests_for("teller")[2]["messages"][-2]["content"]  # then: reply, forced
    assert "copied" in second and "errors you were told" in second
    wait_history(stack, lambda h: any(role == "assistant" for role, _t in h),
                 message="the question in the history")
    assert _replies(stack) == [
        "What should notes.txt say?\n- hi\n- bye\n- hello"]


def test_a_question_that_only_repeats_the_users_message_is_refused(stack, llm):
    llm.script("teller", tool_call("ask_user", question="What is the capital of France?"),
               tool_call("reply", text="Paris."))
    post_input(stack, "What is the capital of France?")
    wait_history(stack, lambda h: ("assistant", "Paris.") in h, message="the answer")
    assert stack.conversation.question() is None
    assert "only repeats the user's own message" in \
        llm.requests_for("teller")[1]["messages"][-1]["content"]


def test_a_question_reusing_some_of_the_users_words_is_asked(stack, llm):
    llm.script("teller", tool_call("ask_user", question="Staging or production?"))
    post_input(stack, "Deploy the app to staging or production, whichever is free")
    question = wait_for(stack.conversation.question, timeout=30, message="the question")
    assert question.question == "Staging or production?"


def test_a_teller_whose_calls_keep_failing_is_asked_for_a_reply_forced(stack, llm):
    llm.script("teller", tool_call("ask_user", source="user"),
               tool_call("ask_user", question="What should notes.txt say?", source="user"),
               tool_call("reply", text="What should notes.txt say?"), text(""))
    llm.default("teller", tool_call("ask_user", source="user"))
    post_input(stack, "create notes.txt")
    wait_history(stack, lambda h: ("assistant", "What should notes.txt say?") in h,
                 message="the reply, forced after two failed calls")
    third = llm.requests_for("teller")[2]
    assert third["tool_choice"] == {"type": "function", "function": {"name": "reply"}}
    assert [tool["function"]["name"] for tool in third["tools"]] == ["reply"]
    assert "failed 2 times in a row" in third["messages"][-1]["content"]


def test_a_reply_quoting_the_users_words_after_a_correction_keeps_them(stack, llm):
    llm.script("teller", tool_call("reply", text="I'll create notes.txt for you."),
               tool_call("delegate", prompt="Create notes.txt"),
               tool_call("reply", text="I'll create notes.txt for you."))
    post_input(stack, "create notes.txt")
    wait_history(stack, lambda h: ("assistant", "I'll create notes.txt for you.") in h,
                 message="the reply, kept though the correction quoted it")


def test_an_answer_repeating_one_line_is_ended_where_the_loop_began(stack, llm):
    from llm_server import streamed

    call = json.dumps({"name": "reply", "arguments": {"text": "Hello."}})
    llm.script("teller", streamed(text(f"<tools>\n{call}\n</tools>\n" + "```\n" * 2000),
                                  pause=0.02, chunk_chars=4))  # 40 s if read to its end
    began = time.monotonic()
    post_input(stack, "hi")
    wait_history(stack, lambda h: ("assistant", "Hello.") in h, timeout=30, message="the reply")
    assert time.monotonic() - began < 15
    assert len(llm.requests_for("teller")) <= 2  # the answer, and whether more follows


def test_an_answer_to_a_schema_saying_one_passage_over_and_over_ends_after_its_first_copy(
        llamacpp, stack, llm):
    """The 0.5B model wrote a Worker's error of 19,000 characters, one 374-character passage
    again and again, until its 4,096 tokens ran out (six minutes), then did it again when
    asked for a shorter answer."""
    from llm_server import streamed, turn

    passage = "Please check the file path and make sure that the file is there before it runs. "
    llm.script("worker", streamed(turn(submit_result={
        "status": "failed", "error": "countdown.py is not there. " + passage * 300}),
        pause=0.01, chunk_chars=16))  # 25,000 characters: 16 s if read to its end
    task = submit(stack, [Task(role="worker", prompt="Run countdown.py")])[0]
    began = time.monotonic()
    failed = wait_for(lambda: stack.tasks.require(task.id).status == "failed", timeout=30,
                      message="the Worker's failed result")
    assert failed and time.monotonic() - began < 10
    error = stack.tasks.results_by_id([task.id])[task.id].error
    assert error == "countdown.py is not there. " + passage.strip()
    assert len(llm.requests_for("worker")) == 1


def test_an_answer_writing_one_call_over_and_over_ends_at_the_third_and_runs_it_once(stack, llm):
    from llm_server import streamed

    call = ('```json\n{\n  "function": "delegate",\n  "arguments": {\n    "prompt": '
            '"Create notes.txt"\n  }\n}\n```\n\n')
    llm.script("teller", streamed(text(call * 200), pause=0.02, chunk_chars=8),  # 80 s in all
               tool_call("reply", text="On it."))
    began = time.monotonic()
    post_input(stack, "create notes.txt")
    wait_history(stack, lambda h: ("assistant", "On it.") in h, timeout=30, message="the reply")
    assert time.monotonic() - began < 20
    assert len(_planned(stack, llm)) == 1
    results = [m for m in llm.requests_for("teller")[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 1  # the call once, not once per copy


def test_a_reply_that_remembers_with_its_call_is_not_corrected(stack, llm):
    llm.script("teller", tool_calls([("remember", {"content": "likes green tea"}),
                                     ("reply", {"text": "Noted, I'll remember that."})]))
    post_input(stack, "I like green tea")
    wait_history(stack, lambda h: ("assistant", "Noted, I'll remember that.") in h,
                 message="the reply")
    assert len(llm.requests_for("teller")) == 1


def test_a_server_naming_the_call_in_every_chunk_and_refusing_null_content_is_understood(
        stack, llm):
    from llm_server import error, name_in_every_chunk

    def strict(body):  # llama-cpp-python: every message needs its content as a string
        if any(m.get("content") is None for m in body["messages"]):
            return error(500, {"detail": "messages.2.content: Input should be a valid string"})
        if len(body["messages"]) == 2:
            return name_in_every_chunk(tool_call("delegate", prompt="Create notes.txt"))
        return name_in_every_chunk(tool_call("reply", text="Creating notes.txt."))

    llm.default("teller", strict)
    post_input(stack, "create notes.txt")
    wait_history(stack, lambda h: ("assistant", "Creating notes.txt.") in h, message="the reply")
    assert _planned(stack, llm)[0].prompt.startswith("Create notes.txt")
    second = llm.requests_for("teller")[1]["messages"]
    assert second[2]["content"] == "" and second[2]["tool_calls"][0]["function"]["name"] == \
        "delegate"


def test_a_server_failing_streamed_requests_is_asked_unstreamed_from_then_on(stack, llm):
    from llm_server import error

    def no_streamed_calls(body):  # llama-cpp-python cannot stream a call its model chose
        if body.get("stream"):
            return error(500, {"detail": "Automatic streaming tool choice is not supported"})
        return tool_call("reply", text="Hello, unstreamed.")

    llm.default("teller", no_streamed_calls)
    post_input(stack, "hi")
    wait_history(stack, lambda h: ("assistant", "Hello, unstreamed.") in h, message="reply")
    post_input(stack, "hi again")
    wait_history(stack, lambda h: [t for r, t in h if r == "assistant"] == [
        "Hello, unstreamed."] * 2, message="the second reply")
    sent = [bool(r.get("stream")) for r in llm.requests_for("teller")]
    assert sent[:2] == [True, False] and not any(sent[2:])  # learned once


def test_the_teller_is_told_the_weekday_before_the_inputs(stack, llm):
    days = {datetime.now(stack.settings.tz).strftime("%A")}
    llm.script("teller", tool_call("reply", text="It is the weekend."))
    post_input(stack, "what day is it?")
    wait_history(stack, lambda h: ("assistant", "It is the weekend.") in h, message="reply")
    days.add(datetime.now(stack.settings.tz).strftime("%A"))  # midnight may have passed
    shown = llm.requests_for("teller")[0]["messages"][-1]["content"]
    line, _, inputs = shown[shown.index("Today is "):].partition("\n\n")  # after the context
    assert inputs.startswith("## Pending inputs\n") and "what day is it?" in inputs
    assert line.split(" ")[2] in days  # "Today is Saturday 2026-11-28; the time is ..."


def test_a_person_who_writes_chinese_is_told_the_weekday_in_chinese(stack, llm):
    days = {"一二三四五六日"[datetime.now(stack.settings.tz).weekday()]}
    llm.script("teller", tool_call("reply", text="今天是周末。"))
    post_input(stack, "今天是星期几？")
    wait_history(stack, lambda h: ("assistant", "今天是周末。") in h, message="reply")
    days.add("一二三四五六日"[datetime.now(stack.settings.tz).weekday()])
    shown = llm.requests_for("teller")[0]["messages"][-1]["content"]
    line, _, inputs = shown[shown.index("今天是 "):].partition("\n\n")  # after the context
    assert inputs.startswith("## Pending inputs\n") and "Today" not in shown
    assert shown.endswith("\n\n(The user writes in Chinese: reply in Chinese.)")
    assert line.split()[2][2] in days  # "今天是 2026-11-29 星期日，现在是 ..."


def test_what_memory_recalls_is_shown_right_before_the_inputs_it_answers(stack, llm):
    (stack.settings.state_dir / "memory.md").write_text("我喜欢喝绿茶，记一下\n",
                                                        encoding="utf-8")
    llm.script("teller", tool_call("reply", text="你喜欢喝绿茶。"))
    post_input(stack, "我喜欢喝什么绿茶？")
    wait_history(stack, lambda h: ("assistant", "你喜欢喝绿茶。") in h, message="reply")
    shown = llm.requests_for("teller")[0]["messages"][-1]["content"]
    line, memory, inputs = shown[shown.index("今天是 "):].split("\n\n")[:3]
    assert memory == "## Memory\n[memory.md] 我喜欢喝绿茶，记一下"
    assert inputs.startswith("## Pending inputs\n") and shown.count("## Memory") == 1
    assert shown.index("## Work directory") < shown.index(line)  # the rest goes before


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Pacific/Pago_Pago"])
def test_the_time_line_gives_the_weekday_of_the_configured_zone(tmp_path, zone):
    from mimikit.agents.now import time_line
    from mimikit.config import Settings

    settings = Settings(state_dir=tmp_path / "state", work_dir=tmp_path, timezone=zone)
    before = datetime.now(settings.tz)
    line = time_line(settings)
    after = datetime.now(settings.tz)
    assert line.endswith(f"(time zone {zone}).")
    assert line.split()[2] in (f"{before:%A}", f"{after:%A}")
    assert line.split()[3] in (f"{before:%Y-%m-%d};", f"{after:%Y-%m-%d};")
    assert line.split()[7] in (f"{before:%H:%M}", f"{after:%H:%M}")
    hourly = time_line(settings, minute=False)  # a Planner's: it copied the minute shown
    assert hourly.split()[5:8] in (["hour", "is", f"{before:%H}"], ["hour", "is", f"{after:%H}"])
    assert hourly.endswith(f"(time zone {zone}).")
    moment = datetime(2026, 11, 30, 22, 35, tzinfo=settings.tz)  # one the caller keeps
    assert time_line(settings, minute=False, now=moment) == \
        f"Today is Monday 2026-11-30; the hour is 22 (time zone {zone})."
    assert time_line(settings, minute=False, now=moment, weekday=False) == \
        f"Today is 2026-11-30; the hour is 22 (time zone {zone})."  # a Planner's: no weekday
