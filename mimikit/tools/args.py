"""What every tool's arguments share, and the one check of a submitted result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.fields import FieldInfo

from mimikit.durations import Seconds
from mimikit.exceptions import InvalidValue, ToolError
from mimikit.llm.echoes import without_echoes
from mimikit.llm.registry import StopRun
from mimikit.models import check_result, result_type_of

__all__ = ["Args", "Seconds", "finish_with_result"]


# How small models write a value they mean to leave out.
_LEFT_OUT = frozenset({"null", "none", "undefined", "nil", ""})


class Args(BaseModel):
    """Tool arguments: unknown fields are errors the model is told about; an optional field
    sent as null, or as the text "null" or "None", takes its default."""

    model_config = ConfigDict(extra="forbid")
    # Where answers are held to a schema, the ways the arguments may be given, each the fields
    # it must give, the fields of the others left out (none: one object of every field) ...
    alternatives: ClassVar[tuple[tuple[str, ...], ...]] = ()
    # ... and the fields left out of every way: one a validator derives from the others (a
    # schedule's type, from its timing), or one a small model fills with what it is not.
    held_out: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _defaults_where_left_out(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        optional = {name: field for name, field in cls.model_fields.items()
                    if not field.is_required()}
        return {name: value for name, value in data.items()
                if not (name in optional and _left_out(value, optional[name]))}


def _left_out(value: Any, field: FieldInfo) -> bool:
    """Whether ``value`` is how a model writes a value it leaves out: null, "null", "None", or
    a zero where the field must be above zero (``interval: 0`` beside a time of day)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value == 0:
        return any(getattr(bound, "gt", None) == 0 for bound in field.metadata)
    return value is None or (isinstance(value, str) and value.strip().lower() in _LEFT_OUT)


def finish_with_result(args: Any, corrected: Sequence[str] = ()) -> StopRun:
    """End a run with a submitted result, after checking it against its resultType schema.

    ``args`` has ``status``, ``resultType``, ``result`` and ``error``; a problem becomes an
    error text that tells the model what to fix. An error that only repeats how the model's
    answers were corrected during the run (``corrected``: "You answered in plain text...") is
    refused: it says nothing of what went wrong (a tool's error does: "backup.txt already
    exists").
    """
    if "resultType" not in args.model_fields_set and args.result:
        args.resultType = result_type_of(args.result) or args.resultType  # the shape it has
    if args.status == "failed" and not args.error:
        raise ToolError("status failed requires 'error' saying what went wrong")
    if args.error and corrected and not without_echoes(args.error, corrected):
        raise ToolError("'error' only repeats the corrections you were given; say what went "
                        "wrong with the work itself, or do the work and submit it as done")
    if args.status == "done" or args.result:
        try:
            check_result(args.resultType, args.result)
        except InvalidValue as error:
            raise ToolError(f"{error}. Fix the result and call submit_result again.") from None
    return StopRun(args.model_dump(exclude_none=True))
