"""Words a run's model was shown in its prompt's examples, given back as its own.

The examples of a role's answer write their values as JSON (``"prompt": "..."``, ``"text":
"..."``); a value of theirs said again word for word, where it shares no word with what was
asked, is a copy and not an answer. (Asked "我对什么过敏？", the 0.5B model's Worker ended
``done`` with "It printed 1, 2 and 3, as the task asks.", an example's check, and the person
was told so.)
"""

from __future__ import annotations

import json
import re

from mimikit.memory.tokenize import tokenize
from mimikit.tools.reply_checks import plain

# A Worker's done result whose text is one of these of its examples did nothing it says.
RESULT_FIELDS = ("text", "check")


def example_values(system: str, *fields: str) -> set[str]:
    """The values the examples of a system prompt give for ``fields``, plain (case and blanks
    folded)."""
    names = "|".join(re.escape(name) for name in fields)
    found = set()
    for quoted in re.findall(rf'"(?:{names})": ("(?:[^"\\]|\\.)*")', system):
        try:
            found.add(plain(json.loads(quoted)))
        except json.JSONDecodeError:
            continue
    return found


def copied_unasked(text: str, shown: set[str], asked: set[str]) -> bool:
    """Whether ``text`` is one of the ``shown`` values (plain), word for word, and shares no
    word with the request (``asked``: its words)."""
    return plain(text) in shown and not asked & set(tokenize(text))


def copied_example(asked: str, text: str, system: str, *fields: str) -> bool:
    """Whether ``text`` is word for word a value the examples give for ``fields``, sharing no
    word with what was ``asked``."""
    return bool(text) and copied_unasked(text, example_values(system, *fields),
                                         set(tokenize(asked)))


# The fields of the examples whose words a blend of them is made of, beside their requests.
EXAMPLE_FIELDS = ("text", "question", "prompt", "remember", "given", "unknown", "check")


def blended_example(asked: str, text: str, system: str) -> bool:
    """Whether ``text`` is two words or more, every one of them a word of the examples'
    requests and values, and none of them one of what was ``asked``: examples' words blended.
    Asked "我喜欢喝绿茶，记一下", the 0.5B Planner answered "You use vim to write your favorite
    fruit." (an example's answer and another's request; 2 of 2 runs), and the person was
    told so. A number the request does not give counts for neither: asked "我住在上海，请记住",
    it answered "You will be reminded in 2 hours." (the delay example's, "3" made "2")."""
    words = set(tokenize(text))
    if words & set(tokenize(asked)):
        return False
    words = {word for word in words if not word.isdigit()}
    if len(words) < 2:
        return False
    requests = re.findall(r"^request: (.*?) -> ", system, re.MULTILINE)
    shown = {word for value in (*requests, *example_values(system, *EXAMPLE_FIELDS))
             for word in tokenize(value)}
    return words <= shown


def example_fact(asked: str, fact: str, system: str) -> bool:
    """Whether a ``fact`` to keep shares no word with what was ``asked`` and a word with the
    request of an example that keeps one (``request: ... -> {... "remember": ...}``): that
    example's fact retold. Asked "请记住我对花生过敏", the 0.5B model kept "The user remembers
    that I use vim." (2 of 2 runs), and was then asked what the person is allergic to."""
    words = set(tokenize(fact))
    if words & set(tokenize(asked)):
        return False
    keeping = re.findall(r'^request: (.*?) -> .*"remember": "', system, re.MULTILINE)
    return bool(words & {word for request in keeping for word in tokenize(request)})


def copied_result(task_prompt: str, text: str, system: str) -> bool:
    """Whether a Worker's result ``text`` is word for word an example's result or check,
    sharing no word with its task."""
    return copied_example(task_prompt, text, system, *RESULT_FIELDS)
