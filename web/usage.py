"""``GET /api/usage``: what LLM calls spent per trace, trigger or day, and the budgets."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Blueprint, abort, jsonify, request

from mimikit.spending import book
from mimikit.spending.budget import budget_state
from web.auth import check_token
from web.context import runtime

bp = Blueprint("usage", __name__, url_prefix="/api")
MAX_ROWS = 200


@bp.before_request
def _auth() -> None:
    check_token()


@bp.get("/usage")
def usage() -> Any:
    by = request.args.get("by", "trace")
    if by not in book.LISTED_SCOPES:
        abort(400, description=f"query parameter 'by' must be one of "
                               f"{', '.join(book.LISTED_SCOPES)}, got {by!r}")
    limit = _limit()
    before = _before()
    rt = runtime()
    rows = book.listing(rt, by, limit, before)
    return jsonify(by=by, usage=rows, budget=budget_state(rt))


def _limit() -> int:
    raw = request.args.get("limit", "50")
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_ROWS:
        abort(400, description=f"query parameter 'limit' must be a whole number from 1 to "
                               f"{MAX_ROWS}, got {raw!r}")
    return int(raw)


def _before() -> float | None:
    raw = request.args.get("before")
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        abort(400, description=f"query parameter 'before' must be an ISO 8601 time, got {raw!r}")
