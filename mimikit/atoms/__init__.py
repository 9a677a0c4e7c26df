"""Condition atoms: each kind of atom is one module filling in ``base.AtomKind``.

``ATOMS`` holds every kind by its ``type``; a condition's atoms are validated, indexed,
evaluated and retired through it (``models.Atom``, ``scheduling.conditions``,
``scheduling.triggers``, ``scheduling.retirement``), never by a list of kinds of their own. A
new kind is a module here, its line in ``KINDS`` below and a line in the Planner's prompt
(``prompts/agents/planner/tools.md``); ``register`` adds one at run time.
"""

from __future__ import annotations

from mimikit.atoms import file_changed, file_exists, llm_eval, task_done, task_failed
from mimikit.atoms.base import AtomKind
from mimikit.exceptions import InvalidValue

KINDS = (file_changed.KIND, file_exists.KIND, task_done.KIND, task_failed.KIND, llm_eval.KIND)
ATOMS: dict[str, AtomKind] = {kind.name: kind for kind in KINDS}


def register(kind: AtomKind) -> AtomKind:
    """Add a kind of atom (a name already taken is refused)."""
    if kind.name in ATOMS or kind.name in ("and", "or"):
        raise InvalidValue(f"a condition type {kind.name!r} exists already; choose another name")
    ATOMS[kind.name] = kind
    return kind
