"""A Worker's ``done`` for a file its task names, checked in the work directory: a file that
was not there when the run began, is not there at the end, in a run that wrote nothing and
ran no command that succeeded, is never reported as made (real stack, scripted model). A
Worker that made no call at all for files its task or its result names that are not there is
told so once, then left to its words: the report says it made none, and which of those files
are not there. One that wrote a script and ran nothing is told once that it never ran it, and its report
says so. The
Worker is shown, before its first step, the paths its task names that are in the work
directory. A ``done`` whose result is word for word one of the examples the Worker was
shown, sharing no word with its task, ends failed. One whose result gives a number that
neither its task nor its calls nor their results hold keeps none of the sentences that give
it; one that ends failed right after its own command or call failed is told once to fix it,
and one whose result says nothing of what its last call showed is sent back once."""

from __future__ import annotations

import json

import pytest
from agent_helpers import history, post_input
from llm_server import turn
from processes import wait_for

from mimikit.models import Task
from mimikit.tools.unseen_facts import LEFT_OUT, held_to_seen, says_nothing_of, shown_by
from mimikit.workspace.local import Workspace
from mimikit.workspace.named import named_paths, state_lines

DONE = turn(submit_result={"status": "done", "result": {"text": "fib.py prints 0 1 1 2 3."}})


def test_the_files_a_task_names_are_read_from_its_words():
    assert named_paths("Create notes/todo.md and fib.py, then run ./build.sh; see "
                       "https://x.org/a.html, e.g. os.path.join, ask me@mail.com.") == [
        "notes/todo.md", "fib.py", "build.sh"]
    assert named_paths("创建文件notes.txt，内容是 hello，然后告诉我 notes.txt 的大小") == [
        "notes.txt"]
    assert named_paths("version 2.5.1, i.e. the newest; see ~/x.txt or ../y.txt") == []


def test_a_worker_is_told_which_paths_its_task_names_are_there(tmp_path):
    (tmp_path / "tasks.md").write_text("buy milk\ncall mom\npay rent")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "photos.d").mkdir()
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "keys.txt").write_text("secret")
    workspace = Workspace(tmp_path, private=(tmp_path / "state",))
    assert state_lines(workspace, "Add 'walk the dog' to tasks.md, copy empty.txt into "
                                  "photos.d, write new.py, read state/keys.txt or ../x.txt") == [
        "tasks.md: exists (3 lines)", "empty.txt: exists (empty)", "photos.d: a folder"]


def _request(stack, llm, prompt: str) -> None:
    llm.script("teller", turn(delegate=True, remember=False, reply="On it."))
    llm.script("planner", turn(delegate={"prompt": prompt},
                               submit_result={"status": "done", "result": {"text": "Planned."}}))
    # each report its own words: a report that only says an earlier one again is a copy
    llm.default("teller", turn(reply=f"Reported: {prompt}"))
    post_input(stack, prompt)


def _worker(stack):
    return wait_for(lambda: [t for t in stack.tasks.with_status("done", "failed")
                             if t.role == "worker"], message="the Worker task")[0]


def _reported(stack, times: int) -> None:
    """Wait for the ``times``-th report: the next request's scripted turn is then its own."""
    wait_for(lambda: sum(t.startswith("Reported: ") for r, t in history(stack)
                         if r == "assistant") >= times, message=f"report {times}")


def _told(stack, llm, reply: str, asked: int) -> None:
    """Wait for ``reply``, a result told in its own words with its run's account, and check
    that the Teller's model was asked ``asked`` times in all: none of them for it."""
    wait_for(lambda: ("assistant", reply) in history(stack), message=f"the reply {reply!r}")
    assert len(llm.requests_for("teller")) == asked


def test_a_worker_that_ran_a_file_it_never_wrote_is_told_and_then_writes_it(
        llamacpp, stack, llm):
    llm.script("worker", turn(shell={"command": "python3 fib.py"}), DONE,
               turn(write_file={"path": "fib.py", "content": "print(0, 1, 1, 2, 3)"}),
               turn(shell={"command": "python3 fib.py"}), DONE)
    _request(stack, llm, "Write fib.py that prints the first Fibonacci numbers and run it.")
    worker = _worker(stack)
    assert worker.status == "done"
    assert (stack.settings.work_dir / "fib.py").exists()
    told = llm.requests_for("worker")[2]["messages"][-1]["content"]
    assert "fib.py is not in the work directory" in told
    assert len(llm.requests_for("worker")) == 5


