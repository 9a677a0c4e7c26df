"""What to tell a model whose answer cannot be taken as it is, so that it converges.

Each correction names the exact call to make; when the same problem comes back, the next
request forces that one function (``tool_choice``), where the server allows it. What each
problem gets:

- text where a finishing tool was due (Planner, Worker, llm_eval): call the finisher;
- a Teller's text, or ``reply``, that promises work without the call that does it: call
  ``delegate`` with the request (``remember`` for a promise to keep something in memory);
- an empty answer: call a tool (the Teller: ``reply``);
- a call of a tool that does not exist, or one that cannot be read: the tools there are;
- an answer cut at ``max_tokens``: the same, shorter;
- a Teller whose calls keep failing: answer the user with ``reply``, in its own words;
- a Teller's text that is only a JSON object or list (no call, no words): ``reply``, once.
"""

from __future__ import annotations

import json
import re

from mimikit.llm.answers import Answer

_FENCE = re.compile(r"\A```[\w+.\-]*\s*(.*?)\s*```\Z", re.DOTALL)

EMPTY = "empty"
PLAIN = "plain"
PROMISE = "promise"
UNREADABLE = "unreadable"
CUT = "cut"
FAILING = "failing"
BARE = "bare"


def plain_text(finishers: list[str]) -> tuple[str, str]:
    """A Planner's or Worker's answer in plain text: the finisher to call, and the message."""
    finisher = finishers[0] if finishers else "submit_result"
    return finisher, (f"error: you answered in plain text, and only a call of {finisher!r} ends "
                      f"this run. Call {finisher} now with your result (or call the tools you "
                      "still need first); do not answer in text.")


def promise(text: str, tool: str = "delegate") -> str:
    """A Teller that promised work it did not hand over (or to remember what it did not)."""
    if tool == "remember":
        return (f"error: you told the user {text[:160]!r}, but nothing is kept until you call "
                "'remember'. Call remember now with the fact to keep, in the user's words; "
                "then reply.")
    return (f"error: you told the user {text[:160]!r}, but nothing does that work until you "
            "call 'delegate'. Call delegate now with a self-contained prompt for the request "
            "(what to do, with every detail the user gave); do not answer in text.")


def empty(teller: bool) -> tuple[str, str]:
    """An answer with neither text nor a call: the call to make, and the message."""
    name = "reply" if teller else "submit_result"
    return name, (f"error: your answer was empty. Call {name!r} now"
                  + (" with your answer to the user." if teller else " with your result."))


def unreadable(answer: Answer, names: list[str]) -> str:
    """Calls of unknown tools, or calls that could not be read."""
    parts = []
    if answer.unknown:
        parts.append(f"there is no tool {', '.join(map(repr, answer.unknown))}")
    if answer.broken:
        parts.append(f"this call could not be read: {answer.broken[0][:200]!r}")
    return (f"error: {'; '.join(parts)}. The tools are: {', '.join(names)}. Call one of them "
            "with its arguments as one JSON object.")


def cut(max_tokens: int | None) -> str:
    """An answer that reached ``max_tokens`` before its end."""
    limit = f" of {max_tokens} tokens" if max_tokens else ""
    return (f"error: your answer was cut off at the limit{limit} before it ended. Answer again, "
            "shorter: fewer words, or write a long file in several smaller calls.")


def failing(times: int) -> str:
    """A Teller whose every call failed ``times`` answers in a row."""
    return (f"error: your calls failed {times} times in a row. Call 'reply' now and answer the "
            "user in your own words: what you will do, or what you need to know.")


def bare_json(text: str) -> bool:
    """True when ``text`` (fenced or not) is only a JSON object or list."""
    body = text.strip()
    fenced = _FENCE.match(body)
    try:
        value = json.loads(fenced.group(1) if fenced else body)
    except (json.JSONDecodeError, RecursionError):
        return False
    return isinstance(value, dict | list)


def bare() -> str:
    """A Teller that answered with a JSON object that is no call."""
    return ("error: your answer was a JSON object, which is no call and no words the user can "
            "read. Call 'reply' now with your answer to the user in words.")
