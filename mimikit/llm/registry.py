"""Tools defined once: name, description, pydantic arguments, allowed roles and handler.

A ``Registry`` offers each role only its tools (as OpenAI function-calling schemas) and runs a
call, turning every failure into an error text the model can act on (never an exception). Which
role may call which tool is declared once, in ``roles``: a tool registered for a role that does
not list it is refused at registration.
The same name may be registered twice for disjoint roles (``delegate`` and ``submit_result``
take different arguments for the Teller, the Planner and the Worker).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from mimikit.exceptions import InvalidValue, LLMUnavailable, MimikitError
from mimikit.llm.schemas import clean_schema
from mimikit.roles import ROLES

logger = logging.getLogger("mimikit.tools")

Handler = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class StopRun:
    """Returned by a handler to end the run after this call; ``value`` becomes ``stopValue``.

    With ``after_batch`` the other calls of the same assistant message still run first (a
    Teller may ``reply`` and ``delegate`` in one message).
    """

    value: Any = None
    after_batch: bool = False


@dataclass(frozen=True)
class Tool:
    """One tool: what the model sees (name, description, args schema) and what runs."""

    name: str
    description: str
    args: type[BaseModel]
    roles: frozenset[str]
    handler: Handler
    alone: bool = False  # ends the run: only valid as the one call of its message
    # Running it again has no further effect (it reads, or its effect is keyed by the call):
    # a call of it that a crash interrupted is run again instead of reported as interrupted.
    idempotent: bool = False
    # In a structured turn (``llm.turns``) the tool's field holds this one argument's value
    # (``reply``: its ``text``), not the arguments object.
    short: str | None = None
    # In a structured turn whose field is held to choices (``TurnShape.choosing``), the field
    # lists one of them or more, a call each (the Planner's ``cancel_task``: held to one id,
    # the 1.5B model canceled one reminder of two for "cancel all my reminders").
    many: bool = False
    # In a structured turn its field is true or false: true calls it with no arguments, the
    # handler taking what it needs from the turn (the Teller's ``delegate``: the user's words).
    flag: bool = False
    # Its result is something the model asked to read (a listing, a search, a file): a
    # finisher written beside it, before that result was read, is not taken.
    reads: bool = False


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one call: ``content`` is what the model reads in the tool message."""

    ok: bool
    content: str
    value: Any = None
    stop: bool = False
    after_batch: bool = False


