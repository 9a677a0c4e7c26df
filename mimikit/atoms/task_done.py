"""``task_done``: the referenced task's latest result is ``done`` (or ``needs_input``) and came
after the trigger last fired (a trigger id stands for its latest fired task)."""

from __future__ import annotations

from mimikit.atoms.base import AtomKind, Evaluation, Reader
from mimikit.atoms.tasks import TaskRef, check_ref, evaluate_outcome, ref_settled


def evaluate(params: TaskRef, path: str, reader: Reader) -> Evaluation:
    return evaluate_outcome(params.taskId, "done", reader)


KIND = AtomKind(name="task_done", params=TaskRef, watch="task", evaluate=evaluate,
                refs=lambda params: [params.taskId], check=check_ref, settled=ref_settled)
