"""A Worker's result told in its own words, where they are a report as they stand: no model call
for the report; one whose numbers, files or language its run does not bear out is the model's to
report (``agents.own_words``)."""

from __future__ import annotations

import json
import time

import pytest
from agent_helpers import history, post_input, user_prompt, wait_history
from llm_server import tool_call, tool_calls


def _hand_over(llm, request: str, task: str) -> None:
    llm.script("teller", tool_calls([("reply", {"text": "On it."}),
                                     ("delegate", {"prompt": request})]))
    llm.script("planner", tool_call("delegate", prompt=task),
               tool_call("submit_result", status="done", result={"text": "A worker will."}))


def _writes(llm, path: str, result: str) -> None:
    """A Worker run that writes "hello\n" into ``path`` and ends done with ``result``."""
    llm.script("worker", tool_call("write_file", path=path, content="hello\n"),
               tool_call("submit_result", status="done", result={"text": result}))


def _size_asked(stack, llm, result: str, report: str) -> None:
    """A file written and its size asked for, its Worker ending with ``result``; the model's
    report, where it is asked for one, is ``report``."""
    _hand_over(llm, asked := "write hello into notes.txt and tell me its size",
               "Write hello into notes.txt and report its size.")
    _writes(llm, "notes.txt", result)
    llm.default("teller", tool_call("reply", text=report))
    post_input(stack, asked)


def test_a_result_its_run_bears_out_is_told_as_it_is_without_a_model(stack, llm):
    _size_asked(stack, llm, "notes.txt holds hello: 6 bytes.", "The file notes.txt is 6 bytes.")
    wait_history(stack, lambda h: any(said.startswith("notes.txt holds hello: 6 bytes.")
                                      for _role, said in h),
                 message="the result, told")
    time.sleep(0.5)  # a model's report, had one been asked for, would be on its way
    assert len(llm.requests_for("teller")) == 1  # the message's pass; none for the report
    said = [text for role, text in history(stack) if role == "assistant"]
    assert said == ["On it.", 'notes.txt holds hello: 6 bytes. What its run did: wrote notes.txt '
                    '(6 bytes): "hello\\n"']
    assert (stack.settings.work_dir / "notes.txt").read_text() == "hello\n"


def test_a_number_its_run_never_showed_is_the_models_to_report(stack, llm):
    _size_asked(stack, llm, "notes.txt holds hello: 13 bytes.", "notes.txt was written: 6 bytes.")
    wait_history(stack, lambda h: ("assistant", "notes.txt was written: 6 bytes.") in h,
                 message="the model's report")
    report = user_prompt(llm.requests_for("teller")[1])
    assert "13 bytes" in report and "wrote notes.txt (6 bytes)" in report  # the run's account
    assert "notes.txt holds hello: 13 bytes." not in [text for _role, text in history(stack)]


@pytest.mark.parametrize(("asked", "path", "result", "report"), [
    # a file it names that is not there (it wrote another)
    ("write hello into notes.txt", "note.txt", "notes.txt holds hello.",
     "I wrote note.txt, not notes.txt."),
    # a result in another language than the request (the request, in the person's words, goes
    # with the Worker's task: ``planner.with_the_request``)
    ("把 hello 写进 notes.txt", "notes.txt", "notes.txt holds hello.", "notes.txt 已写好。"),
], ids=["a_file_not_there", "another_language"])
def test_a_result_its_run_does_not_bear_out_is_the_models_to_report(stack, llm, asked, path,
                                                                      result, report):
    _hand_over(llm, asked, "Write hello into notes.txt.")
    _writes(llm, path, result)
    # told once that notes.txt is not there where note.txt was made, it ends done again
    llm.default("worker", tool_call("submit_result", status="done", result={"text": result}))
    llm.default("teller", tool_call("reply", text=report))
    post_input(stack, asked)
    wait_history(stack, lambda h: ("assistant", report) in h, message="the model's report")
    assert len(llm.requests_for("teller")) == 2


def test_a_result_ending_in_a_files_lines_is_told_with_the_account_after_its_last_line(stack,
                                                                                     llm):
    (stack.settings.work_dir / "shopping.txt").write_text("eggs\nmilk\n")
    _hand_over(llm, "copy shopping.txt to backup.txt", "Copy shopping.txt to backup.txt.")
    llm.script("worker", tool_call("copy", path="shopping.txt", to="backup.txt"),
               tool_call("submit_result", status="done",
                         result={"text": "backup.txt holds eggs\nmilk\n."}))
    post_input(stack, "copy shopping.txt to backup.txt")
    told = wait_history(stack, lambda h: any(said.startswith("backup.txt holds")
                                             for _role, said in h), message="the result, told")
    assert "backup.txt holds eggs\nmilk. What its run did: copied shopping.txt to backup.txt " \
        "(shopping.txt stays)" in [said for _role, said in told]


def _answered_by_the_planner(llm, asked: str, answer: str) -> None:
    llm.script("teller", tool_calls([("reply", {"text": "On it."}),
                                     ("delegate", {"prompt": asked})]))
    llm.script("planner", tool_call("search_memory", query="editor"),
               tool_call("submit_result", status="done", result={"text": answer}))


@pytest.mark.parametrize(("asked", "answer"), [("which editor do I use?", "You use vim."),
                                               ("我用什么编辑器？", "你用 vim。")])