class Registry:
    """The tools of every role, with the permission matrix enforced on each call.

    Args:
        propagate: Exception types a handler may raise through ``call`` unchanged (e.g. a
            caller's cancellation or Celery's ``SoftTimeLimitExceeded``).
        matrix: Which tools each role may have (``roles.ROLES``); a tool registered for a role
            that does not list it is refused. None: any (a registry for tests).
    """

    def __init__(self, propagate: tuple[type[BaseException], ...] = (),
                 matrix: dict[str, tuple[str, ...]] | None = None) -> None:
        self._tools: dict[tuple[str, str], Tool] = {}
        self._schemas: dict[str, list[dict[str, Any]]] = {}
        self.propagate = propagate
        self.matrix = matrix

    def register(self, tool: Tool) -> Tool:
        """Add a tool; its roles must be known and not already have a tool of that name."""
        unknown = sorted(tool.roles - set(ROLES))
        if unknown or not tool.roles:
            raise InvalidValue(
                f"tool {tool.name!r} has unknown roles {unknown or '(none)'}; "
                f"use some of {sorted(ROLES)}"
            )
        for role in sorted(tool.roles):
            if self.matrix is not None and tool.name not in self.matrix.get(role, ()):
                raise InvalidValue(f"tool {tool.name!r} is not among the {role}'s tools in "
                                 "mimikit/roles.py; add it there first")
        for role in tool.roles:
            if (role, tool.name) in self._tools:
                raise InvalidValue(f"tool {tool.name!r} is already registered for the {role}")
        for role in tool.roles:
            self._tools[(role, tool.name)] = tool
        self._schemas.clear()
        return tool

    def tool(
        self, name: str, *, roles: Iterable[str], description: str | None = None,
        alone: bool = False, idempotent: bool = False, short: str | None = None,
        reads: bool = False, flag: bool = False, many: bool = False,
    ) -> Callable[[Handler], Handler]:
        """Decorator: register ``handler(ctx, args)``; the args model is its annotation.

        The description defaults to the handler's docstring. An ``alone`` tool finishes the
        run and must be the only call of its message (its result is final, so the results of
        calls made beside it would never be seen).
        """

        def decorate(handler: Handler) -> Handler:
            self.register(
                Tool(
                    name=name,
                    description=description or inspect.getdoc(handler) or name,
                    args=_args_model(handler),
                    roles=frozenset(roles),
                    handler=handler,
                    alone=alone,
                    idempotent=idempotent,
                    short=short,
                    many=many,
                    reads=reads,
                    flag=flag,
                )
            )
            return handler

        return decorate

    def get(self, role: str, name: str) -> Tool | None:
        """The tool ``name`` as the role sees it, or None."""
        return self._tools.get((role, name))

    def idempotent(self, role: str, name: str) -> bool:
        """True when the role's tool ``name`` may run again without further effect."""
        tool = self._tools.get((role, name))
        return bool(tool and tool.idempotent)

    def must_be_alone(self, role: str, name: str) -> bool:
        """True when the role's tool ``name`` must be the only call of its message."""
        tool = self._tools.get((role, name))
        return bool(tool and tool.alone)

    def finishers(self, role: str) -> list[str]:
        """The role's tools that finish a run (e.g. ``submit_result``)."""
        return [n for n in self.names_for(role) if self._tools[(role, n)].alone]

    def parameters(self, role: str, name: str) -> frozenset[str]:
        """The argument names of the role's tool ``name`` (none for an unknown tool)."""
        tool = self._tools.get((role, name))
        return frozenset(tool.args.model_fields) if tool else frozenset()

    def reads(self, role: str, name: str) -> bool:
        """True when the role's tool ``name`` answers with something the model must read."""
        tool = self._tools.get((role, name))
        return bool(tool and tool.reads)

    def tools_for(self, role: str, names: Iterable[str] | None = None) -> list[Tool]:
        """The role's tools, in the order of ``names`` (default: sorted by name)."""
        chosen = names if names is not None else self.names_for(role)
        return [self._tools[(role, name)] for name in chosen if (role, name) in self._tools]

    def names_for(self, role: str) -> list[str]:
        """The tool names a role may call, sorted."""
        return sorted(name for (owner, name) in self._tools if owner == role)

    def schemas_for(self, role: str) -> list[dict[str, Any]]:
        """The OpenAI function-calling schemas of the role's tools (built once per role)."""
        if role not in self._schemas:
            self._schemas[role] = [_schema(self._tools[(role, n)]) for n in self.names_for(role)]
        return self._schemas[role]

    def call(self, role: str, name: str, arguments_json: str, ctx: Any) -> ToolOutcome:
        """Validate and run one call; every failure becomes an error text for the model."""
        tool = self._tools.get((role, name))
        if tool is None:
            return _error(self._refusal(role, name))
        parsed = _parse_args(tool, arguments_json)
        if isinstance(parsed, ToolOutcome):
            return parsed
        args, notes = parsed
        outcome = self._run(tool, args, ctx)
        if not notes:
            return outcome
        return dataclasses.replace(outcome, content="\n".join([*notes, outcome.content]))

    def _refusal(self, role: str, name: str) -> str:
        available = ", ".join(self.names_for(role)) or "none"
        if any(tool_name == name for (_, tool_name) in self._tools):
            return (
                f"tool {name!r} is not available to the {ROLES[role].title if role in ROLES else role}; "
                f"available: {available}"
            )
        return f"unknown tool {name!r}; available: {available}"

    def _run(self, tool: Tool, args: BaseModel, ctx: Any) -> ToolOutcome:
        try:
            value = tool.handler(ctx, args)
        except self.propagate:
            raise
        except LLMUnavailable:
            raise
        except MimikitError as error:
            # Deliberate failures (ToolError, NotFound...) already say what went wrong.
            return _error(str(error) or f"{tool.name} failed")
        except Exception as error:
            logger.exception("tool %r raised", tool.name)
            return _error(f"tool {tool.name!r} failed: {type(error).__name__}: {error}")
        if isinstance(value, StopRun):
            return ToolOutcome(ok=True, content=render(value.value), value=value.value, stop=True,
                               after_batch=value.after_batch)
        return ToolOutcome(ok=True, content=render(value), value=value)