def test_a_worker_that_wrote_a_script_and_never_ran_it_is_told_once(llamacpp, stack, llm):
    """The 0.5B model reported "hello.py printed 22 bytes" of a script it wrote and never
    ran. Told once, it runs it; a second ``done`` stands (a task may ask for the file alone),
    without the numbers that no command printed, and its report says that it never ran it."""
    written = turn(write_file={"path": "hello.py", "content": "print('Hello')\n"})
    printed = turn(submit_result={"status": "done", "result": {"text": "hello.py printed Hello."}})
    llm.script("worker", written, printed, turn(shell={"command": "python3 hello.py"}), printed)
    _request(stack, llm, "Write hello.py that prints Hello and run it.")
    assert _worker(stack).status == "done"
    told = llm.requests_for("worker")[2]["messages"][-1]["content"]
    assert "this run never ran hello.py" in told
    assert len(llm.requests_for("worker")) == 4
    wait_for(lambda: any(said.startswith("hello.py printed Hello.") for who, said in
                         history(stack) if who == "assistant"), message="the first report")
    added = turn(submit_result={"status": "done", "result": {
        "text": "add.py is written. add.py printed 7."}})  # no command printed 7: left out
    llm.script("worker", turn(write_file={"path": "add.py", "content": "print(1 + 1)\n"}),
               added, added)
    _request(stack, llm, "Write add.py that adds 1 and 1.")
    wait_for(lambda: len([t for t in stack.tasks.with_status("done") if t.role == "worker"])
             == 2, message="the second Worker task done")
    assert len(llm.requests_for("worker")) == 7  # told once; its second done stands
    # and the person hears that it never ran, whatever its result says
    wait_for(lambda: ("assistant", 'add.py is written. What its run did: wrote add.py (13 bytes): '
                      '"print(1 + 1)\\n"; never ran add.py') in history(stack),
             message="the second report")


def test_a_script_read_and_not_run_keeps_the_numbers_its_result_gives(llamacpp, stack, llm):
    """A task may ask what a script does without asking to run it: a run that was never told it
    did not run it keeps its words."""
    (stack.settings.work_dir / "fib.py").write_text("for n in range(10):\n    print(n)\n")
    llm.script("worker", turn(read_file={"path": "fib.py"}), turn(submit_result={
        "status": "done", "result": {"text": "fib.py prints 10 numbers."}}))
    _request(stack, llm, "What does fib.py do?")
    worker = _worker(stack)
    assert stack.tasks.result(worker.id).result["text"] == "fib.py prints 10 numbers."
    assert len(llm.requests_for("worker")) == 2


def test_a_worker_that_made_another_file_than_its_task_names_is_told_once(llamacpp, stack,
                                                                          llm):
    """Asked for dentist.txt, the 0.5B model wrote dental.txt and reported it written. Told
    once, a second ``done`` stands (a task may name a file it does not ask for), and the
    person hears which file is not there."""
    written = turn(submit_result={"status": "done", "result": {"text": "It is written."}})
    llm.script("worker", turn(write_file={"path": "dental.txt", "content": "call the dentist"}),
               written, written)
    _request(stack, llm, "Create dentist.txt and write 'call the dentist' in it.")
    assert _worker(stack).status == "done"
    told = llm.requests_for("worker")[2]["messages"][-1]["content"]
    assert "dentist.txt is not in the work directory, though the task names it" in told
    wait_for(lambda: any(said.endswith('wrote dental.txt (16 bytes): "call the dentist"; '
                                       "dentist.txt is not in the work directory")
                         for who, said in history(stack) if who == "assistant"),
             message="the report, with the file that is not there")
    llm.script("worker", turn(write_file={"path": "plumbr.txt", "content": "call the plumber"}),
               written, turn(rename={"path": "plumbr.txt", "to": "plumber.txt"}), written)
    _request(stack, llm, "Create plumber.txt and write 'call the plumber' in it.")
    reported = wait_for(lambda: [said for who, said in history(stack) if who == "assistant"
                                 and "renamed plumbr.txt to plumber.txt" in said],
                        message="the second report")  # told once, it renamed what it made
    told = llm.requests_for("worker")[-2]["messages"][-1]["content"]
    assert "this run made plumbr.txt instead" in told
    assert (stack.settings.work_dir / "plumber.txt").read_text() == "call the plumber"
    assert "not in the work directory" not in reported[0]


