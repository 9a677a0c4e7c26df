"""The scheduling side of the batched ``llm_eval``: which semantic conditions to judge, how they
are listed for the judge, and what its verdicts do.

It collects the ``llm_eval`` atoms of triggers whose condition is undecided without them, that
are not cooling down and not already under evaluation (``holding``). Verdicts are kept where the
conditions read them and fire the satisfied triggers; the Teller is never woken by them. The
judge itself is an agent (``agents.llm_eval``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from mimikit.exceptions import InvalidValue
from mimikit.models import utcnow
from mimikit.scheduling import conditions, triggers
from mimikit.scheduling.triggers import cooling_until
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.llm_eval")
_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)


def pending_conditions(runtime: Runtime) -> list[dict[str, str]]:
    """The ``llm_eval`` atoms to judge now: ``[{id, prompt, triggerId}]``."""
    ids = runtime.triggers.watching("llm")
    if not ids:
        return []
    now = utcnow()
    busy = runtime.triggers.judging()
    found: list[dict[str, str]] = []
    for trigger in runtime.tasks.by_id(ids):
        if trigger.finished or trigger.condition is None:
            runtime.triggers.unwatch("llm", trigger.id)
            continue
        if trigger.paused:
            continue
        if busy.get(trigger.id, 0) > now.timestamp():
            continue
        if cooling_until(trigger, now) is not None:
            continue
        evaluation = triggers.guarded(
            runtime, trigger.id, "llm_eval collection",
            partial(conditions.evaluate, trigger.condition, conditions.Context(runtime, trigger)),
            None)
        if evaluation is None:
            continue
        if evaluation.value is True:  # decided without the LLM (e.g. a cooldown just ended)
            triggers.evaluate(runtime, trigger.id, cause="llm_eval batch", trigger=trigger)
        elif evaluation.value is None:
            found += [{"id": f"{trigger.id}:{path}", "prompt": prompt, "triggerId": trigger.id}
                      for path, prompt in evaluation.pending]
    return found


def render(conditions_: list[dict[str, str]]) -> str:
    """The user message of a batch: the conditions as a JSON list of ``{id, prompt}``."""
    listed = [{"id": c["id"], "prompt": c["prompt"]} for c in conditions_]
    return ("Judge each of these conditions, then call submit_verdicts once.\n\n```json\n"
            + json.dumps(listed, ensure_ascii=False, indent=1) + "\n```")


def parse(prompt: str) -> list[dict[str, str]]:
    """The conditions listed in a batch task's prompt (the inverse of ``render``)."""
    match = _BLOCK.search(prompt)
    if not match:
        raise InvalidValue("the llm_eval task prompt has no ```json condition list")
    items: list[dict[str, str]] = json.loads(match.group(1))
    for item in items:
        item["triggerId"] = item["id"].rsplit(":", 1)[0]
    return items


def store_verdicts(runtime: Runtime, verdicts: list[dict[str, Any]]) -> None:
    """Keep each verdict (with its time) where the conditions' ``llm_eval`` atoms read it."""
    at = utcnow().isoformat()
    mapping = {v["id"]: {"satisfied": bool(v["satisfied"]), "at": at, "reason": v.get("reason")}
               for v in verdicts}
    runtime.triggers.keep_verdicts(mapping)
    runtime.events.log("llm_eval_verdicts", count=len(mapping),
                      satisfied=sum(1 for v in verdicts if v["satisfied"]))


@contextmanager
def holding(runtime: Runtime, trigger_ids: list[str], seconds: float) -> Iterator[None]:
    """Keep these triggers out of other batches while one judges them (at most ``seconds``)."""
    runtime.triggers.hold(trigger_ids, seconds)
    try:
        yield
    finally:
        runtime.triggers.release(trigger_ids)


def fire_satisfied(runtime: Runtime, trigger_ids: list[str]) -> list[str]:
    """Fire the triggers whose conditions hold now that the verdicts are in."""
    return [tid for tid in trigger_ids
            if triggers.evaluate(runtime, tid, cause="llm_eval verdict")]
