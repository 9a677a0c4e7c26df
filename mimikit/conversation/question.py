"""The pending question: answered by the person (in its card, or typed in the chat box),
or expired with its default or a timeout.

A message typed in the chat box while a question is pending is taken as its answer unless the
person marks it as something else (``is_answer``): a question of its own (ending in "?"), or
an aside ("btw", "also", "new request", "另外", "顺便" ...). The Teller's pass still asks the
model whether it answers the question (``agents.typed_answers``): one that does not is taken as
the message it is, and the question is asked again.
"""

from __future__ import annotations

import re

from mimikit.conversation.gate import wake
from mimikit.models import Message, PendingQuestion, utcnow
from mimikit.store.runtime import Runtime

_ASIDE = re.compile(r"^\s*(?:btw|by the way|also|another thing|new (?:request|question|task)|"
                    r"unrelated|different question)\b|^\s*(?:另外|顺便|还有|新的?(?:问题|请求|任务))",
                    re.IGNORECASE)


def is_answer(question: PendingQuestion, text: str) -> bool:
    """Whether ``text``, typed while ``question`` is pending, may answer it: anything but an
    aside or a question of its own (a question that is just one of the options still
    answers)."""
    if _ASIDE.search(text):
        return False
    if is_question(text):
        return is_option(question.options, text.strip().rstrip("?？"))
    return True


def is_question(text: str) -> bool:
    """Whether ``text`` ends in a question mark (in any script)."""
    return text.rstrip().endswith(("?", "？"))


def is_option(options: list[str] | None, text: str) -> bool:
    """Whether ``text`` is one of a question's ``options`` (case and blanks aside)."""
    said = text.strip().casefold()
    return any(said == option.strip().casefold() for option in options or [])


def answer_question(runtime: Runtime, answer: str, trace_id: str | None = None) -> bool:
    """The person's answer: resolves the pending question, enters history, wakes the Teller.

    Returns False, changing nothing, when no question is pending.
    """
    question = runtime.conversation.question()
    if not runtime.conversation.resolve(answer, source="user"):
        return False
    traced = trace_id or (question.traceId if question else None)
    runtime.conversation.append(Message(role="user", text=answer, traceId=traced))
    wake(runtime)
    return True


def expire_question(runtime: Runtime) -> bool:
    """Resolve the pending question if it expired; True when it did."""
    conversation = runtime.conversation
    question = conversation.question()
    if question is None or question.expiresAt is None or question.expiresAt > utcnow():
        return False
    if question.default is not None:
        answer, source = question.default, "default"
        note = f"No answer in time; using the default: {question.default}"
    else:
        answer, source = "", "timeout"
        note = "The question timed out without an answer."
    if not conversation.resolve(answer, source=source, question_id=question.id):
        return False
    conversation.system(note, traceId=question.traceId)
    wake(runtime)
    return True