def test_a_folder_at_a_file_the_task_names_is_made_only_when_asked_twice(llamacpp, stack, llm):
    """The 1.5B model answered "make a file groceries.txt listing ..." with a folder of that
    name, and could then write no file there. Told once, it writes the file; a second call
    makes the folder (a folder may be named like a file: "photos.d")."""
    folder = turn(make_dir={"path": "./groceries.txt/"})
    llm.script("worker", folder,
               turn(write_file={"path": "groceries.txt", "content": "apples\nmilk\n"}), DONE,
               turn(read_file={"path": "groceries.txt"}), DONE)
    _request(stack, llm, "Make a file groceries.txt listing apples and milk.")
    assert _worker(stack).status == "done"
    told = llm.requests_for("worker")[1]["messages"][-1]["content"]
    assert "the task names groceries.txt as a file, not a folder" in told
    assert (stack.settings.work_dir / "groceries.txt").read_text() == "apples\nmilk\n"
    _told(stack, llm, f'{LEFT_OUT} What its run did: wrote groceries.txt (12 bytes): '
          '"apples\\nmilk\\n"; read groceries.txt (12 bytes, 2 lines)', 1)  # DONE's numbers
    # are an example's that no call showed: told once, it read the file, and they are left out
    llm.script("worker", turn(make_dir={"path": "photos.d"}), turn(make_dir={"path": "photos.d"}),
               turn(submit_result={"status": "done", "result": {"text": "photos.d is made."}}))
    _request(stack, llm, "Make a folder photos.d.")
    wait_for(lambda: len([t for t in stack.tasks.with_status("done") if t.role == "worker"])
             == 2, message="the second Worker task done")
    assert (stack.settings.work_dir / "photos.d").is_dir()


def test_a_worker_that_says_done_twice_for_a_file_it_never_made_ends_failed(
        llamacpp, stack, llm):
    llm.script("worker", turn(read_file={"path": "notes.txt"}))
    llm.default("worker", turn(submit_result={"status": "done",
                                              "result": {"text": "Created notes.txt."}}))
    _request(stack, llm, "Create notes.txt containing hello.")
    worker = _worker(stack)
    result = stack.tasks.result(worker.id)
    assert worker.status == "failed" and result is not None
    assert "notes.txt" in (result.error or "") and "never made" in (result.error or "")
    assert not (stack.settings.work_dir / "notes.txt").exists()
    assert len(llm.requests_for("worker")) == 3  # told once; the second done ends it
    report = wait_for(lambda: len(llm.requests_for("teller")) >= 2 and
                      llm.requests_for("teller")[1], message="the report")
    assert "never made" in report["messages"][1]["content"]


def test_a_done_stands_when_the_file_was_there_a_command_did_the_work_or_no_call_was_made(
        llamacpp, stack, llm):
    (stack.settings.work_dir / "data.csv").write_text("a,b\n1,2\n")
    llm.script("worker", turn(submit_result={"status": "done",
                                             "result": {"text": "data.csv has 2 lines."}}))
    _request(stack, llm, "Count the lines of data.csv.")
    assert _worker(stack).status == "done"
    assert len(llm.requests_for("worker")) == 1
    shown = llm.requests_for("worker")[0]["messages"][1]["content"]
    assert shown.endswith("## In the work directory now\n- data.csv: exists (2 lines)")
    _reported(stack, 1)
    llm.script("worker", turn(shell={"command": "true > install.log"}),
               turn(submit_result={"status": "done", "result": {"text": "Installed: install.log."}}))
    _request(stack, llm, "Install Node.js with the system's package manager.")
    wait_for(lambda: len([t for t in stack.tasks.with_status("done") if t.role == "worker"])
             == 2, message="the second Worker task done")
    assert len(llm.requests_for("worker")) == 3  # the command did the work: no question
    assert '"written": {"install.log": ""}' in \
        llm.requests_for("worker")[2]["messages"][-1]["content"]  # what it wrote, shown
    _told(stack, llm, 'Installed: install.log. What its run did: ran `true > install.log`: exit 0, no output, '
                      'wrote install.log: ""', 3)
    hi = turn(submit_result={"status": "done", "result": {"text": "Hi."}})
    llm.script("worker", hi, hi)
    _request(stack, llm, "Say hello from hello.py.")
    wait_for(lambda: len([t for t in stack.tasks.with_status("done") if t.role == "worker"])
             == 3, message="the third Worker task done")
    assert len(llm.requests_for("worker")) == 5  # no call: told once, then its words stand
    assert "hello.py is not in the work directory, and this run made no call" in \
        llm.requests_for("worker")[4]["messages"][-1]["content"]
    assert "## In the work directory now" not in llm.requests_for("worker")[3]["messages"][1][
        "content"]  # only the paths that are there are shown
    reports = wait_for(lambda: [body["messages"][1]["content"] for body in
                                llm.requests_for("teller") if "hello.py" in
                                body["messages"][1]["content"].partition("## Task results")[2]],
                       message="the report of the third")
    assert "what its run did: it made no call, and hello.py is not in the work directory" in \
        reports[-1]
    first = next(body["messages"][1]["content"] for body in llm.requests_for("teller")
                 if "data.csv has 2 lines" in body["messages"][1]["content"])
    assert "what its run did" not in first  # data.csv was there: its words stand alone


