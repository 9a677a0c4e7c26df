"""A trigger's condition: its atoms, checked, evaluated three-valued and short-circuit,
deterministic parts first.

Each atom says, through its kind (``mimikit.atoms``), whether something happened that this
trigger has not yet acted on; ``and`` / ``or`` follow Kleene logic and look at their
deterministic children first, so an ``llm_eval`` is only asked for when the deterministic parts
cannot decide. ``Context`` is what the atoms of one trigger read: results, the files under the
work dir, the marks of what the trigger last acted on, verdicts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from mimikit import globs
from mimikit.atoms import ATOMS
from mimikit.atoms.base import AtomKind, Evaluation, Watch
from mimikit.exceptions import InvalidValue
from mimikit.models import AllOf, AnyOf, Atom, Condition, Task
from mimikit.store.runtime import Runtime

_CONDITION: TypeAdapter[Any] = TypeAdapter(Condition)
RECENT_RUNS_CHECKED = 20  # a finished trigger's latest runs that could still report
__all__ = ["Context", "Evaluation", "FileScanner", "atoms", "check", "evaluate", "settled",
           "task_refs", "watches"]


def atoms(condition: Any, path: str = "c") -> Iterator[tuple[str, Atom]]:
    """Every atom of a condition with its path (``c``, ``c.0``, ``c.1.0`` ...)."""
    if isinstance(condition, AllOf | AnyOf):
        for index, child in enumerate(condition.conditions):
            yield from atoms(child, f"{path}.{index}")
    else:
        yield path, condition


def kind(atom: Atom) -> AtomKind:
    """The kind of ``atom``.

    Raises:
        InvalidValue: A stored atom of a kind this version does not know.
    """
    found = ATOMS.get(atom.type)
    if found is None:
        raise InvalidValue(f"condition type {atom.type!r} is unknown to this version; use one "
                           f"of {', '.join(ATOMS)}")
    return found


def params(atom: Atom) -> Any:
    """The params of ``atom`` as its kind's model."""
    return kind(atom).parse(atom.params)


def task_refs(condition: Any) -> list[str]:
    """The task ids its atoms reference, in condition order."""
    refs = (ref for _, atom in atoms(condition) for ref in kind(atom).refs(params(atom)))
    return list(dict.fromkeys(refs))


def watches(condition: Any) -> set[Watch]:
    """What the condition waits on: task results, files, ``llm_eval`` verdicts."""
    return {kind(atom).watch for _, atom in atoms(condition)}


def settled(condition: Any, ctx: Context) -> bool:
    """True when every atom of ``condition`` can never change again (e.g. it rests only on
    tasks finished for good); files and verdicts can always change."""
    return all(kind(atom).settled(params(atom), ctx) for _, atom in atoms(condition))


class CheckContext:
    """What checking a condition's atoms uses: the work dir and the known task ids."""

    def __init__(self, runtime: Runtime, known_ids: Iterable[str] = ()) -> None:
        self.runtime = runtime
        self.work_dir = runtime.settings.work_dir
        self.known = set(known_ids)

    def knows_task(self, ref: str) -> bool:
        return ref in self.known or self.runtime.tasks.get(ref) is not None


def check(condition: Any, checker: CheckContext) -> Any:
    """``condition`` with each atom's params as its kind checks them (paths made relative).

    Raises:
        InvalidValue: An atom's params break a rule (the message says which, and the fix).
    """
    if condition is None:
        return None
    if isinstance(condition, dict):  # as written (``atoms.tree.ConditionArg``)
        condition = _CONDITION.validate_python(condition)
    if isinstance(condition, AllOf | AnyOf):
        children = [check(child, checker) for child in condition.conditions]
        return condition.model_copy(update={"conditions": children})
    checked = kind(condition).check(params(condition), checker)
    return condition.model_copy(update={"params": checked.model_dump(exclude_none=True)})


