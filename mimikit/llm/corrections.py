"""What to tell a model whose answer cannot be taken as it is, so that it converges.

Each correction names the exact call to make; when the same problem comes back, the next
request forces that one function (``tool_choice``) on the native path. An answer held to the
role's schema parses by construction: only what the schema cannot rule out is corrected there
(an answer cut at the token limit, a finisher due). What each problem gets:

- text where a finishing tool was due (Planner, Worker, llm_eval): call the finisher;
- an empty answer: call a tool (the Teller: ``reply``);
- a call of a tool that does not exist, or one that cannot be read: the tools there are;
- an answer cut at ``max_tokens``: the same, shorter;
- a Teller whose calls keep failing: answer the user with ``reply``, in its own words;
- a Planner or Worker making a call it made before: its finisher, forced.
"""

from __future__ import annotations

EMPTY = "empty"
PLAIN = "plain"
UNREADABLE = "unreadable"
CUT = "cut"
FAILING = "failing"
AGAIN = "again"


def plain_text(finishers: list[str]) -> tuple[str, str]:
    """A Planner's or Worker's answer in plain text: the finisher to call, and the message."""
    finisher = finishers[0] if finishers else "submit_result"
    return finisher, (f"error: you answered in plain text, and only a call of {finisher!r} ends "
                      f"this run. Call {finisher} now with your result (or call the tools you "
                      "still need first); do not answer in text.")


def empty(teller: bool) -> tuple[str, str]:
    """An answer with neither text nor a call: the call to make, and the message."""
    name = "reply" if teller else "submit_result"
    return name, (f"error: your answer was empty. Call {name!r} now"
                  + (" with your answer to the user." if teller else " with your result."))


def unreadable(unknown: list[str], broken: list[str], names: list[str]) -> str:
    """Calls of unknown tools, or calls that could not be read."""
    parts = []
    if unknown:
        parts.append(f"there is no tool {', '.join(map(repr, unknown))}")
    if broken:
        parts.append(f"this call could not be read: {broken[0][:200]!r}")
    return (f"error: {'; '.join(parts)}. The tools are: {', '.join(names)}. Call one of them "
            "with its arguments as one JSON object.")


def cut(max_tokens: int | None) -> str:
    """An answer that reached ``max_tokens`` before its end."""
    limit = f" of {max_tokens} tokens" if max_tokens else ""
    return (f"error: your answer was cut off at the limit{limit} before it ended. Answer again, "
            "shorter: fewer words, or write a long file in several smaller calls.")


def again(name: str, finisher: str) -> str:
    """A Planner or Worker that made a call it had made before."""
    return (f"error: you called {name!r} with the same arguments before: the work is done or "
            f"going round in a loop. Call {finisher} now with what was done, from the results "
            "you have.")


def failing(times: int) -> str:
    """A Teller whose every call failed ``times`` answers in a row."""
    return (f"error: your calls failed {times} times in a row. Call 'reply' now and answer the "
            "user in your own words: what you will do, or what you need to know.")
