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
favorite fruit?".
"""

from __future__ import annotations

from mimikit.memory.tokenize import tokenize
from mimikit.models import Result, Task
from mimikit.roles import ANSWER, ASK_THE_USER
from mimikit.tools.example_copies import (
    blended_example,
    copied_example,
    copied_unasked,
    example_values,
)

# What an example's task, question or answer says: none of it is a prompt of this request's.
EXAMPLE_WORDS = ("prompt", "question", "text")


def without_example_prompts(request: str, staged: list[Task], system: str) -> list[Task]:
    """``staged`` with each task whose prompt is an example's (its task, question or answer),
    and shares no word with ``request``, given ``request`` as its prompt."""
    examples, asked = example_values(system, *EXAMPLE_WORDS), set(tokenize(request))
    return [task.model_copy(update={"prompt": request})
            if copied_unasked(task.prompt, examples, asked) else task for task in staged]


def copied_kind(request: str, answer: str, result: Result,
                system: str) -> tuple[str, str] | None:
    """The kind of a plan's turn (an answer, a question) and its words, where they are word for
    word an example's answer or question sharing no word with ``request``, or an answer blended
    of the examples' words (``blended_example``); None otherwise (``answer``: what the plan
    answered in words alone, '' where it did not)."""
    if copied_example(request, answer, system, "text") or \
            blended_example(request, answer, system):
        return ANSWER, answer
    question = result.question or ""
    if result.status == "needs_input" and copied_example(request, question, system, "question"):
        return ASK_THE_USER, question
    return None
