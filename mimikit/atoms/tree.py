"""A condition as a model or a person writes it: checked against the kinds of atoms there
are, and described to models as JSON Schema (one branch per kind).

``ConditionArg`` is the type of a ``condition`` argument (the Planner's ``delegate`` and
``schedule``, a trigger's edit, the API); what it accepts is stored as
``models.Condition``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationError
from pydantic.json_schema import JsonSchemaValue

from mimikit.atoms import ATOMS
from mimikit.exceptions import InvalidValue
from mimikit.models import check_condition_size

GROUPS = ("and", "or")


def checked(value: Any, where: str = "condition") -> dict[str, Any]:
    """``value`` as a condition tree whose every atom is of a known kind with valid params.

    Raises:
        InvalidValue: Naming where in the tree (``condition.conditions.1.params.taskId``) and
            what to write instead.
    """
    if not isinstance(value, dict):
        raise InvalidValue(f"{where} must be an object with 'type', got {_shown(value)}")
    kind = value.get("type")
    if kind in GROUPS:
        children = value.get("conditions")
        if not isinstance(children, list) or not children:
            raise InvalidValue(f"{where}: a {kind!r} needs 'conditions', a list of at least "
                               "one condition")
        extra = sorted(set(value) - {"type", "conditions"})
        if extra:
            raise InvalidValue(f"{where}: unknown fields {extra}; a {kind!r} has only 'type' "
                               "and 'conditions'")
        return {"type": kind, "conditions": [checked(child, f"{where}.conditions.{index}")
                                             for index, child in enumerate(children)]}
    atom = ATOMS.get(kind) if isinstance(kind, str) else None
    if atom is None:
        known = ", ".join([*GROUPS, *ATOMS])
        raise InvalidValue(f"{where}.type: unknown condition type {_shown(kind)}; use one of "
                           f"{known}")
    extra = sorted(set(value) - {"type", "params"})
    if extra:
        raise InvalidValue(f"{where}: unknown fields {extra}; a condition atom has only 'type' "
                           "and 'params'")
    try:
        params = atom.params.model_validate(value.get("params") or {})
    except ValidationError as error:
        problems = "; ".join(
            f"{where}.params.{'.'.join(map(str, e['loc'])) or ''}: {e['msg']}".replace(". :", ":")
            for e in error.errors())
        raise InvalidValue(f"{problems} (a {kind} condition)") from None
    return {"type": kind, "params": params.model_dump(exclude_none=True)}


def schema() -> JsonSchemaValue:
    """The JSON Schema of a condition, compact (it goes with every Planner request): one
    object whose ``type`` is a kind of atom (with ``params``) or ``and``/``or`` (with
    ``conditions``); each kind's params are named once, in the description. What is sent is
    checked in full by ``checked``."""
    kinds = "; ".join(f"{kind.name} {{{', '.join(kind.params.model_fields)}}}"
                      for kind in ATOMS.values())
    return {"type": "object", "required": ["type"],
            "description": f"an atom {{type, params}} or a group {{type: and|or, conditions}}; "
                           f"atom params by type: {kinds}",
            "properties": {"type": {"enum": [*GROUPS, *ATOMS]},
                           "params": {"type": "object"},
                           "conditions": {"type": "array", "items": {"type": "object"},
                                          "description": "and/or only: the conditions"}}}


def _shown(value: Any) -> str:
    return repr(value)[:80]


class _Schema:
    """Builds the schema when it is asked for (a kind registered later is described too)."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> JsonSchemaValue:
        return schema()


def checked_tree(value: Any) -> dict[str, Any]:
    """``checked``, after the tree's size is bounded (``models.check_condition_size``)."""
    return checked(check_condition_size(value))


ConditionArg = Annotated[dict[str, Any], BeforeValidator(checked_tree), _Schema()]
__all__ = ["ConditionArg", "checked", "schema"]
