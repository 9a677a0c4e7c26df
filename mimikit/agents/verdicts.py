"""A short question put to a role's model on its own, where a small model judges what it
cannot judge inside its long prompt: a yes or no (``verdict``), or a few words copied from the
lines it is shown (``copied``).

Where answers are held to a schema, the answer is one object of that shape; elsewhere the
model makes one call whose one argument is the answer. One try: None when there is none (the
server away or failing, a budget spent, an answer that is not one), and the caller goes on as
it did before anything judged.
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
from mimikit.store.runtime import Runtime
from mimikit.tools.context import ToolContext

log = logging.getLogger("mimikit.agents")

VERDICT = "answer"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {VERDICT: {"enum": ["yes", "no"]}},
                          "required": [VERDICT], "additionalProperties": False}
COPY_CHARS = 60  # a name, a date, a short phrase: what answers a question in a line
COPY_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {VERDICT: {"type": "string", "maxLength": COPY_CHARS}},
    "required": [VERDICT], "additionalProperties": False}
VERDICT_TOKENS = 24  # '{"answer": "yes"}' with the blanks a model puts around it
COPY_TOKENS = 48
VERDICT_SECONDS = 120.0  # a slow server reads the short request in seconds; its queue may wait


def verdict(runtime: Runtime, role_name: str, trace_id: str | None, asked: str) -> bool | None:
    """The model of ``role_name`` on ``asked``: True for yes, False for no, None for none."""
    said = _said(runtime, role_name, trace_id, asked, SCHEMA, VERDICT_TOKENS, "yes or no")
    return {"yes": True, "no": False}.get(said) if isinstance(said, str) else None


def copied(runtime: Runtime, role_name: str, trace_id: str | None, asked: str) -> str | None:
    """The words the model of ``role_name`` gives for ``asked`` ('' for none), or None when
    it gave no answer."""
    said = _said(runtime, role_name, trace_id, asked, COPY_SCHEMA, COPY_TOKENS, "words copied")
    return said.strip() if isinstance(said, str) else None


def _said(runtime: Runtime, role_name: str, trace_id: str | None, asked: str,
          schema: dict[str, Any], tokens: int, kind: str) -> Any:
    try:
        return _answer(runtime, role_name, trace_id, asked, schema, tokens, kind)
    except (MimikitError, ValueError, KeyError, IndexError, TypeError) as error:
        log.warning("no answer to %r: %s", asked[:120], error)
        return None


def _answer(runtime: Runtime, role_name: str, trace_id: str | None, asked: str,
            schema: dict[str, Any], tokens: int, kind: str) -> Any:
    ctx = ToolContext(runtime=runtime, role=role_name, trace_id=trace_id)
    model = runtime.settings.model_for(role_name)
    meter = metered(runtime, ctx, model, RunRecord(role=role_name, model=model,
                                                   traceId=trace_id))
    messages = [{"role": "user", "content": asked}]
    deadline = time.monotonic() + min(VERDICT_SECONDS, runtime.settings.llm_timeout)
    if answer_path(runtime, role_name) == "constrained":
        completion = meter.chat(model, messages, schema=schema, max_tokens=tokens,
                                deadline=deadline, retries=0)
        return json.loads(completion.content or "")[VERDICT]
    tool = {"type": "function", "function": {"name": VERDICT, "parameters": schema,
                                             "description": f"Your answer: {kind}."}}
    completion = meter.chat(model, messages, [tool], deadline=deadline, retries=0,
                            max_tokens=tokens * 2, tool_choice={
                                "type": "function", "function": {"name": VERDICT}})
    call = read_answer(completion, [VERDICT]).calls[0]
    return json.loads(call.arguments)[VERDICT]