def render(value: Any) -> str:
    """The tool message text of a handler's value: strings as-is, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return '{"ok": true}'
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    return json.dumps(value, ensure_ascii=False, default=str)


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(ok=False, content=f"error: {text}")


def _args_model(handler: Handler) -> type[BaseModel]:
    params = list(inspect.signature(handler).parameters.values())
    model = params[1].annotation if len(params) == 2 else None
    if isinstance(model, str):  # postponed annotations: resolve in the handler's module
        model = typing.get_type_hints(handler).get(params[1].name)
    if not (inspect.isclass(model) and issubclass(model, BaseModel)):
        raise TypeError(
            f"handler {handler.__name__!r} must be (ctx, args: SomeModel) with a pydantic "
            "BaseModel annotation on args"
        )
    return model


def _parse_args(tool: Tool, arguments_json: str) -> tuple[BaseModel, list[str]] | ToolOutcome:
    """The call's arguments checked against the tool's model, with a note for each value
    brought within its bound; or the error the model is told."""
    text = (arguments_json or "").strip() or "{}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        near = text[max(error.pos - 20, 0) : error.pos + 20]
        return _error(
            f"the arguments of {tool.name!r} are not valid JSON: {error.msg} at line "
            f"{error.lineno} column {error.colno} (near {near!r}); send one JSON object"
        )
    except RecursionError:
        return _error(f"the arguments of {tool.name!r} nest too deeply to be read; "
                      "send a flatter JSON object")
    if isinstance(data, str) and data.strip().startswith("{"):
        try:  # arguments encoded twice (a JSON string holding the JSON object)
            data = json.loads(data)
        except (json.JSONDecodeError, RecursionError):
            pass
    if not isinstance(data, dict):
        return _error(
            f"the arguments of {tool.name!r} must be a JSON object, not {type(data).__name__}"
        )
    notes: list[str] = []
    try:
        args = tool.args.model_validate(data)
    except ValidationError as error:
        capped = _capped(tool, data, error)
        if capped is None:
            return _error(f"invalid arguments for {tool.name!r}: {_problems(error)}")
        args, data, notes = capped
    copied = _copied_descriptions(tool, data)
    if copied:
        return _error(f"{copied} holds its own description, not a value: write there what "
                      "that description asks for (small models copy the schema; do not)")
    return args, notes


def _capped(tool: Tool, data: dict[str, Any], error: ValidationError,
            ) -> tuple[BaseModel, dict[str, Any], list[str]] | None:
    """The arguments read from ``data`` with each optional number over its most (``timeout:
    600000``, milliseconds meant as seconds; ``priority: 100``) set to that most, that data,
    and a note for the model saying so; None when anything else is wrong, or the call still
    does not hold (it is refused whole)."""
    optional = {name for name, field in tool.args.model_fields.items()
                if not field.is_required()}
    capped, notes = dict(data), []
    for item in error.errors():
        name = item["loc"][0] if len(item["loc"]) == 1 else None
        sent, most = item.get("input"), (item.get("ctx") or {}).get("le")
        if item["type"] != "less_than_equal" or name not in optional or most is None:
            return None
        capped[str(name)] = most
        notes.append(f"note: {name} {json.dumps(sent, default=str)} is over its most, "
                     f"{most}; {most} was used")
    try:
        return tool.args.model_validate(capped), capped, notes
    except ValidationError:
        return None


def _copied_descriptions(tool: Tool, data: dict[str, Any]) -> str:
    """The first field (``'prompt' ('...')``) whose value is its schema description copied."""
    for name, field in tool.args.model_fields.items():
        value = data.get(name)
        if isinstance(value, str) and field.description and \
                _plain(value) == _plain(field.description):
            return f"{name!r} ({value.strip()!r})"
    return ""


def _plain(text: str) -> str:
    """``text`` lowercased, without an article before it or punctuation after it."""
    words = text.strip().lower().rstrip(".:;!").split()
    return " ".join(words[1:] if words[:1] in (["a"], ["an"], ["the"]) else words)


def _problems(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        text = f"{where}: {item['msg']}"
        if item["type"] not in ("missing", "extra_forbidden"):
            text += f" (got {json.dumps(item.get('input'), default=str)[:80]})"
        problems.append(text)
    return "; ".join(problems)


def _schema(tool: Tool) -> dict[str, Any]:
    parameters = clean_schema(tool.args.model_json_schema())
    parameters.setdefault("properties", {})
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    }
