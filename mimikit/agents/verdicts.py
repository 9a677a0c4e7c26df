"""A yes-or-no question put to a role's model on its own, its answer held to "yes" or "no"
(or, more widely, a choice among a few words): a short request, where a small model judges
what it cannot judge inside its long prompt.

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
VERDICTS = ("yes", "no")
VERDICT_TOKENS = 24  # '{"answer": "yes"}' with the blanks a model puts around it
VERDICT_SECONDS = 120.0  # a slow server reads the short request in seconds; its queue may wait


def verdict(runtime: Runtime, role_name: str, trace_id: str | None, asked: str) -> bool | None:
    """The model of ``role_name`` on ``asked``: True for yes, False for no, None for none."""
    said = choice(runtime, role_name, trace_id, asked, VERDICT, VERDICTS)
    return {"yes": True, "no": False}.get(said or "")


def choice(runtime: Runtime, role_name: str, trace_id: str | None, asked: str, name: str,
           options: tuple[str, ...]) -> str | None:
    """The model of ``role_name`` on ``asked``, held to one of ``options`` in its one field
    ``name``; None for none."""
    try:
        said = _said(runtime, role_name, trace_id, asked, name, options)
    except (MimikitError, ValueError, KeyError, IndexError, TypeError) as error:
        log.warning("no verdict on %r: %s", asked[:120], error)
        return None
    return said if said in options else None


def _schema(name: str, options: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"enum": list(options)}},
            "required": [name], "additionalProperties": False}


def _said(runtime: Runtime, role_name: str, trace_id: str | None, asked: str, name: str,
          options: tuple[str, ...]) -> str:
    ctx = ToolContext(runtime=runtime, role=role_name, trace_id=trace_id)
    model = runtime.settings.model_for(role_name)
    meter = metered(runtime, ctx, model, RunRecord(role=role_name, model=model,
                                                   traceId=trace_id))
    messages = [{"role": "user", "content": asked}]
    deadline = time.monotonic() + min(VERDICT_SECONDS, runtime.settings.llm_timeout)
    schema = _schema(name, options)
    tokens = VERDICT_TOKENS + max(len(option) for option in options) // 2
    if answer_path(runtime, role_name) == "constrained":
        completion = meter.chat(model, messages, schema=schema, max_tokens=tokens,
                                deadline=deadline, retries=0)
        return str(json.loads(completion.content or "")[name])
    tool = {"type": "function", "function": {"name": name, "parameters": schema,
                                             "description": "Your answer: one of its values."}}
    completion = meter.chat(model, messages, [tool], deadline=deadline, retries=0,
                            max_tokens=tokens * 2, tool_choice={
                                "type": "function", "function": {"name": name}})
    call = read_answer(completion, [name]).calls[0]
    return str(json.loads(call.arguments)[name])
