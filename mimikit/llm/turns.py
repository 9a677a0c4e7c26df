"""A role's answer as one JSON object, where the server holds its model to a schema: the
schema built from the role's tools, and the calls an answer of it makes.

Three shapes (``roles.Role.turn``):

- ``turn``: one field per tool, several filled at once (the Teller's turn: what to say, what
  to hand over, what to remember...). A tool that stands for one argument (``Tool.short``:
  ``reply`` is its ``text``) takes that value itself; a flag (``Tool.flag``) is true or false;
  any other takes its arguments object; ``null`` is "not this time". The role's
  ``turn_required`` fields are required, in order, so that a small model decides each; the
  others may be left out.
- ``step``: exactly one call, ``{"write_file": {"path": ..., "content": ...}}``, after the
  role's notes where it has any (a Worker's ``check``).
- ``plan``: one call, and the role's finisher may come with it (it runs after the call
  succeeded): ``{"delegate": {...}, "submit_result": {...}}``, or the finisher alone. Where
  the role names its kinds of answer (``Role.turn_kinds``), each object says first what it
  is, ``{"unknown": "", "kind": "work now", "delegate": ...}`` (its notes before that), and
  the kind decides what follows: the finisher beside a call reports it done, and each status
  of the finisher alone is a kind of its own (``"ask the user"``: ``needs_input``); a kind
  may hold notes filled or empty (one asks only naming what is unknown, and nothing given).

The schema keeps the arguments' own constraints (enums, required fields, small bounds): an
answer that parses is a valid step. Lengths are left to the tools' own checks: a grammar
expands a bound on a length into as many rules.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from mimikit.llm.completion import TextField
from mimikit.llm.registry import Tool
from mimikit.llm.schemas import clean_schema
from mimikit.roles import Kind, Shape

# Bounds a grammar can hold cheaply; larger ones (a text's length) are checked by the tool.
SMALL_BOUND = 64
_LENGTHS = ("maxLength", "minLength", "maxItems", "minItems")


@dataclass(frozen=True)
class TurnShape:
    """How one role answers: its shape, its tools in order, and the fields it must fill."""

    shape: Shape
    tools: tuple[Tool, ...]
    required: tuple[str, ...] = ()
    filled: tuple[str, ...] = ()  # required fields that may not be null
    patterns: tuple[tuple[str, str], ...] = ()  # a text field, and the pattern it must match
    kinds: tuple[Kind, ...] = ()  # a plan's kinds of answer, each named first in its object
    reports: tuple[str, ...] = ()  # the status of a finisher beside a call (its kinds' first)
    notes: tuple[str, ...] = ()  # text fields filled before all others, not read
    set_flags: tuple[str, ...] = ()  # flags of a turn that must be true
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()  # a one-field call, its only values
    text_ends: tuple[str, ...] = ()  # words that end its text field where the model writes them

    def schema(self) -> dict[str, Any]:
        """The JSON schema every answer of the role is held to (the definitions the tools'
        arguments refer to gathered at its root); built once per shape, read only."""
        return self._schema

    @functools.cached_property
    def _schema(self) -> dict[str, Any]:
        defs: dict[str, Any] = {}
        values = {tool.name: _value_schema(tool, defs) for tool in self.tools}
        for tool in self.tools:
            if tool.flag and tool.name in self.set_flags:
                values[tool.name] = {"enum": [True]}
        for name, pattern in self.patterns:
            if values.get(name, {}).get("type") == "string":
                values[name] = {**values[name], "pattern": pattern}
        many = {tool.name for tool in self.tools if tool.many}
        for name, allowed in self.choices:
            if name in values:
                values[name] = {"type": "array", "items": {"enum": list(allowed)},
                                "minItems": 1} if name in many else {"enum": list(allowed)}
        if self.shape in ("step", "plan"):
            branches = self._branches(values)
            schema: dict[str, Any] = branches[0] if len(branches) == 1 else {"anyOf": branches}
        else:
            sure = {tool.name for tool in self.tools if tool.flag} | set(self.filled)
            schema = {"type": "object",
                      "properties": {name: value if name in sure else _nullable(value)
                                     for name, value in values.items()},
                      "required": [name for name in self.required if name in values],
                      "additionalProperties": False}
        return {**schema, "$defs": defs} if defs else schema

    def _branches(self, values: dict[str, Any]) -> list[dict[str, Any]]:
        """One object per call an answer may make (with the finisher beside it, in a plan), and
        the finisher alone: one per status its kinds name, else one."""
        finisher = {t.name: values[t.name] for t in self.tools if t.alone} \
            if self.shape == "plan" else {}
        beside = {name: _reporting(value, list(self.reports)) for name, value in finisher.items()}
        branches = []
        for name, value in values.items():
            if name in finisher:
                continue
            narrowing = [kind for kind in self.kinds if kind.tool == name and kind.ways]
            branches += [self._branch({name: _narrowed(value, kind), **beside}, name,
                                      [kind.words], kind) for kind in narrowing] or \
                [self._branch({name: value, **beside}, name, self._words(name),
                              self._kind_of(name))]
        for name, value in finisher.items():
            branches += [self._branch({name: _reporting(value, [kind.status])}, name,
                                      [kind.words], kind)
                         for kind in self.kinds if kind.tool == name and kind.status] or \
                [self._branch({name: value}, name, self._words(name))]
        return branches

    def _branch(self, properties: dict[str, Any], name: str, words: list[str],
                kind: Kind | None = None) -> dict[str, Any]:
        """The object of one branch: the notes (those ``kind`` fills or leaves empty held to
        that), its kind, then its call (``name``) and the finisher that may come with it."""
        lead: dict[str, Any] = {note: {"type": "string"} for note in self.notes}
        for note in kind.filled if kind else ():
            lead[note] = {"type": "string", "minLength": 1}
        for note in kind.empty if kind else ():
            lead[note] = {"enum": [""]}
        if words:
            lead["kind"] = {"enum": words}
        return {"type": "object", "properties": {**lead, **properties},
                "required": [*lead, name], "additionalProperties": False}

    def _words(self, name: str) -> list[str]:
        """The kind an answer calling ``name`` names itself (the tool's name where none is
        declared: a server's tool); none where the shape has no kinds."""
        if not self.kinds:
            return []
        kind = self._kind_of(name)
        return [kind.words if kind else name]

    def _kind_of(self, name: str) -> Kind | None:
        """The first kind of answer that calls ``name`` (None where none is declared)."""
        return next((kind for kind in self.kinds if kind.tool == name), None)

    def calls(self, answer: Any) -> list[tuple[str, str]] | None:
        """The calls (name, arguments JSON) of a decoded answer; None when it is not an
        object of this shape (the server did not hold its model to the schema)."""
        if not isinstance(answer, dict):
            return None
        known = [key for key in answer if key in {tool.name for tool in self.tools}]
        finishers = [key for key in known if any(t.name == key and t.alone for t in self.tools)]
        read = [key for key in answer if key not in self.notes]  # notes are not read
        if not known or (self.shape == "step" and len(read) != 1) or \
                (self.shape == "plan" and len(known) - len(finishers) > 1):
            return None
        calls = []
        for tool in self.tools:  # in the shape's order: a finisher comes last
            value = answer.get(tool.name)
            if value is None or value is False:
                continue
            if tool.many and tool.short and isinstance(value, list):  # a call each,
                listed = dict.fromkeys(map(str, value))  # in the order of its choices
                allowed = dict(self.choices).get(tool.name, tuple(listed))
                calls += [(tool.name, json.dumps({tool.short: item}, ensure_ascii=False))
                          for item in allowed if item in listed]
                continue
            arguments = {} if tool.flag else {tool.short: value} if tool.short else value
            calls.append((tool.name, json.dumps(arguments, ensure_ascii=False)))
        return calls

    def matching(self, name: str, pattern: str) -> TurnShape:
        """This shape with the text of field ``name`` held to ``pattern`` (a regular
        expression, e.g. that a reply begins in the person's script)."""
        return dataclasses.replace(self, patterns=(*self.patterns, (name, pattern)))

    def setting(self, name: str) -> TurnShape:
        """This shape with flag ``name`` held to true (a call the pass must make)."""
        return dataclasses.replace(self, set_flags=(*self.set_flags, name))

    def choosing(self, name: str, allowed: Sequence[str]) -> TurnShape:
        """This shape with the value of one-field call ``name`` one of ``allowed`` (the id of
        an active task), or a list of them for a tool that may list several (``Tool.many``);
        unchanged where nothing is allowed."""
        if not allowed:
            return self
        return dataclasses.replace(self, choices=(*self.choices, (name, tuple(allowed))))

    def withholding(self, words: str) -> TurnShape:
        """This shape without the kind of answer ``words`` (and its call, where the kind is
        a call's rather than a status of the finisher)."""
        gone = [kind for kind in self.kinds if kind.words == words]
        kept = {kind.tool for kind in self.kinds if kind not in gone}
        calls = {kind.tool for kind in gone if not kind.status} - kept
        return dataclasses.replace(
            self, kinds=tuple(kind for kind in self.kinds if kind not in gone),
            tools=tuple(tool for tool in self.tools if tool.name not in calls))

    def without(self, names: Sequence[str]) -> TurnShape:
        """This shape without the calls ``names`` (itself where it has none of them)."""
        kept = tuple(tool for tool in self.tools if tool.name not in names)
        return self if len(kept) == len(self.tools) else dataclasses.replace(self, tools=kept)

    def only(self, name: str) -> TurnShape:
        """The shape of an answer that must call ``name`` and nothing else (a forced call)."""
        tools = tuple(tool for tool in self.tools if tool.name == name) or self.tools
        return TurnShape("step", tools, patterns=self.patterns, choices=self.choices,
                         text_ends=self.text_ends)

    def text_field(self) -> TextField | None:
        """The field whose text a person reads as it streams (the Teller's ``reply``)."""
        return next((TextField(t.name, self.text_ends) for t in self.tools
                     if t.name == "reply" and t.short), None)


def turn_shape(shape: Shape, tools: Sequence[Tool], required: Sequence[str] = (),
               filled: Sequence[str] = (), kinds: Sequence[Kind] = (),
               notes: Sequence[str] = (), text_ends: Sequence[str] = ()) -> TurnShape:
    """The shape of a role's answers over ``tools`` (``required`` first, in their order;
    ``filled`` never null; the ``notes``, and a plan's ``kinds``, first in each object)."""
    first = [tool for name in required for tool in tools if tool.name == name]
    rest = [tool for tool in tools if tool not in first]
    finishers = [tool for tool in rest if tool.alone]
    ordered = first + [tool for tool in rest if not tool.alone] + finishers
    return TurnShape(shape, tuple(ordered), tuple(required), tuple(filled), kinds=tuple(kinds),
                     reports=tuple(kind.status for kind in kinds if kind.status)[:1],
                     notes=tuple(notes), text_ends=tuple(text_ends))


def _value_schema(tool: Tool, defs: dict[str, Any]) -> dict[str, Any]:
    """The schema of a tool's field (its definitions added to ``defs``)."""
    if tool.flag:
        return {"type": "boolean"}
    arguments = json.loads(_arguments_schema(tool.args))
    defs.update(arguments.pop("$defs", {}))
    if tool.short:
        value: dict[str, Any] = arguments["properties"][tool.short]
        return value
    alternatives = getattr(tool.args, "alternatives", ())
    held_out: frozenset[str] = getattr(tool.args, "held_out", frozenset())
    if not alternatives:
        return _alternative(arguments, (), (), held_out) if held_out else arguments
    return {"anyOf": [_alternative(arguments, way, alternatives, held_out)
                      for way in alternatives]}


@functools.lru_cache(maxsize=256)
def _arguments_schema(args: type[BaseModel]) -> str:
    """A tool's arguments as the schema an answer is held to, as JSON text: built once per
    arguments model (pydantic takes milliseconds to write one), a fresh copy on each read."""
    return json.dumps(_grammar_friendly(clean_schema(args.model_json_schema(), keep_bounds=True)))


def _alternative(schema: dict[str, Any], fields: tuple[str, ...],
                 alternatives: tuple[tuple[str, ...], ...], held_out: frozenset[str]
                 ) -> dict[str, Any]:
    """One way of giving arguments: ``fields`` required, the fields of the other ways and
    those ``held_out`` left out (``fields`` (): the one way, of every field but those)."""
    left_out = ({name for way in alternatives for name in way} - set(fields)) | held_out
    properties = {name: value for name, value in schema["properties"].items()
                  if name not in left_out}
    required = [name for name in schema.get("required", []) if name not in left_out]
    return {**schema, "properties": properties, "required": [*required, *fields]}


def _narrowed(schema: dict[str, Any], kind: Kind) -> dict[str, Any]:
    """A tool's schema of several ways (``anyOf``) with only the ways ``kind`` keeps."""
    ways = [way for way in schema.get("anyOf", [])
            if any(set(fields) <= set(way["required"]) for fields in kind.ways)]
    return {"anyOf": ways} if len(ways) > 1 else ways[0]


def _reporting(schema: dict[str, Any], statuses: list[str]) -> dict[str, Any]:
    """A finisher's schema with its ``status`` held to ``statuses`` (unchanged when none)."""
    if not statuses or "status" not in schema.get("properties", {}):
        return schema
    properties = {**schema["properties"], "status": {"enum": statuses}}
    return {**schema, "properties": properties}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _grammar_friendly(node: Any) -> Any:
    """``node`` without length bounds over ``SMALL_BOUND``."""
    if isinstance(node, list):
        return [_grammar_friendly(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {key: _grammar_friendly(value) for key, value in node.items()
            if not (key in _LENGTHS and isinstance(value, int) and value > SMALL_BOUND)}

