"""Answers typed in the chat box while a question is pending, on the real stack with the
scripted server named as llama.cpp's (answers held to a schema): the model is asked alone
whether the message answers the question (``agents.typed_answers``), one that does not is the
message it is, a Planner question that the request or Memory answers already is not asked, and
a Planner that asks again what was already answered ends instead of asking forever."""

from __future__ import annotations

from typing import get_args

import pytest
from agent_helpers import history, post_input, user_prompt, wait_history
from llm_server import tool_call, turn
from processes import wait_for

from mimikit.models import TaskStatus
from mimikit.tools.teller_tools import first_request


def _schema(body: dict) -> dict:
    return body["response_format"]["json_schema"]["schema"]


def _planner_asks(stack, llm, question: str = "Staging or production?"):
    """A request whose Planner asks ``question``; returns the Planner task once it is asked."""
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll deploy it."))
    llm.script("planner", turn(submit_result={"status": "needs_input", "question": question}),
               turn(answer=""))  # asked alone, it finds no answer given already
    llm.default("teller", turn(reply="The planner has a question."))
    post_input(stack, "deploy the app")
    pending = wait_for(stack.conversation.question, timeout=30, message="the question")
    assert pending.question == question
    return next(t for t in stack.tasks.with_status("done") if t.role == "planner")


def test_a_planner_question_alone_is_asked_without_a_teller_call(llamacpp, stack, llm):
    _planner_asks(stack, llm)
    wait_for(lambda: stack.inbox.read() == [], timeout=10, message="the report acknowledged")
    assert len(llm.requests_for("teller")) == 1  # the request's pass; none for the question
    said = [text for role, text in history(stack) if role == "assistant"]
    assert said == ["I'll deploy it.", "Staging or production?"]


def _judgment(body: dict) -> tuple[str, list]:
    """The words of a request asking whether a typed message answers the question, and the
    verdicts its schema allows."""
    verdicts = _schema(body)["properties"]["answer"]["enum"]
    return body["messages"][-1]["content"], verdicts


def test_a_new_request_typed_while_a_question_is_pending_is_taken_as_the_message_it_is(
        llamacpp, stack, llm):
    asking = _planner_asks(stack, llm)
    llm.script("teller", turn(answer="no"),  # the model judges it no answer to the question
               turn(delegate=True, remember=False, reply="I'll write fib.py."))
    llm.script("planner", turn(submit_result={"status": "done",
                                              "result": {"text": "A worker will write it."}}))
    post_input(stack, "write a python script fib.py")
    wait_history(stack, lambda h: ("assistant", "I'll write fib.py.") in h, message="reply")
    asked, verdicts = _judgment(llm.requests_for("teller")[1])
    assert asked == ('You asked: "Staging or production?"\nThe user then wrote: "write a '
                     'python script fib.py"\nIs what the user wrote an answer to your question?')
    assert verdicts == ["yes", "no"]
    passed = llm.requests_for("teller")[2]
    assert "] user: write a python script fib.py" in user_prompt(passed)  # a message
    assert "Staging or production?" not in user_prompt(passed).partition("## Pending inputs")[2]
    assert list(_schema(passed)["properties"]) == ["delegate", "remember", "show", "reply"]
    planners = wait_for(lambda: [t for t in stack.tasks.with_status("done")
                                 if t.role == "planner" and t.id != asking.id],
                        message="the new request's Planner task")
    assert [t.prompt for t in planners] == ["write a python script fib.py"]  # as it is
    again = wait_for(stack.conversation.question, message="the question, asked again")
    assert (again.question, again.taskId) == ("Staging or production?", asking.id)


def test_a_greeting_typed_while_a_question_is_pending_is_answered_and_the_question_stays(
        llamacpp, stack, llm):
    asking = _planner_asks(stack, llm)
    llm.script("teller", turn(answer="no"),
               turn(delegate=False, remember=False, reply="Yes, I'm here."))
    post_input(stack, "hi, are you still there")
    wait_history(stack, lambda h: ("assistant", "Yes, I'm here.") in h, message="reply")
    again = wait_for(stack.conversation.question, message="the question, asked again")
    assert (again.question, again.taskId) == ("Staging or production?", asking.id)
    assert [t.id for t in stack.tasks.with_status("done") if t.role == "planner"] == [asking.id]


