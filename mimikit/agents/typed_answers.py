"""Whether a message typed in the chat box while a question is pending answers it: one short
request of its own to the Teller's model, its answer held to "yes" or "no".

Asked inside the Teller's turn (a ``new_request`` field beside its reply), the 1.5B model took
each of five new requests typed after a question for its answer ("cancel the water reminder"
after "What is your favorite package manager?"), in every wording of the field tried; asked
alone, the question and the message side by side, it told 29 of 30 pairs apart, and took none
of the new requests for an answer (bench/README.md). A message judged no answer is a message:
the pass takes it as one, and its question is asked again once the pass is over.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from mimikit.agents.common import answer_path, metered
from mimikit.exceptions import MimikitError
from mimikit.llm.answers import read_answer
from mimikit.llm.record import RunRecord
from mimikit.store.inbox import TYPED, AnswerItem, InboxItem, InputItem
from mimikit.store.runtime import Runtime
from mimikit.tools.context import ToolContext

log = logging.getLogger("mimikit.teller")

ASKED = ('You asked: "{question}"\nThe user then wrote: "{typed}"\n'
         "Is what the user wrote an answer to your question?")
VERDICT = "answer"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {VERDICT: {"enum": ["yes", "no"]}},
                          "required": [VERDICT], "additionalProperties": False}
# Where answers are not held to a schema: the same choice as the one call the model must make.
TOOL = {"type": "function", "function": {"name": VERDICT, "parameters": SCHEMA,
                                         "description": "Whether it answers your question."}}
VERDICT_TOKENS = 16
VERDICT_SECONDS = 120.0  # a slow server reads the short request in seconds; its queue may wait


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
    """Whether the typed ``item.answer`` answers ``item.question``, as the model judges it; one
    of the question's options answers it without asking, and where the model cannot say, it
    answers (as a message typed there did before anything judged it)."""
    said = item.answer.strip().casefold()
    if any(said == option.strip().casefold() for option in item.options or []):
        return True
    try:
        verdict = _verdict(runtime, item, trace_id)
    except (MimikitError, ValueError, KeyError, IndexError, TypeError) as error:
        log.warning("could not judge whether %r answers %r: %s", item.answer[:80],
                    item.question[:80], error)
        return True
    runtime.events.log("typed_answer_judged", traceId=item.traceId, answers=verdict == "yes")
    return verdict != "no"


def _verdict(runtime: Runtime, item: AnswerItem, trace_id: str | None) -> str:
    """The model's "yes" or "no"."""
    ctx = ToolContext(runtime=runtime, role="teller", trace_id=trace_id)
    model = runtime.settings.model_for("teller")
    meter = metered(runtime, ctx, model, RunRecord(role="teller", model=model,
                                                   traceId=trace_id))
    messages = [{"role": "user", "content": ASKED.format(question=item.question,
                                                         typed=item.answer)}]
    deadline = time.monotonic() + min(VERDICT_SECONDS, runtime.settings.teller_timeout)
    if answer_path(runtime, "teller") == "constrained":
        completion = meter.chat(model, messages, schema=SCHEMA, max_tokens=VERDICT_TOKENS,
                                deadline=deadline)
        return str(json.loads(completion.content or "")[VERDICT])
    completion = meter.chat(model, messages, [TOOL], deadline=deadline,
                            max_tokens=VERDICT_TOKENS * 2, tool_choice={
                                "type": "function", "function": {"name": VERDICT}})
    call = read_answer(completion, [VERDICT]).calls[0]
    return str(json.loads(call.arguments)[VERDICT])