def test_a_file_a_result_names_that_no_call_made_is_told_once_and_reported_as_not_there(
        llamacpp, stack, llm):
    """The 0.5B model, asked which files the work directory holds, made no call and reported
    "a.txt is written: 2 bytes" (an example's words): it is told once, and its second such
    result keeps none of those words."""
    (stack.settings.work_dir / "data.csv").write_text("a,b\n")
    copied = turn(submit_result={"status": "done", "result": {
        "text": "a.txt is written: 2 bytes; data.csv is there."}})
    llm.script("worker", copied, copied)
    _request(stack, llm, "List the files in the work directory.")
    assert _worker(stack).status == "done"
    told = llm.requests_for("worker")[1]["messages"][-1]["content"]
    assert "a.txt is not in the work directory, and this run made no call" in told
    assert "data.csv" not in told.partition("Results:")[2]
    # its second done stands, without the example's words no call showed
    assert stack.tasks.result(_worker(stack).id).result["text"] == LEFT_OUT


# "3": a number the Worker's examples give, which no date or hour of its prompt writes (they
# are written 03) and no id holds; the model's own was "12", which a date in December writes.
# ``own``: what is kept gives no number its run's account does not, and is told as it is.
@pytest.mark.parametrize(("said", "kept", "own"), [
    ("fox.txt holds fox: 3 bytes.", LEFT_OUT, True),
    ("The folder holds countdown.py and fox.txt. fox.txt holds fox: 3 bytes.",
     "The folder holds countdown.py and fox.txt.", True),
    ("The folder holds 2 files: countdown.py and fox.txt.",  # 2: the listing's count
     "The folder holds 2 files: countdown.py and fox.txt.", False),
    ("The folder holds countdown.py and fox.txt; 17 and 5 make 22.",  # no example's numbers
     "The folder holds countdown.py and fox.txt; 17 and 5 make 22.", False),
    ("The folder holds count.py and fox.txt.",  # count.py: an example's file, not listed
     LEFT_OUT, True),
], ids=["all_of_it", "one_sentence", "a_count_of_what_it_listed", "numbers_of_its_own",
        "an_examples_file"])
def test_a_sentence_giving_an_examples_number_no_result_showed_is_left_out_of_the_result(
        llamacpp, stack, llm, said, kept, own):
    """After listing a folder that held countdown.py and fox.txt, the 1.5B model ended done
    with "fox.txt holds fox: 12 bytes." (an example's "12 bytes"; the file had 19). It is told
    so once, and its next answer makes a call; a second such result keeps none of them."""
    (stack.settings.work_dir / "fox.txt").write_text("the quick brown fox")
    (stack.settings.work_dir / "countdown.py").write_text("print(5)\n")
    listed = turn(check="", list_files={"path": "."})
    done = turn(check="", submit_result={"status": "done", "result": {"text": said}})
    llm.script("worker", listed, done, listed, done)
    _request(stack, llm, "Show me what is in my work folder.")
    worker = _worker(stack)
    assert worker.status == "done"
    assert stack.tasks.result(worker.id).result["text"] == kept
    asked = llm.requests_for("worker")
    if kept == said:  # nothing to tell the model: no call more
        assert len(asked) == 2
    else:
        assert len(asked) == 4
        assert "Your result gives " in asked[2]["messages"][-1]["content"]
        assert "which nothing your run showed" in asked[2]["messages"][-1]["content"]
        assert "submit_result" not in json.dumps(asked[2]["response_format"])  # a call first
    listing = "listed .: countdown.py, fox.txt" + ("; listed .: countdown.py, fox.txt" * own)
    if own:  # told once, it listed the folder again
        _told(stack, llm, f"{kept} What its run did: {listing}", 1)
        return
    report = wait_for(lambda: [body["messages"][1]["content"] for body in
                               llm.requests_for("teller") if kept in
                               body["messages"][1]["content"]], message="the report")[-1]
    assert "fox: 3 bytes" not in report
    assert "what its run did: listed .: countdown.py, fox.txt" in report


