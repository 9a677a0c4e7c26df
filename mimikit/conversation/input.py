"""A user message: validated, stored in history and the Teller's inbox, then a Teller wake."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mimikit.conversation.gate import wake
from mimikit.conversation.question import is_answer
from mimikit.models import Message
from mimikit.store.inbox import TYPED
from mimikit.store.runtime import Runtime

MAX_INPUT_CHARS = 32_768


class UserInput(BaseModel):
    """What a user may send: 1 to ``MAX_INPUT_CHARS`` characters of text."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=MAX_INPUT_CHARS)


def post_input(runtime: Runtime, text: str) -> Message:
    """Store a user message in history and the Teller's inbox, then wake the Teller.

    Its id is also its trace id, which follows it through every run and task it causes. While a
    question is pending, a message that may answer it (``question.is_answer``) is its answer,
    typed: the Teller's pass may still find it a new request (``agents.typed_answers``).
    """
    pending = runtime.conversation.question()
    if pending is not None and is_answer(pending, text):
        answered = Message(role="user", text=text, traceId=pending.traceId)
        if runtime.conversation.resolve(text, source=TYPED, question_id=pending.id,
                                         message=answered):
            runtime.conversation.append(answered)
            runtime.events.log("question_answered_in_chat", messageId=answered.id,
                               traceId=pending.traceId)
            wake(runtime)
            return answered
    message = Message(role="user", text=text)
    message.traceId = message.id
    runtime.conversation.append(message, to_inbox=True)
    runtime.events.log("input_received", messageId=message.id, traceId=message.id)
    wake(runtime)
    return message
