"""What a condition atom is: one protocol that every kind of atom fills in.

An atom kind (``AtomKind``) says what its ``params`` are, what it waits on (``watch``: a
task's result, what the tick looks at, or an ``llm_eval`` verdict, which decides how triggers
are indexed and when they are looked at), which task ids it references (``refs``), how a
person's or a model's params are checked before they are stored (``check``), how it is
evaluated (``evaluate``), what a firing acted on (``mark``: e.g. the fingerprint of the files,
noted when the trigger fires and as the baseline at install), and whether it can never change
again (``settled``: then a trigger resting on it alone is retired).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator

# What an atom waits on: a task's result (evaluated when it is routed), something the tick
# looks at (files: evaluated every tick), or an ``llm_eval`` verdict (the batched evaluation).
Watch = Literal["task", "tick", "llm"]


class Params(BaseModel):
    """An atom's parameters: unknown fields are errors the model is told about (but dropped
    from stored data another version wrote)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _drop_unknown_when_stored(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, dict) and info.context and info.context.get("stored"):
            return {key: value for key, value in data.items() if key in cls.model_fields}
        return data


@dataclass
class Evaluation:
    """The value of a condition, what it rests on, and the semantic atoms it still needs
    (``(path, prompt)`` of each ``llm_eval`` atom to judge)."""

    value: bool | None
    evidence: list[str] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)

    def digest(self) -> str:
        """A short stable name of the evidence (names one occurrence of a firing)."""
        raw = "\n".join(sorted(set(self.evidence)))
        return hashlib.sha1(raw.encode()).hexdigest()[:16]


class Reader(Protocol):
    """What evaluating the atoms of one trigger may read (``scheduling.conditions.Context``)."""

    trigger_id: str
    since: datetime | None  # when the trigger last fired or was resumed

    def result_of(self, ref: str) -> tuple[Any, bool]:
        """The latest result of task ``ref`` (None when none), and whether it is the one being
        routed right now."""

    def fingerprint(self, pattern: str) -> str:
        """A hash of the files ``pattern`` matches now ("" when none)."""

    def file_mark(self, path: str, current: str) -> str | None:
        """The fingerprint the atom at ``path`` last acted on (``current`` becomes the baseline
        when there is none yet, and None is returned)."""

    def verdict(self, path: str) -> dict[str, Any] | None:
        """The latest ``llm_eval`` verdict on the atom at ``path``."""

    def settled(self, ref: str) -> bool:
        """True when task ``ref`` will never report another result."""


class Checker(Protocol):
    """What checking an atom's params before they are stored may use."""

    work_dir: Path

    def knows_task(self, ref: str) -> bool:
        """True when ``ref`` is a task id that exists (or is staged in the same plan)."""


def _no_refs(params: Any) -> list[str]:
    return []


def _as_given(params: Any, checker: Checker) -> Any:
    return params


def _never_settled(params: Any, reader: Reader) -> bool:
    return False


def _no_mark(params: Any, reader: Reader) -> str | None:
    return None


@dataclass(frozen=True)
class AtomKind:
    """One kind of condition atom. Its functions take the params as its ``params`` model
    (``parse`` reads them from a stored condition)."""

    name: str
    params: type[Params]
    watch: Watch
    evaluate: Callable[[Any, str, Reader], Evaluation]
    refs: Callable[[Any], list[str]] = _no_refs
    check: Callable[[Any, Checker], Any] = _as_given
    settled: Callable[[Any, Reader], bool] = _never_settled
    mark: Callable[[Any, Reader], str | None] = _no_mark

    def parse(self, params: dict[str, Any]) -> Any:
        """The params of a stored atom as this kind's model."""
        return self.params.model_validate(params, context={"stored": True})
