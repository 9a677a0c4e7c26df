"""Whether a message typed in the chat box while a question is pending answers it: asked of
the Teller's model on its own (``agents.verdicts``), the question and the message side by side.

Asked inside the Teller's turn (a ``new_request`` field beside its reply), the 1.5B model took
each of five new requests typed after a question for its answer ("cancel the water reminder"
after "What is your favorite package manager?"), in every wording of the field tried; asked
alone, it told 29 of 30 pairs apart, and took none of the new requests for an answer
(bench/README.md). A message judged no answer is a message: the pass takes it as one, and its
question is asked again once the pass is over.
"""

from __future__ import annotations

from mimikit.agents.verdicts import verdict
from mimikit.conversation.question import is_option
from mimikit.memory.tokenize import has_chinese
from mimikit.store.inbox import TYPED, AnswerItem, InboxItem, InputItem
from mimikit.store.runtime import Runtime

SHORT_ANSWER_WORDS = 2
ASKED = ('You asked: "{question}"\nThe user then wrote: "{typed}"\n'
         "Is what the user wrote an answer to your question?")


def judged(runtime: Runtime, items: list[InboxItem], trace_id: str | None
           ) -> tuple[list[InboxItem], list[AnswerItem]]:
    """``items`` with each answer typed in the chat box that does not answer its question
    taken as the message it is, and those answers (their questions are to be asked again)."""
    kept: list[InboxItem] = []
    reopened: list[AnswerItem] = []
    for item in items:
        if isinstance(item, AnswerItem) and item.source == TYPED and item.message and \
                not answers_question(runtime, item, trace_id):
            kept.append(InputItem(id=item.id, traceId=item.traceId, message=item.message))
            reopened.append(item)
        else:
            kept.append(item)
    return kept, reopened


def answers_question(runtime: Runtime, item: AnswerItem, trace_id: str | None) -> bool:
    """Whether the typed ``item.answer`` answers ``item.question``: one of the question's
    options does, and a word or two (in a script with spaces between words); else the model
    says, and where it cannot say, it does (as a message typed there did before anything
    judged it)."""
    if is_option(item.options, item.answer):
        return True
    said = item.answer.strip()
    if not has_chinese(said) and len(said.split()) <= SHORT_ANSWER_WORDS:
        return True  # "teal", "staging please": not worth a request
    answers = verdict(runtime, "teller", trace_id,
                      ASKED.format(question=item.question, typed=item.answer))
    runtime.events.log("typed_answer_judged", traceId=item.traceId, answers=answers)
    return answers is not False
