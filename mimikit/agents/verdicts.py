"""A yes-or-no question put to a role's model on its own, its answer held to "yes" or "no":
a short request, where a small model judges what it cannot judge inside its long prompt.

Where answers are held to a schema, the answer is one object of that choice; elsewhere the
model makes one call whose one argument is the choice. One try: None when there is no verdict
(the server away or failing, a budget spent, an answer that is not one), and the caller goes
on as it did before anything judged.
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
TOOL = {"type": "function", "function": {"name": VERDICT, "parameters": SCHEMA,
                                         "description": "Your answer: yes or no."}}
VERDICT_TOKENS = 24  # '{"answer": "yes"}' with the blanks a model puts around it
VERDICT_SECONDS = 120.0  # a slow server reads the short request in seconds; its queue may wait


def verdict(runtime: Runtime, role_name: str, trace_id: str | None, asked: str) -> bool | None:
    """The model of ``role_name`` on ``asked``: True for yes, False for no, None for none."""
    try:
        said = _said(runtime, role_name, trace_id, asked)
    except (MimikitError, ValueError, KeyError, IndexError, TypeError) as error:
        log.warning("no verdict on %r: %s", asked[:120], error)
        return None
    return {"yes": True, "no": False}.get(said)


def _said(runtime: Runtime, role_name: str, trace_id: str | None, asked: str) -> str:
    ctx = ToolContext(runtime=runtime, role=role_name, trace_id=trace_id)
    model = runtime.settings.model_for(role_name)
    meter = metered(runtime, ctx, model, RunRecord(role=role_name, model=model,
                                                   traceId=trace_id))
    messages = [{"role": "user", "content": asked}]
    deadline = time.monotonic() + min(VERDICT_SECONDS, runtime.settings.llm_timeout)
    if answer_path(runtime, role_name) == "constrained":
        completion = meter.chat(model, messages, schema=SCHEMA, max_tokens=VERDICT_TOKENS,
                                deadline=deadline, retries=0)
        return str(json.loads(completion.content or "")[VERDICT])
    completion = meter.chat(model, messages, [TOOL], deadline=deadline, retries=0,
                            max_tokens=VERDICT_TOKENS * 2, tool_choice={
                                "type": "function", "function": {"name": VERDICT}})
    call = read_answer(completion, [VERDICT]).calls[0]
    return str(json.loads(call.arguments)[VERDICT])