def test_a_folder_read_as_a_file_is_listed(llamacpp, stack, llm):
    """Asked to show a folder, the 1.5B model read "."; told it was a directory, it listed it
    in a call of its own, then again (4 calls where 2 do)."""
    (stack.settings.work_dir / "fox.txt").write_text("the quick brown fox")
    (stack.settings.work_dir / "countdown.py").write_text("print(5)\n")
    said = "The folder holds countdown.py and fox.txt."
    llm.script("worker", turn(check="", read_file={"path": "."}),
               turn(check="", submit_result={"status": "done", "result": {"text": said}}))
    _request(stack, llm, "Show me what is in my work folder.")
    worker = _worker(stack)
    assert worker.status == "done" and stack.tasks.result(worker.id).result["text"] == said
    asked = llm.requests_for("worker")
    assert len(asked) == 2 and '"entries": ["countdown.py", "fox.txt"]' in \
        asked[1]["messages"][-1]["content"]
    _told(stack, llm, f"{said} What its run did: listed .: countdown.py, fox.txt", 1)


def test_numbers_a_run_was_given_or_shown_stand_at_once(llamacpp, stack, llm):
    llm.script("worker", turn(check="", write_file={"path": "a.txt", "content": "hi"}),
               turn(check="", shell={"command": "wc -w a.txt"}),
               turn(check="", submit_result={"status": "done", "result": {
                   "text": "a.txt holds 1 word, 2 bytes, as the 3rd step of 10,800 showed."}}))
    _request(stack, llm, "Write a.txt with hi, count its words; step 3 of 10800.")
    worker = _worker(stack)
    assert worker.status == "done"
    assert stack.tasks.result(worker.id).result["text"] == \
        "a.txt holds 1 word, 2 bytes, as the 3rd step of 10,800 showed."  # all of it kept


def test_numbers_a_command_printed_one_a_line_stand(llamacpp, stack, llm):
    """The 1.5B model's countdown.py printed "5\\n4\\n3\\n2\\n1": read from the escaped JSON of
    the result, 4 and 3 stood beside letters, and its true report was cut as unseen."""
    said = "countdown.py printed 5, 4, 3, 2 and 1."
    llm.script("worker", turn(check="", write_file={
        "path": "countdown.py", "content": "for i in range(5, 0, -1):\n    print(i)\n"}),
        turn(check="", shell={"command": "python3 countdown.py"}),
        turn(check="", submit_result={"status": "done", "result": {"text": said}}))
    _request(stack, llm, "Write countdown.py that prints 5 down to 1 and run it.")
    worker = _worker(stack)
    assert stack.tasks.result(worker.id).result["text"] == said


def _done_after_giving_up(stack, llm, request: str, steps: list) -> list:
    """The Worker requests of a task run with ``steps``, once it ended done."""
    llm.script("worker", *steps)
    _request(stack, llm, request)
    assert _worker(stack).status == "done"
    return llm.requests_for("worker")


