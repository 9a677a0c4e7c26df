"""A Planner's task whose prompt is word for word text the Planner was shown, for a request that
shares no word with it: a line of Active work (the plan is made again without it:
``agents.planner.copied_work``) or a task, question or answer of its own examples (the request's
words in its place). Asked "每个工作日早上8点半提醒我打卡", the 0.5B model scheduled "Remind the user to call
Anna." (the delay example's); asked to be reminded to walk the dog, "What is your favorite
fruit?" (an example's question); and for "rename fox.txt to animals.txt" it scheduled "What to
do then" (the field's description); such a task would do what no one asked, where the person's
words at least say what they did. An answer in an example's words is no answer either: the 0.5B
model answered "请记住我对花生过敏" and "我对什么过敏？" with "You use vim."; nor a question in an
example's words a question of the request's: for "请记住我对花生过敏" it asked "What is your
favorite fruit?"; nor one the person was asked before, for another request: after "make a
folder named after my favourite season" had been asked about and answered, the 1.5B model asked
"What is your favorite season?" for "每周日晚上8点提醒我倒垃圾", and the reminder waited on it.
"""

from __future__ import annotations

from mimikit.conversation.question import is_question
from mimikit.llm.echoes import repeats
from mimikit.memory.tokenize import tokenize
from mimikit.models import Result, Task
from mimikit.roles import ANSWER, ASK_THE_USER
from mimikit.store.runtime import Runtime
from mimikit.tools.example_copies import (
    blended_example,
    copied_example,
    copied_unasked,
    example_values,
)

# What an example's task, question or answer says: none of it is a prompt of this request's.
EXAMPLE_WORDS = ("prompt", "question", "text")
EARLIER_MESSAGES = 40  # of the conversation, looked at for the questions asked in them


def without_example_prompts(request: str, staged: list[Task], system: str) -> list[Task]:
    """``staged`` with each task whose prompt is an example's (its task, question or answer),
    and shares no word with ``request``, given ``request`` as its prompt."""
    examples, asked = example_values(system, *EXAMPLE_WORDS), set(tokenize(request))
    return [task.model_copy(update={"prompt": request})
            if copied_unasked(task.prompt, examples, asked) else task for task in staged]


def copied_kind(request: str, answer: str, result: Result, system: str,
                asked_before: list[str]) -> tuple[str, str] | None:
    """The kind of a plan's turn (an answer, a question) and its words, where they are word for
    word an example's answer or question sharing no word with ``request``, an answer blended
    of the examples' words (``blended_example``), or a question that says one of
    ``asked_before`` again (``echoes.repeats``: "favorite" for "favourite") and shares no word
    with ``request``; None otherwise (``answer``: what the plan answered in words alone, ''
    where it did not)."""
    if copied_example(request, answer, system, "text") or \
            blended_example(request, answer, system):
        return ANSWER, answer
    question = result.question or ""
    if result.status != "needs_input" or not question:
        return None
    unasked = not set(tokenize(question)) & set(tokenize(request))
    if copied_example(request, question, system, "question") or \
            (unasked and repeats(question, asked_before)):
        return ASK_THE_USER, question
    return None


def questions_asked(runtime: Runtime, trace_id: str | None) -> list[str]:
    """The questions the person was asked for other requests than ``trace_id``'s in the last
    ``EARLIER_MESSAGES`` messages of the conversation: the assistant's messages whose first
    line is a question (its options follow it)."""
    firsts = [message.text.partition("\n")[0] for message in
              runtime.conversation.recent(EARLIER_MESSAGES)
              if message.role == "assistant" and message.traceId != trace_id]
    return [line for line in firsts if is_question(line)]
