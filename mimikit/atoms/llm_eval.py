"""``llm_eval``: a sentence an LLM judges true. A satisfied verdict newer than the last firing
makes it true; otherwise it is unknown and waits for the batched evaluation (every
``LLM_EVAL_INTERVAL``), which is only asked when the deterministic parts cannot decide."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from mimikit.atoms.base import AtomKind, Evaluation, Params, Reader


class Judged(Params):
    prompt: str = Field(min_length=1, max_length=4000,
                        description="a statement to judge true or false")


def evaluate(params: Judged, path: str, reader: Reader) -> Evaluation:
    verdict = reader.verdict(path)
    if verdict and verdict.get("satisfied"):
        at = datetime.fromisoformat(verdict["at"])
        if reader.since is None or at > reader.since:
            return Evaluation(True, [f"{reader.trigger_id}:{path}@{verdict['at']}"])
    return Evaluation(None, [], [(path, params.prompt)])


KIND = AtomKind(name="llm_eval", params=Judged, watch="llm", evaluate=evaluate)