def test_a_worker_that_gives_up_at_its_own_commands_error_is_told_once_to_fix_it(
        llamacpp, stack, llm):
    """The 1.5B model summed numbers.txt with a ``python3 -c`` that lacked a bracket and ended
    failed at the syntax error (2 of 2 runs); told so, it sent the same failed again."""
    asked = _done_after_giving_up(stack, llm, "Put 1 and 2 in numbers.txt, then write their "
                                  "sum to total.txt.", [
        turn(check="", write_file={"path": "numbers.txt", "content": "1\n2\n"}),
        turn(check="", shell={"command": "python3 -c 'print(sum([1, 2)' > total.txt"}),
        turn(check="", submit_result={"status": "failed", "error": "Syntax error."}),
        turn(check="", shell={"command": "python3 -c 'print(sum([1, 2]))' > total.txt"}),
        turn(check="", submit_result={"status": "done", "result": {
            "text": "total.txt holds 3."}})])
    assert (stack.settings.work_dir / "total.txt").read_text().strip() == "3"
    told = asked[3]["messages"][-1]["content"]
    assert "Your last command failed (`python3 -c 'print(sum([1, 2)' > total.txt`): fix " \
        "what its error says and run it again" in told
    # the answer after that runs something: it may not be submit_result; the next one may
    assert "submit_result" not in json.dumps(asked[3]["response_format"])
    assert "submit_result" in json.dumps(asked[4]["response_format"])


def test_a_worker_that_gives_up_at_a_script_it_never_wrote_is_told_to_write_it(
        llamacpp, stack, llm):
    """The 1.5B model wrote nums.txt, ran ``python3 sum_nums.py nums.txt`` of a script it never
    wrote, and ended failed: "The task asked for a Python script named 'sum_nums.py'"."""
    asked = _done_after_giving_up(stack, llm, "Write 3 and 4 into nums.txt, then tell me their "
                                  "sum.", [
        turn(check="", write_file={"path": "nums.txt", "content": "3\n4\n"}),
        turn(check="", shell={"command": "python3 sum_nums.py nums.txt"}),
        turn(check="", submit_result={"status": "failed", "error": "No sum_nums.py."}),
        turn(check="", write_file={"path": "sum_nums.py", "content":
                                   "import sys\nprint(sum(int(n) for n in open(sys.argv[1])))\n"}),
        turn(check="", shell={"command": "python3 sum_nums.py nums.txt"}),
        turn(check="", submit_result={"status": "done", "result": {"text": "The sum is 7."}})])
    told = asked[3]["messages"][-1]["content"]
    assert "Your last command failed (`python3 sum_nums.py nums.txt`): sum_nums.py is not in " \
        "the work directory. Write it first (write_file)" in told
    # the answer after that writes the script (or reads, lists): it may neither run the same
    # command again (the 1.5B model did) nor give up; the next one may run it
    offered = json.dumps(asked[3]["response_format"])
    assert '"submit_result"' not in offered and '"shell"' not in offered
    assert '"write_file"' in offered and '"shell"' in json.dumps(asked[4]["response_format"])
    assert "7" in stack.tasks.result(_worker(stack).id).result["text"]


def test_a_worker_that_gives_up_at_a_calls_error_is_told_once_to_do_what_it_says(
        llamacpp, stack, llm):
    """Asked to show a folder, the 1.5B model read a path that was not there and ended failed
    at the error, which said how to go on."""
    (stack.settings.work_dir / "rent.txt").write_text("pay rent\n")
    asked = _done_after_giving_up(stack, llm, "Show the contents of the user's folder.", [
        turn(check="", read_file={"path": "folder"}),
        turn(check="", submit_result={"status": "failed", "error": "There is no folder."}),
        turn(check="", list_files={"path": "."}),
        turn(check="", submit_result={"status": "done", "result": {
            "text": "The folder holds rent.txt."}})])
    assert "Your last call failed (read_file: error: no such file: 'folder'; use list_files " \
        "to see what exists): do what its error says" in asked[2]["messages"][-1]["content"]
    assert "submit_result" not in json.dumps(asked[2]["response_format"])


def test_a_worker_that_fails_again_after_being_told_ends_failed(llamacpp, stack, llm):
    gives_up = turn(check="", submit_result={"status": "failed", "error": "No such script."})
    llm.script("worker", turn(check="", shell={"command": "python3 missing.py"}), gives_up,
               gives_up)
    _request(stack, llm, "Run missing.py.")
    worker = _worker(stack)
    assert worker.status == "failed"
    assert stack.tasks.result(worker.id).error == "No such script."
    assert len(llm.requests_for("worker")) == 3


