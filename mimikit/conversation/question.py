"""The pending question: answered by the user, or expired with its default or a timeout."""

from __future__ import annotations

from mimikit.conversation.gate import wake
from mimikit.models import Message, utcnow
from mimikit.store.runtime import Runtime


def answer_question(runtime: Runtime, answer: str) -> bool:
    """The user's answer: resolves the pending question, enters history, wakes the Teller.

    Returns False, changing nothing, when no question is pending.
    """
    if not runtime.conversation.resolve(answer, source="user"):
        return False
    runtime.conversation.append(Message(role="user", text=answer))
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
