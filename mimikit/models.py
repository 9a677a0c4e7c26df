"""The data of SPEC section 4 as pydantic models (JSON field names camelCase, as in the seeds)."""

from __future__ import annotations

import uuid
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)

from mimikit.exceptions import InvalidValue

TaskType = Literal["oneshot", "recurring", "scheduled", "conditional"]
TaskStatus = Literal["queued", "running", "done", "failed", "canceled", "deferred"]
TaskRole = Literal["planner", "worker", "llm_eval"]
ResultStatus = Literal["done", "failed", "needs_input"]
ResultType = Literal["text", "code_change", "analysis", "summary"]
MessageRole = Literal["user", "assistant", "system"]
FINISHED: frozenset[str] = frozenset({"done", "failed", "canceled"})
# The longest any task may run; the broker's visibility timeout is set above it.
MAX_TASK_TIMEOUT_SECONDS = 24 * 3600
MAX_TASK_SERVERS = 10  # MCP servers one task may name
# Bounds of a condition tree. Deeper trees could be validated but not read back from Redis
# (the JSON parser stops at 200 levels, two per and/or level), and every trigger is evaluated
# on each routed result or tick: a tree must stay small.
MAX_CONDITION_DEPTH = 32
MAX_CONDITION_NODES = 1_000


StoredModel = TypeVar("StoredModel", bound="Model")


def load(model: type[StoredModel], raw: str | bytes) -> StoredModel:
    """A stored record as ``model``, tolerant of fields another version wrote."""
    return model.model_validate_json(raw, context=STORED)


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def new_id(kind: str) -> str:
    """A short unique id such as ``task-3f9a1c2b7d``."""
    return f"{kind}-{uuid.uuid4().hex[:12]}"


STORED = {"stored": True}  # validation context of data read back from the store


class Model(BaseModel):
    """Base: unknown fields are errors, names are accepted in camelCase.

    Data read back from the store (validated with ``context=STORED``, see ``load``) may come
    from another version: there unknown fields are dropped instead, at every level.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_unknown_when_stored(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, dict) and info.context and info.context.get("stored"):
            return {key: value for key, value in data.items() if key in cls.model_fields}
        return data

    def dump(self) -> dict[str, Any]:
        """JSON-ready dict without unset optional fields."""
        return self.model_dump(mode="json", exclude_none=True)


# --- conditions -------------------------------------------------------------------------------


class Atom(Model):
    """A condition atom as stored: ``{type, params}``. What its params mean, and whether they
    are valid, is its kind's to say (``mimikit.atoms``, checked where a condition comes in)."""

    type: str = Field(min_length=1, max_length=64)
    params: dict[str, Any] = Field(default_factory=dict)


class AllOf(Model):
    type: Literal["and"]
    conditions: list[ConditionNode] = Field(min_length=1)


class AnyOf(Model):
    type: Literal["or"]
    conditions: list[ConditionNode] = Field(min_length=1)


def check_condition_size(value: Any) -> Any:
    """Refuse a condition tree over ``MAX_CONDITION_DEPTH`` levels or ``MAX_CONDITION_NODES``
    nodes before it is validated (the walk is iterative: any input size is safe).

    Raises:
        InvalidValue: The tree is too deep or too large; the message names the limit.
    """
    pending: list[tuple[Any, int]] = [(value, 1)]
    nodes = 0
    while pending:
        node, depth = pending.pop()
        nodes += 1
        if depth > MAX_CONDITION_DEPTH:
            raise InvalidValue(
                f"condition nests and/or deeper than the limit of {MAX_CONDITION_DEPTH} "
                "levels; flatten it (and/or take any number of conditions) or chain triggers "
                "with task_done")
        if nodes > MAX_CONDITION_NODES:
            raise InvalidValue(
                f"condition has more than the limit of {MAX_CONDITION_NODES} nodes (atoms and "
                "and/or groups); split it into several triggers")
        children = (node.get("conditions") if isinstance(node, dict)
                    else getattr(node, "conditions", None))
        if isinstance(children, list):
            pending.extend((child, depth + 1) for child in children)
    return value


def _node_kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ("and", "or") else "atom"


