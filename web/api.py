"""The JSON API under ``/api`` (SPEC section 7)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, abort, jsonify, request
from pydantic import BaseModel, ConfigDict, Field

from mimikit.conversation import input as user_input
from mimikit.conversation.gate import wake
from mimikit.conversation.question import answer_question
from mimikit.exceptions import NotFound
from mimikit.lifecycle.cancel import cancel_task
from mimikit.memory import backlog
from mimikit.memory.service import search_memory
from mimikit.models import utcnow
from mimikit.roles import TASK_ROLES
from mimikit.status import status as status_report
from mimikit.tasks.listing import MAX_PAGE, RECENT_FINISHED, SCOPES, detail, list_page
from mimikit.web.bodies import arg_int, arg_time, parse_body
from mimikit.web.context import runtime
from mimikit.web.transcript import filename, transcript

bp = Blueprint("api", __name__, url_prefix="/api")
InputBody = user_input.UserInput
EXPORT_FORMATS = ("json", "markdown")
QUERY_MAX_CHARS = 1000
# A history search reads at most this many of the newest messages, however long the history.
SEARCH_MAX_SCANNED_MESSAGES = 20_000
CURSOR = re.compile(r"[A-Za-z0-9_.:-]{1,200}")  # a task id, as ``nextBefore`` gives it


class AnswerBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str = Field(min_length=1, max_length=4000)


def _arg_query() -> str:
    """The search words ``q``: required, 1 to ``QUERY_MAX_CHARS`` characters."""
    query = (request.args.get("q") or "").strip()
    if not query:
        abort(400, description="query parameter 'q' is required (the words to search for)")
    if len(query) > QUERY_MAX_CHARS:
        abort(400, description=f"query parameter 'q' must be at most {QUERY_MAX_CHARS} "
                               f"characters, got {len(query)}; search for fewer words")
    return query


def _attachment(response: Response, name: str) -> Response:
    """``response`` as a file to save (browsers download it instead of showing it)."""
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


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
    limit = arg_int("limit", 100, 1, 1000)
    before, after = arg_time("before"), arg_time("after")
    conversation = runtime().conversation
    if before or after:
        found = conversation.between(after, before, limit=limit)
    else:
        found = conversation.recent(limit)
    return jsonify(messages=[m.dump() for m in found])


@bp.get("/messages/search")
def search_messages() -> Any:
    query = _arg_query()
    limit = arg_int("limit", 20, 1, 100)
    conversation = runtime().conversation
    found, scanned = conversation.search(query, limit, SEARCH_MAX_SCANNED_MESSAGES)
    # Fewer hits than asked for and messages left unread: older matches may exist.
    truncated = len(found) < limit and scanned < conversation.count()
    return jsonify(messages=[m.dump() for m in found], scanned=scanned, truncated=truncated)


@bp.get("/messages/export")
def export() -> Any:
    form = request.args.get("format", "json")
    if form not in EXPORT_FORMATS:
        abort(400, description=f"query parameter 'format' must be json or markdown, got {form!r}")
    found = runtime().conversation.between(None, None)
    now = utcnow()
    if form == "markdown":
        return _attachment(Response(transcript(found, now), mimetype="text/markdown"),
                           filename(now, "md"))
    return _attachment(jsonify(messages=[m.dump() for m in found], count=len(found)),
                       filename(now, "json"))


@bp.get("/tasks")
def tasks() -> Any:
    scope = request.args.get("scope", "all")
    role = request.args.get("role") or None
    if scope not in SCOPES:
        abort(400, description=f"query parameter 'scope' must be one of {', '.join(SCOPES)}")
    if role is not None and role not in TASK_ROLES:
        abort(400, description=f"query parameter 'role' must be {' or '.join(TASK_ROLES)}")
    limit = arg_int("limit", RECENT_FINISHED, 1, MAX_PAGE)
    before = _arg_before()
    if before is not None and scope != "finished":
        abort(400, description="query parameter 'before' pages finished tasks: use it with "
                               "scope=finished")
    try:
        page = list_page(runtime(), scope, role, limit, before)
    except NotFound as error:
        abort(400, description=f"query parameter 'before': {error}; pass an ISO 8601 time or "
                               "the nextBefore of a recent page")
    return jsonify(tasks=page.tasks, nextBefore=page.next_before)


def _arg_before() -> datetime | str | None:
    """``before`` of the task list: an ISO 8601 time (naive: in ``MIMIKIT_TIMEZONE``) or a
    cursor (the ``nextBefore`` of the previous page: a task id)."""
    raw = request.args.get("before")
    if raw and not raw[0].isdigit():
        if CURSOR.fullmatch(raw):
            return raw
        abort(400, description="query parameter 'before' must be an ISO 8601 time (e.g. "
                               "2025-01-31T12:00:00Z) or the nextBefore of a previous page, "
                               f"got {raw[:100]!r}")
    return arg_time("before")


@bp.get("/tasks/<task_id>")
def task_detail(task_id: str) -> Any:
    found = detail(runtime(), task_id)
    if found is None:
        abort(404, description=f"no task with id {task_id!r}")
    return jsonify(found)


@bp.post("/tasks/<task_id>/cancel")
def cancel(task_id: str) -> Any:
    rt = runtime()
    if rt.tasks.get(task_id) is None:
        abort(404, description=f"no task with id {task_id!r}")
    success, message = cancel_task(rt, task_id, stop_running=True, source="user")
    if success:
        wake(rt)
    return jsonify(success=success, message=message)


@bp.get("/backlog")
def backlog_items() -> Any:
    return jsonify(items=backlog.read(runtime().settings.state_dir))


@bp.get("/question")
def question() -> Any:
    pending = runtime().conversation.question()
    return jsonify(question=pending.dump() if pending else None)


@bp.post("/question/answer")
def answer() -> Any:
    body = parse_body(AnswerBody)
    if not answer_question(runtime(), body.answer):
        abort(409, description="no question is pending")
    return jsonify(ok=True)


@bp.get("/memory/search")
def memory_search() -> Any:
    query = _arg_query()
    limit = arg_int("limit", 5, 1, 50)
    after, before = arg_time("after"), arg_time("before")
    hits = search_memory(runtime().settings, query, after=after, before=before, limit=limit)
    return jsonify(hits=hits)
