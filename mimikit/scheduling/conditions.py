"""Evaluating a trigger's condition: three-valued, short-circuit, deterministic parts first.

Every atom says whether something happened that this trigger has not yet acted on:

- ``task_done`` / ``task_failed``: the referenced task's latest result (a trigger id stands for
  its latest fired task) has that status and completed after the trigger last fired;
- ``file_changed``: the fingerprint (paths, mtimes, sizes) of the files matching the glob differs
  from the one recorded when the trigger last fired, or at install (the baseline, recorded for
  every file atom at install, whatever its siblings);
- ``file_exists``: some file matches now (a firing is claimed once per evidence, so the same
  files do not fire a lone ``file_exists`` twice);
- ``llm_eval``: a satisfied verdict newer than the last firing; otherwise unknown (``None``),
  which makes the condition pending for the batched evaluation.

``and`` / ``or`` follow Kleene logic and look at their deterministic children first, so an
``llm_eval`` is only asked for when the deterministic parts cannot decide.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mimikit.models import (
    AllOf,
    AnyOf,
    FileChanged,
    FileExists,
    LlmEval,
    Task,
    TaskDone,
    TaskFailed,
)
from mimikit.scheduling.validation import inside_work_dir
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime

MAX_MATCHES = 20_000
_GLOB_CHARS = set("*?[")


@dataclass
class Evaluation:
    """The value of a condition, what it rests on, and the semantic atoms it still needs."""

    value: bool | None
    evidence: list[str] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)

    def digest(self) -> str:
        """A short stable name of the evidence (names one occurrence of a firing)."""
        raw = "\n".join(sorted(set(self.evidence)))
        return hashlib.sha1(raw.encode()).hexdigest()[:16]


def atoms(condition: Any, path: str = "c") -> Iterator[tuple[str, Any]]:
    """Every atom of a condition with its path (``c``, ``c.0``, ``c.1.0`` ...)."""
    if isinstance(condition, AllOf | AnyOf):
        for index, child in enumerate(condition.conditions):
            yield from atoms(child, f"{path}.{index}")
    else:
        yield path, condition


def task_refs(condition: Any) -> list[str]:
    """The task ids referenced by ``task_done`` / ``task_failed`` atoms, in condition order."""
    refs = (atom.params.taskId for _, atom in atoms(condition)
            if isinstance(atom, TaskDone | TaskFailed))
    return list(dict.fromkeys(refs))


def has_files(condition: Any) -> bool:
    return any(isinstance(atom, FileChanged | FileExists) for _, atom in atoms(condition))


def has_llm(condition: Any) -> bool:
    return any(isinstance(atom, LlmEval) for _, atom in atoms(condition))


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
        for path in self._matches(pattern):
            try:
                stat = path.stat()
            except OSError:  # vanished between listing and stat: it no longer matches
                continue
            lines.append(f"{path.relative_to(self.root)}\t{stat.st_mtime_ns}\t{stat.st_size}")
        if not lines:
            return ""
        return hashlib.sha1("\n".join(sorted(lines)).encode()).hexdigest()[:20]

    def _matches(self, pattern: str) -> list[Path]:
        relative = inside_work_dir(pattern, self.root)  # ValueError when it leaves the root
        if not _GLOB_CHARS & set(relative):
            candidate = self.root / relative
            return [candidate] if candidate.is_file() else []
        found = []
        for path in self.root.glob(relative):
            if path.is_file():
                found.append(path)
                if len(found) >= MAX_MATCHES:
                    break
        return found


class Context:
    """What the atoms of one trigger read: results, file marks, verdicts."""

    def __init__(self, runtime: Runtime, trigger: Task, files: FileScanner | None = None,
                 routed: dict[str, Any] | None = None) -> None:
        self.runtime = runtime
        self.trigger = trigger
        # The result being routed now, under its task id and its trigger id: judged by itself,
        # not by the latest result stored under the id (which a concurrent run may replace).
        self.routed = routed or {}
        self.files = files or FileScanner(runtime.settings.work_dir)
        # What happened before the trigger last fired, or while it was paused, is acted on.
        marks = [t for t in (trigger.lastTriggeredAt, trigger.resumedAt) if t is not None]
        self.since: datetime | None = max(marks) if marks else None
        self._seen: dict[str, str] | None = None
        self.observed: dict[str, str] = {}

    def seen(self) -> dict[str, str]:
        if self._seen is None:
            raw = self.runtime.redis.hgetall(self.runtime.keys.file_seen(self.trigger.id))
            self._seen = {as_text(k): as_text(v) for k, v in raw.items()}
        return self._seen

    def task_atom(self, atom: TaskDone | TaskFailed) -> tuple[bool, str]:
        ref = atom.params.taskId
        routed = self.routed.get(ref)
        result = routed or self.runtime.state.get_result(ref)
        if result is None:
            return False, f"{ref}:none"
        status = "failed" if result.status == "failed" else "done"
        # A routed result is new by definition (its firing is claimed once, by its digest); a
        # stored one counts only if it came after the trigger last fired.
        fresh = routed is not None or self.since is None or result.completedAt > self.since
        wanted = "done" if isinstance(atom, TaskDone) else "failed"
        return status == wanted and fresh, f"{ref}:{status}@{result.completedAt.isoformat()}"

    def file_atom(self, path: str, atom: FileChanged | FileExists) -> tuple[bool, str]:
        pattern = atom.params.path
        current = self.files.fingerprint(pattern)
        self.observed[path] = current
        last = self.seen().get(path)
        if isinstance(atom, FileChanged):
            if last is None:  # a trigger stored before baselines were recorded at install
                self.runtime.redis.hsetnx(self.runtime.keys.file_seen(self.trigger.id), path,
                                          current)
                self.seen()[path] = current
                return False, f"{pattern}={current}"
            return current != last, f"{pattern}={current}"
        return bool(current), f"{pattern}={current}"

    def llm_atom(self, path: str) -> tuple[bool | None, str]:
        condition_id = f"{self.trigger.id}:{path}"
        raw = self.runtime.redis.hget(self.runtime.keys.verdicts, condition_id)
        if not raw:
            return None, ""
        verdict = json.loads(raw)
        at = datetime.fromisoformat(verdict["at"])
        if verdict.get("satisfied") and (self.since is None or at > self.since):
            return True, f"{condition_id}@{verdict['at']}"
        return None, ""

    def baselines(self) -> dict[str, str]:
        """Every file atom's fingerprint now (recorded at install: what later changes count
        against, whichever sibling decides first)."""
        return {path: self.files.fingerprint(atom.params.path)
                for path, atom in atoms(self.trigger.condition)
                if isinstance(atom, FileChanged | FileExists)}

    def file_marks(self) -> dict[str, str]:
        """The fingerprints to record when the trigger fires (its file atoms acted on)."""
        condition = self.trigger.condition
        for path, atom in atoms(condition):
            if isinstance(atom, FileChanged | FileExists) and path not in self.observed:
                self.observed[path] = self.files.fingerprint(atom.params.path)
        return dict(self.observed)


def evaluate(condition: Any, ctx: Context, path: str = "c") -> Evaluation:
    """The value of ``condition`` for ``ctx.trigger`` (None: needs an ``llm_eval`` verdict)."""
    if isinstance(condition, AllOf | AnyOf):
        return _composite(condition, ctx, path)
    if isinstance(condition, TaskDone | TaskFailed):
        value, evidence = ctx.task_atom(condition)
        return Evaluation(value, [evidence])
    if isinstance(condition, FileChanged | FileExists):
        value, evidence = ctx.file_atom(path, condition)
        return Evaluation(value, [evidence])
    llm_value, evidence = ctx.llm_atom(path)
    if llm_value is None:
        return Evaluation(None, [], [(path, condition.params.prompt)])
    return Evaluation(True, [evidence])


def _composite(condition: AllOf | AnyOf, ctx: Context, path: str) -> Evaluation:
    decisive = isinstance(condition, AnyOf)  # the child value that decides at once
    children = list(enumerate(condition.conditions))
    order = ([c for c in children if not has_llm(c[1])] + [c for c in children if has_llm(c[1])])
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