ConditionNode = Annotated[
    Annotated[AllOf, Tag("and")] | Annotated[AnyOf, Tag("or")] | Annotated[Atom, Tag("atom")],
    Discriminator(_node_kind),
]
# A whole tree: bounded in depth and size, then validated node by node.
Condition = Annotated[ConditionNode, BeforeValidator(check_condition_size)]
AllOf.model_rebuild()
AnyOf.model_rebuild()


# --- tasks ------------------------------------------------------------------------------------


class IntervalSchedule(Model):
    interval: float | None = Field(None, gt=0, description="seconds between runs")
    cron: str | None = Field(None, description="five-field cron expression")
    timezone: str | None = Field(None, description="IANA zone the cron is read in (None: UTC)")
    lastRunAt: datetime | None = None
    nextRunAt: datetime | None = None

    @model_validator(mode="after")
    def _interval_or_cron(self) -> IntervalSchedule:
        if (self.interval is None) == (self.cron is None):
            raise InvalidValue("a recurring schedule needs exactly one of 'interval' or 'cron'")
        return self


class RunAtSchedule(Model):
    runAt: datetime


class RetryPolicy(Model):
    maxAttempts: int = Field(1, ge=1, le=100)


class Task(Model):
    id: str = Field(default_factory=lambda: new_id("task"))
    type: TaskType = "oneshot"
    role: TaskRole = "worker"
    prompt: str = Field(min_length=1, max_length=100_000)
    title: str | None = Field(None, max_length=200)
    priority: int = Field(5, ge=0, le=10)
    createdAt: datetime = Field(default_factory=utcnow)
    attempts: int = Field(0, ge=0)
    timeout: float | None = Field(None, gt=0, le=MAX_TASK_TIMEOUT_SECONDS)
    status: TaskStatus = "queued"
    deferUntil: datetime | None = None
    retry: RetryPolicy | None = None
    schedule: IntervalSchedule | RunAtSchedule | None = None
    condition: Condition | None = None
    cooldown: float = Field(0, ge=0)
    lastTriggeredAt: datetime | None = None
    misfire: Literal["skip", "once"] = "once"
    notify: Literal["always", "on_change", "on_failure", "never"] | None = None
    budget: float | None = Field(None, ge=0, description="most all firings may spend")
    # The MCP servers whose tools its Worker gets (names in the MCP config).
    mcp: list[str] | None = Field(None, max_length=MAX_TASK_SERVERS)
    paused: bool = False
    pausedReason: str | None = None
    resumedAt: datetime | None = None
    traceId: str | None = None
    parentId: str | None = None
    triggerId: str | None = None
    catchUp: bool = False
    startedAt: datetime | None = None
    completedAt: datetime | None = None
    celeryId: str | None = None
    error: str | None = None
    # How the task's result came out (``needs_input`` is a finished ``done`` task whose
    # Planner needs the person's answer).
    outcome: ResultStatus | None = None
    # Since when a deferred task waits for the LLM to answer again (an outage, no attempt used).
    waitingSince: datetime | None = None

    @model_validator(mode="after")
    def _shape_matches_type(self) -> Task:
        wanted = {
            "oneshot": (None, None),
            "recurring": (IntervalSchedule, None),
            "scheduled": (RunAtSchedule, None),
            "conditional": (None, "condition"),
        }[self.type]
        schedule_cls, needs_condition = wanted
        if schedule_cls and not isinstance(self.schedule, schedule_cls):
            field = "interval or cron" if schedule_cls is IntervalSchedule else "runAt"
            raise InvalidValue(f"a {self.type} task needs schedule.{field}")
        if not schedule_cls and self.schedule is not None:
            raise InvalidValue(f"a {self.type} task takes no schedule")
        if needs_condition and self.condition is None:
            raise InvalidValue("a conditional task needs 'condition'")
        if not needs_condition and self.condition is not None:
            raise InvalidValue(f"a {self.type} task takes no condition (use type 'conditional')")
        return self

    @property
    def is_trigger(self) -> bool:
        """True for recurring, scheduled and conditional tasks (stored as triggers)."""
        return self.type != "oneshot"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


# --- results ----------------------------------------------------------------------------------


class TextResult(Model):
    text: str


class FileChange(Model):
    path: str
    action: str
    summary: str


class CodeChangeResult(Model):
    files: list[FileChange]
    commitMessage: str | None = None


class AnalysisResult(Model):
    findings: list[str]
    recommendations: list[str] | None = None
    references: list[str] | None = None


