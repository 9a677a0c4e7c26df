"""``task_failed``: the referenced task's latest result is ``failed`` and came after the
trigger last fired (the handler's prompt gets the failure's ``error``)."""

from __future__ import annotations

from mimikit.atoms.base import AtomKind, Evaluation, Reader
from mimikit.atoms.tasks import TaskRef, check_ref, evaluate_outcome, ref_settled


def evaluate(params: TaskRef, path: str, reader: Reader) -> Evaluation:
    return evaluate_outcome(params.taskId, "failed", reader)


KIND = AtomKind(name="task_failed", params=TaskRef, watch="task", evaluate=evaluate,
                refs=lambda params: [params.taskId], check=check_ref, settled=ref_settled)