@pytest.mark.parametrize("delegate", [True, False], ids=["delegated", "kept_as_a_fact"])
def test_an_answer_typed_in_the_chat_box_continues_the_planners_task(llamacpp, stack, llm,
                                                                     delegate):
    asking = _planner_asks(stack, llm)
    llm.script("teller",  # a word or two answers without a verdict
               turn(delegate=delegate, remember=not delegate, reply="Deploying to staging."))
    llm.script("planner", turn(submit_result={"status": "done",
                                              "result": {"text": "Deployed to staging."}}))
    post_input(stack, "staging")
    wait_history(stack, lambda h: ("assistant", "Deploying to staging.") in h, message="reply")
    going_on = wait_for(lambda: [t for t in stack.tasks.with_status("done")
                                 if t.role == "planner" and t.id != asking.id],
                        message="the continued Planner task")
    assert "Question: Staging or production?\nAnswer (chat): staging" in going_on[0].prompt
    assert first_request(going_on[0]) == "deploy the app"  # read back, written once
    assert going_on[0].prompt.count("deploy the app") == 1
    assert stack.conversation.question() is None


def test_an_option_typed_in_the_chat_box_answers_without_asking_the_model(stack, llm):
    from mimikit.models import PendingQuestion

    stack.conversation.ask(PendingQuestion(question="Staging or production?",
                                           options=["staging", "production"], traceId="t1"))
    llm.default("teller", tool_call("reply", text="Deploying to staging."))
    post_input(stack, "Staging")
    wait_history(stack, lambda h: ("assistant", "Deploying to staging.") in h, message="reply")
    assert not any("You asked:" in body["messages"][-1]["content"]  # the pass alone
                   for body in llm.requests_for("teller"))
    assert "- Answer to your question 'Staging or production?', from the user: Staging" in \
        user_prompt(llm.requests_for("teller")[0])


def test_a_planner_asking_again_what_was_answered_ends_and_the_person_is_told(
        llamacpp, stack, llm):
    from mimikit.conversation.question import answer_question

    _planner_asks(stack, llm, "What is your name?")
    llm.script("teller", turn(delegate=True, remember=False, reply="Thanks, going on."))
    llm.script("planner", turn(submit_result={"status": "needs_input",
                                              "question": "What is your name?"}))
    assert answer_question(stack, "Ada")  # in the question's card
    told = wait_history(stack, lambda h: any("asked again" in text for _role, text in h),
                        message="the person told")
    assert "so this was not done: deploy the app" in next(
        text for _role, text in told if "asked again" in text)
    assert stack.conversation.question() is None  # not asked a third time
    assert len(llm.requests_for("planner")) == 3  # two plans, one look for a given answer
    assert sum(text == "What is your name?" for _role, text in history(stack)) == 1


def test_a_newer_planner_question_closes_the_older_one_and_says_what_was_not_done(
        llamacpp, stack, llm):
    asking = _planner_asks(stack, llm)
    llm.script("teller", turn(answer="no"),
               turn(delegate=True, remember=False, reply="I'll write the file."))
    llm.script("planner", turn(submit_result={"status": "needs_input",
                                              "question": "Which name should the file have?"}))
    post_input(stack, "write a file for me")
    newer = wait_for(lambda: (q := stack.conversation.question()) and
                     q.question == "Which name should the file have?" and q,
                     timeout=30, message="the newer question")
    assert newer.taskId != asking.id
    told = [text for role, text in history(stack) if role == "system" and "closed" in text]
    assert told == ["The question 'Staging or production?' was closed unanswered for a newer "
                    "one, so this was not done: deploy the app"]