class SummaryResult(Model):
    summary: str
    keyPoints: list[str]
    metadata: dict[str, Any] | None = None


RESULT_SCHEMAS: dict[str, type[Model]] = {
    "text": TextResult,
    "code_change": CodeChangeResult,
    "analysis": AnalysisResult,
    "summary": SummaryResult,
}


def result_type_of(result: dict[str, Any]) -> str | None:
    """The first resultType (in ``RESULT_SCHEMAS``' order) whose schema ``result`` fits."""
    for name, schema in RESULT_SCHEMAS.items():
        with suppress(ValidationError):
            schema.model_validate(result)
            return name
    return None


def _inlined(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with every ``$ref`` to ``defs`` replaced by what it names."""
    if isinstance(node, dict) and "$ref" in node:
        return _inlined(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if isinstance(node, dict):
        return {key: _inlined(value, defs) for key, value in node.items() if key != "$defs"}
    return [_inlined(item, defs) for item in node] if isinstance(node, list) else node


# A result as a tool takes it: one of the resultTypes' shapes (an answer held to it fits one).
ResultBody = Annotated[dict[str, Any], WithJsonSchema({"anyOf": [
    _inlined(schema, schema.get("$defs", {}))
    for schema in (model.model_json_schema() for model in RESULT_SCHEMAS.values())]})]


def check_result(result_type: str, result: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming each field of ``result`` that breaks its resultType schema."""
    try:
        RESULT_SCHEMAS[result_type].model_validate(result)
    except ValidationError as error:
        problems = "; ".join(
            f"result.{'.'.join(str(p) for p in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        raise InvalidValue(f"result does not match resultType {result_type!r}: {problems}") from None


class Result(Model):
    id: str
    status: ResultStatus
    resultType: ResultType = "text"
    result: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    question: str | None = None
    attempts: int = 1
    completedAt: datetime = Field(default_factory=utcnow)
    traceId: str | None = None

    @model_validator(mode="after")
    def _result_matches_type(self, info: ValidationInfo) -> Result:
        stored = bool(info.context and info.context.get("stored"))  # checked when written
        if (self.status == "done" or self.result) and not stored:
            check_result(self.resultType, self.result)
        if self.status == "failed" and not self.error:
            raise InvalidValue("a failed result needs 'error'")
        if self.status == "needs_input" and not self.question:
            raise InvalidValue("a needs_input result needs 'question'")
        return self


# --- conversation -----------------------------------------------------------------------------


class Usage(Model):
    promptTokens: int = 0
    completionTokens: int = 0
    totalTokens: int = 0
    # Counted here, offline, because the server sent no token counts.
    estimated: bool = False
    # Prompt tokens the server served from its cache (when it says).
    cachedTokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            promptTokens=self.promptTokens + other.promptTokens,
            completionTokens=self.completionTokens + other.completionTokens,
            totalTokens=self.totalTokens + other.totalTokens,
            estimated=self.estimated or other.estimated,
            cachedTokens=self.cachedTokens + other.cachedTokens,
        )


class Message(Model):
    id: str = Field(default_factory=lambda: new_id("msg"))
    role: MessageRole
    text: str = Field(min_length=1, max_length=1_000_000)
    createdAt: datetime = Field(default_factory=utcnow)
    usage: Usage | None = None
    elapsedMs: int | None = None
    traceId: str | None = None
    taskId: str | None = None
    # The inbox item this system message says gave up (the page offers to try it again).
    failedItem: str | None = None


class PendingQuestion(Model):
    id: str = Field(default_factory=lambda: new_id("q"))
    question: str = Field(min_length=1, max_length=4000)
    options: list[str] | None = None
    timeout: float = Field(3600, gt=0)
    default: str | None = None
    createdAt: datetime = Field(default_factory=utcnow)
    expiresAt: datetime | None = None
    traceId: str | None = None
    # The Planner task whose needs_input the question asks about (its answer re-delegates it).
    taskId: str | None = None

    @model_validator(mode="after")
    def _compute_expiry(self) -> PendingQuestion:
        if self.expiresAt is None:
            self.expiresAt = self.createdAt + timedelta(seconds=self.timeout)
        return self


class LogEvent(Model):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    type: str = Field(min_length=1)
    at: datetime = Field(default_factory=utcnow)
    taskId: str | None = None
    traceId: str | None = None
