"""A Planner's task whose prompt is word for word a prompt of its own examples, for a request
that shares no word with it: the request's words in its place. Asked "每个工作日早上8点半提醒我打卡",
the 0.5B model scheduled "Remind the user to call Anna." (the delay example's), and for "rename
fox.txt to animals.txt" it scheduled "What to do then" (the field's description); such a task
would do what no one asked, where the person's words at least say what they did.
"""

from __future__ import annotations

import json
import re

from mimikit.memory.tokenize import tokenize
from mimikit.models import Task
from mimikit.tools.teller_tools import plain

# A prompt of an example, as the answer's examples write it: "prompt": "..."
_EXAMPLE_PROMPT = re.compile(r'"prompt": ("(?:[^"\\]|\\.)*")')


def example_prompts(system: str) -> set[str]:
    """The prompts the examples of a system prompt give, plain (case and blanks folded)."""
    found = set()
    for quoted in _EXAMPLE_PROMPT.findall(system):
        try:
            found.add(plain(json.loads(quoted)))
        except json.JSONDecodeError:
            continue
    return found


def without_example_prompts(request: str, staged: list[Task], system: str) -> list[Task]:
    """``staged`` with each task whose prompt is an example's, and shares no word with
    ``request``, given ``request`` as its prompt."""
    examples = example_prompts(system)
    asked = set(tokenize(request))
    return [task.model_copy(update={"prompt": request})
            if plain(task.prompt) in examples and not asked & set(tokenize(task.prompt))
            else task for task in staged]
