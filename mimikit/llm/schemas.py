"""A tool's arguments model as the JSON schema a server is sent: plain and compact, with or
without the bounds its arguments are checked against."""

from __future__ import annotations

from typing import Any

# Bounds the arguments are checked against when a call comes in (with a message naming the
# field): sent to the model they only lengthen every prompt.
_CHECKED_NOT_SENT = frozenset({"maxLength", "minLength", "maxItems", "minItems", "maximum",
                               "minimum", "exclusiveMaximum", "exclusiveMinimum",
                               "additionalProperties", "pattern"})
# Keywords pydantic writes that are no JSON Schema (a bound on an annotated type).
_NOT_JSON_SCHEMA = frozenset({"gt", "ge", "lt", "le", "discriminator"})


def clean_schema(node: Any, keep_bounds: bool = False) -> Any:
    """Make pydantic's schema plain, compact JSON Schema that every OpenAI-compatible server
    accepts and a model reads quickly.

    Drops ``title`` noise (but keeps a property named ``title``), ``default: null`` and, unless
    ``keep_bounds`` (a schema the server holds answers to), the bounds the arguments are
    checked against anyway (``_CHECKED_NOT_SENT``); an optional field's ``anyOf [X, null]`` is
    just ``X``; a discriminated ``oneOf`` becomes ``anyOf``.
    """
    if isinstance(node, list):
        return [clean_schema(item, keep_bounds) for item in node]
    if not isinstance(node, dict):
        return node
    node = _without_null(node)
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if (key == "title" and isinstance(value, str)) or key in _NOT_JSON_SCHEMA or \
                (key in _CHECKED_NOT_SENT and not keep_bounds):
            continue
        if key == "default" and value is None:
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            cleaned[key] = {name: clean_schema(schema, keep_bounds)
                            for name, schema in value.items()}
        else:
            cleaned["anyOf" if key == "oneOf" else key] = clean_schema(value, keep_bounds)
    return cleaned


def _without_null(node: dict[str, Any]) -> dict[str, Any]:
    """``{anyOf: [X, {type: null}], ...rest}`` as ``{...X, ...rest}`` (the field is optional)."""
    branches = node.get("anyOf")
    if not isinstance(branches, list):
        return node
    kept = [branch for branch in branches if branch != {"type": "null"}]
    if len(kept) != 1 or len(kept) == len(branches) or not isinstance(kept[0], dict):
        return node
    rest = {key: value for key, value in node.items() if key != "anyOf"}
    return {**kept[0], **rest}