@pytest.mark.parametrize(("typed", "may_answer"), [
    ("teal", True), ("write fib.py for me", True),  # the Teller decides on these
    ("btw, what time is it", False), ("另外，帮我建个文件", False),  # the person's own asides
    ("what is staging?", False), ("staging?", True),  # a question of its own, or an option
])
def test_what_may_answer_a_pending_question(typed, may_answer):
    from mimikit.conversation.question import is_answer
    from mimikit.models import PendingQuestion

    question = PendingQuestion(question="Staging or production?", options=["staging", "prod"])
    assert is_answer(question, typed) is may_answer


def _remembered(stack, fact: str) -> None:
    (stack.settings.state_dir / "memory.md").write_text(f"# Memory\n\n- {fact}\n",
                                                        encoding="utf-8")


@pytest.mark.parametrize(("request_text", "copied", "judged", "source"), [
    ("set up a node project with my usual package manager", "pnpm", "yes", "Memory"),
    ("set up a node project, I always use yarn", "yarn", None, "the request"),
    ("set up a node project with my usual package manager", "npm", None, None),  # a guess
    ("set up a node project with my usual package manager", "package manager", None, None),
    ("set up a node project with my usual package manager", "pnpm", "no", None),
], ids=["given_by_memory", "given_by_the_request", "only_the_user_knows", "the_question_echoed",
        "a_line_judged_no_answer"])