def test_a_planners_own_answer_is_the_reply(stack, llm, asked, answer):
    """Asked "我最喜欢什么运动？", the 1.5B Planner answered from Memory, and the Teller's
    model reported that answer as "任务已完成，你最喜欢什么运动？"."""
    _answered_by_the_planner(llm, asked, answer)
    llm.default("teller", tool_call("reply", text="The task was completed."))
    post_input(stack, asked)
    wait_history(stack, lambda h: ("assistant", answer) in h, message="the Planner's answer")
    time.sleep(0.5)  # a model's report, had one been asked for, would be on its way
    assert len(llm.requests_for("teller")) == 1
    assert ("assistant", "The task was completed.") not in history(stack)


def test_a_planners_answer_in_another_language_is_the_models_to_report(stack, llm):
    _answered_by_the_planner(llm, "我用什么编辑器？", "You use vim.")
    llm.default("teller", tool_call("reply", text="你用 vim。"))
    post_input(stack, "我用什么编辑器？")
    wait_history(stack, lambda h: ("assistant", "你用 vim。") in h, message="the model's report")
    assert len(llm.requests_for("teller")) == 2
    assert ("assistant", "You use vim.") not in history(stack)


def test_a_file_read_is_shown_with_its_size_and_told_with_it(stack, llm):
    """Asked "what's the size of dentist.txt?", the 1.5B model's Worker read the file's bare
    text and reported "dentist.txt holds 1 line."."""
    (stack.settings.work_dir / "dentist.txt").write_text("call the dentist")
    _hand_over(llm, "what's the size of dentist.txt?", "Report the size of dentist.txt.")
    llm.script("worker", tool_call("read_file", path="dentist.txt"),
               tool_call("submit_result", status="done",
                         result={"text": "dentist.txt is 16 bytes."}))
    post_input(stack, "what's the size of dentist.txt?")
    told = wait_history(stack, lambda h: any(said.startswith("dentist.txt is 16 bytes.")
                                             for _role, said in h), message="the result, told")
    assert "dentist.txt is 16 bytes. What its run did: read dentist.txt (16 bytes, 1 line)" in \
        [said for _role, said in told]
    shown = json.dumps(llm.requests_for("worker")[1]["messages"], ensure_ascii=False)
    assert '\\"bytes\\": 16' in shown and '\\"lines\\": 1' in shown and "call the dentist" in shown


def test_a_reply_that_only_says_the_message_again_is_not_posted(stack, llm):
    """The 1.5B Teller handed "我最喜欢什么运动？" over with that question as its reply."""
    llm.script("teller", tool_calls([("delegate", {"prompt": "我最喜欢什么运动？"}),
                                     ("reply", {"text": "我最喜欢什么运动？"})]))
    llm.script("planner", tool_call("submit_result", status="done", result={"text": "你喜欢游泳。"}))
    post_input(stack, "我最喜欢什么运动？")
    told = wait_history(stack, lambda h: ("assistant", "你喜欢游泳。") in h, message="the answer")
    assert [said for role, said in told if role == "assistant"][0] != "我最喜欢什么运动？"


def test_a_reply_that_says_the_message_again_with_other_marks_is_not_posted(stack, llm):
    """The 0.5B Teller handed "我最喜欢的运动是游泳，帮我记住" over with that and a "。" as its
    reply."""
    llm.script("teller", tool_calls([("delegate", {"prompt": "记住：我最喜欢的运动是游泳"}),
                                     ("reply", {"text": "我最喜欢的运动是游泳，帮我记住。"})]))
    llm.script("planner", tool_call("submit_result", status="done", result={"text": "记住了。"}))
    post_input(stack, "我最喜欢的运动是游泳，帮我记住")
    told = wait_history(stack, lambda h: ("assistant", "记住了。") in h, message="the answer")
    assert [said for role, said in told if role == "assistant"][0] == \
        "好的，这就去办：记住：我最喜欢的运动是游泳"


def test_a_short_report_naming_none_of_its_results_files_is_told_in_the_runtimes_words(stack,
                                                                                      llm):
    """Asked "我最喜欢什么运动？", the 0.5B model's Worker wrote favorite_activity.txt of hobbies
    it made up, and its report was "任务完成: 我最喜欢什么运动？": the person never learned what
    was done. A report, however short, that names none of the files its results name and no
    number is the results told as they are, with what the run did."""
    asked = "我最喜欢什么运动？"
    _hand_over(llm, asked, asked)
    result = "favorite_activity.txt holds reading books."
    llm.script("worker", tool_call("write_file", path="favorite_activity.txt",
                                   content="I love reading books.\n"),
               tool_call("submit_result", status="done", result={"text": result}))
    llm.default("teller", tool_call("reply", text="任务完成: 我最喜欢什么运动？"))
    post_input(stack, asked)
    wait_history(stack, lambda h: any(said.startswith(result) for _role, said in h),
                 message="the result, told")
    told = [said for role, said in history(stack) if said.startswith(result)]
    assert "What its run did: wrote favorite_activity.txt (22 bytes)" in told[0]
    assert len(llm.requests_for("teller")) == 2  # the model was asked, and its words left out
    assert "任务完成: 我最喜欢什么运动？" not in [said for _role, said in history(stack)]