def test_the_files_a_command_wrote_are_what_it_showed_by_name_and_text():
    shown = json.dumps({"exitCode": 0, "stdout": "", "written": {"chars.txt": "16 dentist.txt\n"}})
    assert {"chars.txt", "16", "dentist.txt"} <= shown_by(shown)
    assert not says_nothing_of("chars.txt is written.", shown)
    assert not says_nothing_of("The count is 16.", shown)
    assert says_nothing_of("All good.", shown)


def test_the_date_a_worker_is_shown_gives_no_number_of_its_own():
    """In December, the 0.5B model's "dentist.txt is 12 bytes" (an example's size; wc printed
    16) was kept: the month of the date its prompt showed was taken for a number shown."""
    seen = ["Today is Thursday 2026-12-03; the time is 05:46 (time zone UTC).",
            json.dumps({"exitCode": 0, "stdout": "16 dentist.txt\n"})]
    examples = "a.txt is 12 bytes, as the task asks. It printed 1, 2 and 3."
    assert held_to_seen("The size of dentist.txt is 12 bytes.", seen, examples) == LEFT_OUT
    assert held_to_seen("dentist.txt is 16 bytes.", seen, examples) == "dentist.txt is 16 bytes."
    assert held_to_seen("Set for 12:30 on 2026-12-03.", seen, examples) == \
        "Set for 12:30 on 2026-12-03."  # a time or a date that holds an example's number


def test_a_result_that_says_nothing_of_the_listing_it_follows_is_sent_back_once(
        llamacpp, stack, llm):
    """The 0.5B model wrote "The folder is empty." before it listed the folder, and ended done
    with it after a listing of four files; told once, it says what the listing showed."""
    (stack.settings.work_dir / "rent.txt").write_text("1200\n")
    empty = turn(check="", submit_result={"status": "done", "result": {
        "text": "The folder is empty."}})
    llm.script("worker", turn(check="The folder is empty.", shell={"command": "ls"}), empty,
               turn(check="", submit_result={"status": "done", "result": {
                   "text": "The folder holds rent.txt."}}))
    _request(stack, llm, "Show me what's in my folder.")
    worker = _worker(stack)
    assert stack.tasks.result(worker.id).result["text"] == "The folder holds rent.txt."
    told = llm.requests_for("worker")[2]["messages"][-1]["content"]
    assert "Your result says nothing of what your last call showed (" in told
    assert "rent.txt" in told


def test_a_result_sent_back_once_stands_the_second_time(llamacpp, stack, llm):
    """Told once: a second result that still says nothing of it is the Worker's (each
    ``done`` sent back would cost a model call, and a result may be about something else)."""
    (stack.settings.work_dir / "rent.txt").write_text("1200\n")
    empty = turn(check="", submit_result={"status": "done", "result": {"text": "All good."}})
    llm.script("worker", turn(check="", shell={"command": "ls"}), empty, empty)
    _request(stack, llm, "Check my folder.")
    worker = _worker(stack)
    assert worker.status == "done"
    assert stack.tasks.result(worker.id).result["text"] == "All good."
    assert len(llm.requests_for("worker")) == 3


def test_a_result_after_a_change_is_not_held_to_an_earlier_listing(llamacpp, stack, llm):
    (stack.settings.work_dir / "old.txt").write_text("x\n")
    llm.script("worker", turn(check="", shell={"command": "ls"}),
               turn(check="", remove={"path": "old.txt"}),
               turn(check="", submit_result={"status": "done", "result": {
                   "text": "Deleted it."}}))
    _request(stack, llm, "Look at my folder, then delete old.txt.")
    worker = _worker(stack)
    assert stack.tasks.result(worker.id).result["text"] == "Deleted it."
    assert len(llm.requests_for("worker")) == 3


