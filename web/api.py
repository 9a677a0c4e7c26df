"""The JSON API under ``/api`` (SPEC section 7)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

from flask import Blueprint, abort, current_app, jsonify, request
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from werkzeug.exceptions import RequestEntityTooLarge

from mimikit.conversation import input as user_input
from mimikit.conversation.gate import wake
from mimikit.conversation.question import answer_question
from mimikit.memory.service import search_memory
from mimikit.status import status as status_report
from mimikit.tasks.cancel import cancel_task
from mimikit.tasks.listing import SCOPES, list_tasks
from web.auth import check_token
from web.context import runtime

bp = Blueprint("api", __name__, url_prefix="/api")
Body = TypeVar("Body", bound=BaseModel)
InputBody = user_input.UserInput


class AnswerBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str = Field(min_length=1, max_length=4000)


@bp.before_request
def _auth() -> None:
    check_token()


def parse_body(model: type[Body]) -> Body:
    """Validate the JSON body; a bad one is a 400 that names the field and the fix."""
    _check_body_size()
    try:
        data = request.get_json(silent=True)
    except RecursionError:  # not a ValueError, so ``silent`` does not cover it
        abort(400, description="the body nests too deeply to be read; send a flat JSON object")
    if not isinstance(data, dict):
        abort(400, description="the body must be a JSON object with Content-Type: application/json")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        abort(400, description="; ".join(_describe(item) for item in error.errors()))


def _check_body_size() -> None:
    """Raise 413 for a body over the limit, also a chunked one (it has no Content-Length).

    The server stops reading a chunked body at the limit without an error, so a body that
    fills the limit was cut short: JSON parsing would then fail with a misleading 400.
    """
    limit = current_app.config["MAX_CONTENT_LENGTH"]
    data = request.get_data(cache=True)  # a RequestEntityTooLarge raised here is a 413 too
    if limit is not None and request.content_length is None and len(data) >= limit:
        raise RequestEntityTooLarge(f"the body is larger than the limit of {limit} bytes")


def _describe(item: Any) -> str:
    field = ".".join(str(p) for p in item["loc"]) or "body"
    return f"field '{field}': {item['msg']}"


def _arg_int(name: str, default: int, low: int, high: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        abort(400, description=f"query parameter '{name}' must be an integer, got {raw!r}")
    if not low <= value <= high:
        abort(400, description=f"query parameter '{name}' must be between {low} and {high}")
    return value


def _arg_time(name: str) -> datetime | None:
    """An ISO 8601 query parameter as an aware UTC time (naive times are read as UTC)."""
    raw = request.args.get(name)
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        value.timestamp()  # years 1 and 9999 at the edges of the range have no timestamp
    except (ValueError, OverflowError):
        abort(400, description=f"query parameter '{name}' must be an ISO 8601 time between "
                               f"the years 1 and 9999, e.g. 2025-01-31T12:00:00Z; got {raw!r}")
    return value


@bp.get("/status")
def status() -> Any:
    return jsonify(status_report(runtime()))


@bp.post("/input")
def post_input() -> Any:
    body = parse_body(InputBody)
    message = user_input.post_input(runtime(), body.text)
    return jsonify(id=message.id), 202


@bp.get("/messages")
def messages() -> Any:
    limit = _arg_int("limit", 100, 1, 1000)
    before, after = _arg_time("before"), _arg_time("after")
    state = runtime().state
    if before or after:
        found = state.messages_between(after, before, limit=limit)
    else:
        found = state.recent_messages(limit)
    return jsonify(messages=[m.dump() for m in found])


@bp.get("/messages/export")
def export() -> Any:
    found = runtime().state.messages_between(None, None)
    return jsonify(messages=[m.dump() for m in found], count=len(found))


@bp.get("/tasks")
def tasks() -> Any:
    scope = request.args.get("scope", "all")
    role = request.args.get("role") or None
    if scope not in SCOPES:
        abort(400, description=f"query parameter 'scope' must be one of {', '.join(SCOPES)}")
    if role not in (None, "planner", "worker", "llm_eval"):
        abort(400, description="query parameter 'role' must be planner, worker or llm_eval")
    found = list_tasks(runtime(), scope, role, include_finished=True)
    return jsonify(tasks=found)


@bp.get("/tasks/<task_id>")
def task_detail(task_id: str) -> Any:
    state = runtime().state
    task = state.get_task(task_id)
    if task is None:
        abort(404, description=f"no task with id {task_id!r}")
    result = state.get_result(task_id)
    return jsonify(task=task.dump(), result=result.dump() if result else None,
                   events=state.task_log(task_id), runs=state.runs(task_id))


@bp.post("/tasks/<task_id>/cancel")
def cancel(task_id: str) -> Any:
    rt = runtime()
    if rt.state.get_task(task_id) is None:
        abort(404, description=f"no task with id {task_id!r}")
    success, message = cancel_task(rt, task_id, stop_running=True, source="user")
    if success:
        wake(rt)
    return jsonify(success=success, message=message)


@bp.get("/question")
def question() -> Any:
    pending = runtime().state.get_question()
    return jsonify(question=pending.dump() if pending else None)


@bp.post("/question/answer")
def answer() -> Any:
    body = parse_body(AnswerBody)
    if not answer_question(runtime(), body.answer):
        abort(409, description="no question is pending")
    return jsonify(ok=True)


@bp.get("/memory/search")
def memory_search() -> Any:
    query = (request.args.get("q") or "").strip()
    if not query:
        abort(400, description="query parameter 'q' is required (the words to search for)")
    if len(query) > 1000:
        abort(400, description="query parameter 'q' must be at most 1000 characters")
    limit = _arg_int("limit", 5, 1, 50)
    after, before = _arg_time("after"), _arg_time("before")
    hits = search_memory(runtime().settings, query, after=after, before=before, limit=limit)
    return jsonify(hits=hits)