def test_a_planner_question_answered_already_is_not_asked(llamacpp, stack, llm, request_text,
                                                           copied, judged, source):
    _remembered(stack, "The user uses pnpm as package manager.")
    llm.script("teller", turn(delegate=True, remember=False, reply="Let me see."))
    llm.script("planner", turn(unknown="my package manager", given="", kind="ask the user",
                               submit_result={"status": "needs_input",
                                              "question": "Which package manager do you want?"}),
               turn(answer=copied))  # asked alone: the answer, copied from what it was shown
    if judged:  # a copy from Memory: asked alone whether the person would answer so
        llm.script("planner", turn(answer=judged))
    llm.script("planner", turn(unknown="", given="", kind="work now",
                               delegate={"prompt": f"Set up a node project with {copied}."},
                               submit_result={"status": "done", "result": {"text": "A worker will."}}))
    llm.default("worker", turn(submit_result={"status": "done", "result": {"text": "made"}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, request_text)
    if source is None:
        asked = wait_for(stack.conversation.question, timeout=30, message="the question")
        assert asked.question == "Which package manager do you want?"
        # the plan, the look for an answer (and the judgment of what it found)
        assert len(llm.requests_for("planner")) == 2 + bool(judged)
        return
    done = wait_for(lambda: [t for t in stack.tasks.with_status("done") if t.role == "planner"],
                    timeout=30, message="the plan")
    result = stack.tasks.results_by_id([done[0].id])[done[0].id]
    assert (result.status, result.result) == ("done", {"text": "A worker will."})
    assert stack.conversation.question() is None
    first, looked, *judgment, again = llm.requests_for("planner")
    if judged:
        assert judgment[0]["messages"][-1]["content"] == (
            'The user said: "# Memory - The user uses pnpm as package manager."\nQuestion: '
            '"Which package manager do you want?"\nDoes what the user said give "pnpm" as the '
            "answer to that question?")
        assert _schema(judgment[0])["properties"]["answer"]["enum"] == ["yes", "no"]
    asked = looked["messages"][-1]["content"]
    assert asked.startswith(f'The user wrote: "{request_text}"\nToday is ')
    assert "\nMemory: # Memory - The user uses pnpm as package manager.\n" in asked
    assert asked.endswith('Question: "Which package manager do you want?"\nAnswer the question '
                          "with words copied from what the user wrote or from the lines above, "
                          'or "" when they do not say.')
    assert _schema(looked)["properties"]["answer"] == {"type": "string", "maxLength": 60}
    not_asked = user_prompt(again).partition("## Not to ask\n")[2].partition("## User")[0]
    assert not_asked == (f'"Which package manager do you want?" is answered already: {copied} '
                         f"({source}).\nAnswer the request, or do it, with that.\n\n")
    assert "## Memory" in user_prompt(again)  # its other lines are still shown
    kinds = {b["properties"]["kind"]["enum"][0] for b in _schema(again)["anyOf"]}
    assert "ask the user" in {b["properties"]["kind"]["enum"][0]
                              for b in _schema(first)["anyOf"]} and "ask the user" not in kinds



def test_the_answer_found_in_place_of_a_question_reaches_the_worker(llamacpp, stack, llm):
    """Told "What is your pet's name?" is answered already, the 1.5B Planner still handed over
    "Create a text file named after my pet.": its Worker, which sees no Memory, is given the
    answer beside the task."""
    _remembered(stack, "我的狗叫旺财")
    llm.script("teller", turn(delegate=True, remember=False, reply="Let me see."))
    llm.script("planner", turn(unknown="my pet", given="", kind="ask the user",
                               submit_result={"status": "needs_input",
                                              "question": "What is your pet's name?"}),
               turn(answer="旺财"), turn(answer="yes"),
               turn(unknown="", given="", kind="work now",
                    delegate={"prompt": "Create a text file named after my pet."},
                    submit_result={"status": "done", "result": {"text": "A worker will."}}))
    llm.default("worker", turn(submit_result={"status": "done", "result": {"text": "made"}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, "create a text file named after my pet")
    workers = wait_for(lambda: [t for t in stack.tasks.with_status("done") if t.role == "worker"],
                       timeout=30, message="the Worker's task")
    assert workers[0].prompt == ("Create a text file named after my pet.\n\n## Known\n"
                                 "What is your pet's name? 旺财 (Memory)")


def test_a_line_of_memory_about_something_else_does_not_answer_a_planner_question(
        llamacpp, stack, llm):
    """Shown "keep in mind that my favourite programming language is Rust", the 1.5B model
    answered "What is your city?" with "Rust": a line that shares no word with the question
    or the request is not shown, and what is copied from nowhere answers nothing."""
    _remembered(stack, "keep in mind that my favourite programming language is Rust")
    llm.script("teller", turn(delegate=True, remember=False, reply="Let me see."))
    llm.script("planner", turn(unknown="my city", given="", kind="ask the user",
                               submit_result={"status": "needs_input",
                                              "question": "What is your city?"}),
               turn(answer="Rust"))
    post_input(stack, "make a file named after the city I live in")
    asked = wait_for(stack.conversation.question, timeout=30, message="the question")
    assert asked.question == "What is your city?"
    _plan, looked = llm.requests_for("planner")
    assert "Rust" not in looked["messages"][-1]["content"]

PNPM_KEPT = "记一下：我习惯用 pnpm"


@pytest.mark.parametrize(("request_text", "copied", "looked", "judged", "kept"), [
    ("which package manager do I like to use?", "pnpm", True, "yes", PNPM_KEPT),
    ("which package manager do I like to use?", "npm", True, None, PNPM_KEPT),  # a guess
    ("what does pnpm.txt hold?", "pnpm", False, None, PNPM_KEPT),  # the work dir says
    ("tell me which package manager I use", "pnpm", False, None, PNPM_KEPT),  # no question
    ("what's in my working directory right now?", "", False, None,
     "please remember that I'm allergic to peanuts"),  # a line that shares no word with it
    ("what am I allergic to?", "peanuts", True, "yes",
     "please remember that I'm allergic to peanuts"),
    ("which package manager do I like to use?", "pnpm", True, "no", PNPM_KEPT),
], ids=["memory_answers", "a_guess", "names_a_file", "not_a_question", "an_unrelated_line",
        "a_line_sharing_a_word", "judged_no_answer"])
def test_a_question_handed_to_a_worker_that_memory_answers_is_answered(
        llamacpp, stack, llm, request_text, copied, looked, judged, kept):
    """Shown "记一下：我习惯用 pnpm" in Memory, the 1.5B model planned "which package manager do I
    like to use?" as work, and its Worker wrote package_manager.txt holding "pip". A line in
    the request's own script that shares no word with it is not shown, and with none left the
    model is not asked: asked "what's in my working directory right now?", it copied "I'm
    allergic to peanuts"."""
    _remembered(stack, kept)
    llm.script("teller", turn(delegate=True, remember=False, reply="Let me see."))
    llm.script("planner", turn(unknown="", given="", kind="work now",
                               delegate={"prompt": request_text},
                               submit_result={"status": "done", "result": {"text": "A worker."}}))
    if looked:
        llm.script("planner", turn(answer=copied))  # asked alone, as for a question it asks
    if judged:
        llm.script("planner", turn(answer=judged))  # and whether Memory's line answers it
    answered = judged == "yes"
    llm.script("planner", turn(unknown="", given="pnpm", kind="answer", submit_result={
        "status": "done", "result": {"text": "You use pnpm."}}))
    llm.default("worker", turn(submit_result={"status": "done", "result": {"text": "made"}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, request_text)
    done = wait_for(lambda: [t for t in stack.tasks.with_status("done") if t.role == "planner"],
                    timeout=30, message="the plan")
    result = stack.tasks.results_by_id([done[0].id])[done[0].id]
    workers = [t for t in stack.tasks.with_status(*get_args(TaskStatus)) if t.role == "worker"]
    assert len(llm.requests_for("planner")) == 1 + looked + bool(judged) + answered
    if not answered:
        assert result.result == {"text": "A worker."} and len(workers) == 1
        return
    assert result.result == {"text": "You use pnpm."} and workers == []
    again = llm.requests_for("planner")[-1]
    assert f'"{request_text}" is answered already: {copied} (Memory).' in user_prompt(again)



def _asks_instead(llm, unknown: str, question: str) -> None:
    """The plan made again as the question that asks for ``unknown``, which nothing given
    answers."""
    llm.script("planner", turn(unknown=unknown, given="", kind="ask the user",
                               submit_result={"status": "needs_input", "question": question}),
               turn(answer=""))  # asked alone, it finds no answer given already


@pytest.mark.parametrize(("given", "asked"), [
    ("The user uses vim.", True),  # an example's words: nothing it was shown says so
    ("The user's favorite color is teal.", False),  # Memory's words
    # Memory's words, of something else: "my city" given as "The user's favorite sport is
    # swimming." (the 1.5B model), and its Worker wrote swimming.txt
    ("The user uses pnpm.", True),
], ids=["invented", "shown", "of_something_else"])
def test_a_plan_that_gives_what_only_the_user_knows_in_invented_words_asks(
        llamacpp, stack, llm, given, asked):
    _remembered(stack, "The user uses pnpm as package manager.\n- The user's favorite color "
                "is teal.")
    llm.script("teller", turn(delegate=True, remember=False, reply="Let me see."))
    work = turn(unknown="my favorite color", given=given, kind="work now",
                delegate={"prompt": "Create an empty file named after the favorite color."},
                submit_result={"status": "done", "result": {"text": "A worker will."}})
    llm.script("planner", work)
    if asked:
        _asks_instead(llm, "my favorite color", "What is your favorite color?")
    llm.default("worker", turn(submit_result={"status": "done", "result": {"text": "made"}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, "create an empty file named after my favorite color")
    if not asked:
        wait_for(lambda: [t for t in stack.tasks.with_status("done") if t.role == "planner"],
                 timeout=30, message="the plan")
        assert len(llm.requests_for("planner")) == 1
        return
    question = wait_for(stack.conversation.question, timeout=30, message="the question")
    assert question.question == "What is your favorite color?"
    again = _schema(llm.requests_for("planner")[1])
    assert again["properties"]["kind"]["enum"] == ["ask the user"]  # the one kind it may give


def test_an_unknown_the_request_quotes_is_the_users_own_and_the_plan_stands(llamacpp, stack,
                                                                             llm):
    """The 1.5B model planned "add 'buy eggs' to todo.txt" with "unknown": "buy eggs" and the
    request in its own words as "given"; made again as a question, it asked "What do you want
    to buy?" (two more requests, and one more to find the answer in the request)."""
    llm.script("teller", turn(delegate=True, remember=False, reply="I'll add it."))
    llm.script("planner", turn(
        unknown="buy eggs", given="The user wants to add 'buy eggs' to their todo list.",
        kind="work now", delegate={"prompt": "Add 'buy eggs' to todo.txt."},
        submit_result={"status": "done", "result": {"text": "A worker will add it."}}))
    llm.default("worker", turn(submit_result={"status": "done", "result": {"text": "made"}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, "add 'buy eggs' to todo.txt")
    wait_for(lambda: [t for t in stack.tasks.with_status("done") if t.role == "planner"],
             timeout=30, message="the plan")
    assert len(llm.requests_for("planner")) == 1
    assert not [e for e in stack.events.recent() if e["type"] == "given_invented"]


@pytest.mark.parametrize("judged", ["yes", "no"])
def test_a_plan_giving_in_english_what_memory_says_in_chinese_hands_it_to_the_worker(
        llamacpp, stack, llm, judged):
    """The 1.5B Planner gave "The user lives in Shanghai." of "我住在上海，请记住", words its
    prompt does not hold; asked alone, the model judges whether the line says so. Then the
    Worker, which sees no Memory, is given it; else the plan asks."""
    _remembered(stack, "我住在上海，请记住")
    llm.script("teller", turn(delegate=True, remember=False, reply="Let me see."))
    llm.script("planner", turn(unknown="my city", given="The user lives in Shanghai.",
                               kind="work now",
                               delegate={"prompt": "Create a file named after the city I live in."},
                               submit_result={"status": "done", "result": {"text": "A worker."}}),
               turn(answer=judged))
    if judged == "no":
        _asks_instead(llm, "my city", "What is your city?")
    llm.default("worker", turn(submit_result={"status": "done", "result": {"text": "made"}}))
    llm.default("teller", turn(reply="Done."))
    post_input(stack, "make a file named after the city I live in")
    judgment = wait_for(lambda: llm.requests_for("planner")[1:2], message="the judgment")[0]
    assert judgment["messages"][-1]["content"] == (
        'The user said:\n- # Memory - 我住在上海，请记住\nDoes that say "The user lives in '
        'Shanghai."?')
    if judged == "no":
        question = wait_for(stack.conversation.question, timeout=30, message="the question")
        assert question.question == "What is your city?"
        return
    workers = wait_for(lambda: [t for t in stack.tasks.with_status("done") if t.role == "worker"],
                       timeout=30, message="the Worker's task")
    assert workers[0].prompt == (
        "Create a file named after the city I live in.\n\n## The request, in the user's words\n"
        "make a file named after the city I live in\n\n## Known\nThe user lives in Shanghai.")
    assert len(llm.requests_for("planner")) == 2


NOW = "Today is Sunday 2026-11-29; the time is 14:55 (time zone UTC)."


@pytest.mark.parametrize(("request_text", "question", "answer", "source"), [
    # what the 1.5B model copied, asked alone
    ("以后记得我用 pnpm 管理包", "你用什么包管理工具？", "pnpm", "the request"),
    ("remind me at 5pm to call mom", "What time should I remind you?", "5pm", "the request"),
    ("save today's date in d.txt", "What is today's date?", "Sunday 2026-11-29",
     "the current time"),
    ("remind me about the meeting", "When is the meeting?", "14:55", None),  # the clock's time
    ("write my home address into address.txt", "What is your home address?",
     "write my home address into address.txt", None),  # the request itself
    ("book a table for two", "Which restaurant should I book a table at?", "a table",
     None),  # what the question names
    ("create notes named after my favorite fruit", "What is your favorite fruit?", "apple",
     None),  # a guess
    ("write my name into name.txt", "What is your name?", "Ana", "Memory"),
    # a choice the question lists in brackets is an answer; the question's own words are not
    ("add 'buy eggs' to todo.txt", "What do you want to add to your todo list? (e.g., 'buy "
     "eggs', 'read a book')", "buy eggs", "the request"),
    ("name a file after my favorite color", "What is your favorite color (red, blue)?",
     "favorite color", None),
])
def test_where_an_answer_copied_before_asking_is_found(request_text, question, answer, source):
    from mimikit.agents.answered import found_in

    given = found_in(answer, request_text, question, NOW, ["Memory: My name is Ana."])
    assert (given.source if given else None) == source
