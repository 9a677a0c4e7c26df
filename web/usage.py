"""``GET /api/usage``: what LLM calls spent per trace, trigger or day, the budgets, and what the
Teller's inbox items that failed a pass took against their bounds (``inbox``)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, jsonify, request

from mimikit.conversation.tries import spending as inbox_spending
from mimikit.spending import book
from mimikit.spending.budget import budget_state
from mimikit.web.bodies import arg_int, arg_time
from mimikit.web.context import runtime

bp = Blueprint("usage", __name__, url_prefix="/api")
MAX_ROWS = 200


@bp.get("/usage")
def usage() -> Any:
    by = request.args.get("by", "trace")
    if by not in book.LISTED_SCOPES:
        abort(400, description=f"query parameter 'by' must be one of "
                               f"{', '.join(book.LISTED_SCOPES)}, got {by!r}")
    limit = arg_int("limit", 50, 1, MAX_ROWS)
    before = arg_time("before")
    rt = runtime()
    rows = book.listing(rt, by, limit, before.timestamp() if before else None)
    return jsonify(by=by, usage=rows, budget=budget_state(rt), inbox=inbox_spending(rt))