def test_a_reply_before_anything_ran_gives_no_account_of_a_run(llamacpp, stack, llm):
    """The 0.5B model answered "create notes.txt ..." with "I'll create notes.txt. What its run
    did: created notes.txt (1 byte)", copying the runtime's account of a run from an earlier
    report in its history: a pass that reports no run posts no such account; a report that
    begins to copy the one it was shown is ended there, and the results are told with it."""
    llm.script("teller", turn(delegate=True, remember=False, reply=(
        "I'll create notes.txt. what its run did: created notes.txt (1 byte)")))
    llm.script("planner", turn(delegate={"prompt": "Create notes.txt containing hello."},
                               submit_result={"status": "done", "result": {"text": "Planned."}}))
    llm.script("worker", turn(write_file={"path": "notes.txt", "content": "hello"}),
               turn(submit_result={"status": "done", "result": {"text": "Made notes.txt, 1 "
                                                                        "word."}}))
    # its "1" is in no account of its run: the result is the model's to report
    llm.default("teller", turn(reply="notes.txt holds hello, 1 word. What its run did: wrote "
                                     "notes.txt (5 bytes)"))
    post_input(stack, "create notes.txt containing hello")
    replies = wait_for(lambda: (said := [t for r, t in history(stack) if r == "assistant"])[1:]
                       and said, message="the report")
    assert replies[0] == "I'll create notes.txt."
    assert replies[1] == 'Made notes.txt, 1 word. What its run did: wrote notes.txt (5 bytes): ' \
        '"hello"'
    assert len(llm.requests_for("teller")) == 2  # the report was the model's, and was ended


def test_the_words_of_work_a_schedule_runs_may_name_a_file_that_is_not_there(runtime, tmp_path):
    """A reminder a schedule runs needs no call, and its words may name a file ("Stretch, as
    stretches.txt says."): a result naming one that is not there stands at once; the same
    result of work handed over now is told once that no call made it."""
    import json

    from mimikit.agents.common import registry
    from mimikit.tools.context import ToolContext
    from mimikit.workspace.named import NamedFiles

    done = json.dumps({"status": "done", "result": {"text": "Stretch, as stretches.txt says."}})
    for scheduled, calls in ((True, 1), (False, 2)):
        workspace = Workspace(tmp_path)
        ctx = ToolContext(runtime=runtime, role="worker", trace_id="trace-1",
                          workspace=workspace, named=NamedFiles.of(
                              workspace, "Remind the user to stretch.", scheduled=scheduled))
        outcomes = [registry().call("worker", "submit_result", done, ctx) for _ in range(calls)]
        assert outcomes[-1].stop and all(not o.ok for o in outcomes[:-1])
        assert all("stretches.txt is not in the work directory" in o.content
                   for o in outcomes[:-1])


def test_a_step_of_a_chain_is_told_of_the_files_its_result_names_as_work_handed_over_is(
        runtime, tmp_path):
    """A step of a chain is no one's reminder: its Worker is not told so, and its result is
    held to the files it names as a task handed over now is; a task a schedule fired is not."""
    from mimikit.agents.worker import fired, upstream_ids

    def _fired(task: Task) -> bool:
        return fired(task, upstream_ids(runtime, task))

    step_a = Task(prompt="Read a.txt.")
    step_b = Task(type="conditional", prompt="Split what A read.",
                  condition={"type": "task_done", "params": {"taskId": step_a.id}})
    daily = Task(type="recurring", prompt="Remind the user to stretch.",
                 schedule={"cron": "0 9 * * *"})
    runtime.tasks.add([step_a, step_b, daily])
    assert not _fired(Task(prompt="Split what A read.", triggerId=step_b.id))
    assert _fired(Task(prompt="Remind the user to stretch.", triggerId=daily.id))
    assert not _fired(Task(prompt="Create notes.txt."))


def test_a_workers_done_in_an_examples_words_sharing_none_of_its_tasks_is_failed(
        llamacpp, stack, llm):
    """The 0.5B model ended "对花生过敏" with an example's check, "It printed 1, 2 and 3, as
    the task asks.", and the person was told so."""
    llm.script("worker", turn(submit_result={
        "status": "done", "result": {"text": "It printed 1, 2 and 3, as the task asks."}}))
    _request(stack, llm, "对花生过敏")
    worker = _worker(stack)
    assert worker.status == "failed"
    assert "an example's words" in stack.tasks.results_by_id([worker.id])[worker.id].error


def test_a_workers_done_in_an_examples_words_that_answer_its_task_stands(llamacpp, stack, llm):
    llm.script("worker",
               turn(write_file={"path": "count.py", "content": "print(1)\nprint(2)\nprint(3)"}),
               turn(shell={"command": "python3 count.py"}),
               turn(submit_result={"status": "done",
                                   "result": {"text": "count.py printed 1, 2 and 3."}}))
    _request(stack, llm, "Write count.py that prints 1 to 3, run it and say what it prints.")
    assert _worker(stack).status == "done"