class FileScanner:
    """Fingerprints of globs under the work dir, computed once per pass."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._cache: dict[str, str] = {}

    def fingerprint(self, pattern: str) -> str:
        """``""`` when nothing matches, else a hash of the matching paths, mtimes and sizes."""
        if pattern not in self._cache:
            self._cache[pattern] = self._scan(pattern)
        return self._cache[pattern]

    def _scan(self, pattern: str) -> str:
        lines = []
        for path in globs.matches(self.root, globs.check(pattern, self.root)):
            try:
                stat = path.stat()
            except OSError:  # vanished between listing and stat: it no longer matches
                continue
            lines.append(f"{path.relative_to(self.root)}\t{stat.st_mtime_ns}\t{stat.st_size}")
        if not lines:
            return ""
        return hashlib.sha1("\n".join(sorted(lines)).encode()).hexdigest()[:20]


class Context:
    """What the atoms of one trigger read (the ``atoms.base.Reader`` of a trigger)."""

    def __init__(self, runtime: Runtime, trigger: Task, files: FileScanner | None = None,
                 routed: dict[str, Any] | None = None) -> None:
        self.runtime = runtime
        self.trigger = trigger
        self.trigger_id = trigger.id
        # The result being routed now, under its task id and its trigger id: judged by itself,
        # not by the latest result stored under the id (which a concurrent run may replace).
        self.routed = routed or {}
        self.files = files or FileScanner(runtime.settings.work_dir)
        # What happened before the trigger last fired, or while it was paused, is acted on.
        marks = [t for t in (trigger.lastTriggeredAt, trigger.resumedAt) if t is not None]
        self.since: datetime | None = max(marks) if marks else None
        self._marks: dict[str, str] | None = None

    def result_of(self, ref: str) -> tuple[Any, bool]:
        routed = self.routed.get(ref)
        if routed is not None:
            return routed, True
        return self.runtime.tasks.result(ref), False

    def fingerprint(self, pattern: str) -> str:
        return self.files.fingerprint(pattern)

    def file_mark(self, path: str, current: str) -> str | None:
        if self._marks is None:
            self._marks = self.runtime.triggers.file_marks(self.trigger.id)
        if path not in self._marks:  # a trigger stored before baselines were noted at install
            self.runtime.triggers.baseline(self.trigger.id, {path: current})
            self._marks[path] = current
            return None
        return self._marks[path]

    def verdict(self, path: str) -> dict[str, Any] | None:
        return self.runtime.triggers.verdict(f"{self.trigger.id}:{path}")

    def settled(self, ref: str) -> bool:
        task = self.runtime.tasks.get(ref)
        if task is None:
            return True
        if not task.finished:
            return False
        if not task.is_trigger:
            return True
        # A finished trigger still reports through its latest runs that are still going.
        fired = [e["firedTaskId"] for e in self.runtime.tasks.log_of(ref)
                 if e.get("type") == "trigger_fired" and e.get("firedTaskId")]
        runs = self.runtime.tasks.by_id(fired[-RECENT_RUNS_CHECKED:])
        return all(run.finished for run in runs)

    def file_marks(self) -> dict[str, str]:
        """What each atom with a mark acts on now (the fingerprint of its files): noted when the
        trigger fires, and as the baseline at install (whichever sibling decides first)."""
        marks = ((path, kind(atom).mark(params(atom), self))
                 for path, atom in atoms(self.trigger.condition))
        return {path: mark for path, mark in marks if mark is not None}


def evaluate(condition: Any, ctx: Context, path: str = "c") -> Evaluation:
    """The value of ``condition`` for ``ctx.trigger`` (None: needs an ``llm_eval`` verdict)."""
    if isinstance(condition, AllOf | AnyOf):
        return _composite(condition, ctx, path)
    return kind(condition).evaluate(params(condition), path, ctx)


def _composite(condition: AllOf | AnyOf, ctx: Context, path: str) -> Evaluation:
    decisive = isinstance(condition, AnyOf)  # the child value that decides at once
    children = list(enumerate(condition.conditions))
    judged = [c for c in children if "llm" in watches(c[1])]
    order = [c for c in children if c not in judged] + judged
    evidence: list[str] = []
    pending: list[tuple[str, str]] = []
    unknown = False
    for index, child in order:
        result = evaluate(child, ctx, f"{path}.{index}")
        if result.value is decisive:
            return Evaluation(decisive, result.evidence)
        if result.value is None:
            unknown = True
            pending += result.pending
        else:
            evidence += result.evidence
    if unknown:
        return Evaluation(None, evidence, pending)
    return Evaluation(not decisive, evidence)
