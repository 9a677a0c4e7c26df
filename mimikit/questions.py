"""Expiry of the pending question: the default is used, or the Teller is told it timed out."""

from __future__ import annotations

from mimikit import dispatch
from mimikit.models import utcnow
from mimikit.runtime import Runtime


def expire_question(runtime: Runtime) -> bool:
    """Resolve the pending question if it expired; True when it did."""
    state = runtime.state
    question = state.get_question()
    if question is None or question.expiresAt is None or question.expiresAt > utcnow():
        return False
    if question.default is not None:
        answer, source = question.default, "default"
        note = f"No answer in time; using the default: {question.default}"
    else:
        answer, source = "", "timeout"
        note = "The question timed out without an answer."
    if not state.resolve_question(answer, source=source, question_id=question.id):
        return False
    state.system_message(note, traceId=question.traceId)
    dispatch.wake(runtime)
    return True
