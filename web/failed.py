"""The Teller's inbox items that gave up, over HTTP: ``GET /api/inbox/failed`` lists them,
``POST /api/inbox/failed/ID/retry`` puts one back in the inbox with its tries unused,
``POST /api/inbox/failed/ID/dismiss`` dismisses one (it is kept, marked dismissed)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, jsonify, request

from mimikit.conversation import failed
from mimikit.conversation.tries import MAX_TRIES, max_calls
from mimikit.exceptions import NotFound
from mimikit.web.context import runtime

bp = Blueprint("failed", __name__, url_prefix="/api/inbox/failed")
STATES = ("failed", "all")


@bp.get("")
def listing() -> Any:
    state = request.args.get("state", "failed")
    if state not in STATES:
        abort(400, description=f"query parameter 'state' must be failed (waiting for a "
                               f"decision) or all (dismissed ones too), got {state[:100]!r}")
    rt = runtime()
    return jsonify(failed=failed.listing(rt, include_dismissed=state == "all"),
                   maxTries=MAX_TRIES, maxCalls=max_calls(rt))


@bp.post("/<item_id>/retry")
def retry(item_id: str) -> Any:
    try:
        record = failed.retry(runtime(), item_id)
    except NotFound as error:
        abort(404, description=str(error))
    return jsonify(ok=True, id=record.id, state="retried")


@bp.post("/<item_id>/dismiss")
def dismiss(item_id: str) -> Any:
    try:
        record, changed = failed.dismiss(runtime(), item_id)
    except NotFound as error:
        abort(404, description=str(error))
    if not changed:
        abort(409, description=f"item {item_id!r} was dismissed already; POST "
                               f"/api/inbox/failed/{item_id}/retry tries it again")
    return jsonify(ok=True, id=record.id, state=record.state)
