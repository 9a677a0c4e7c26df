"""The token gate: with ``MIMIKIT_API_TOKEN`` set, every request needs ``Authorization: Bearer
TOKEN`` except the endpoints in ``ALLOWED_WITHOUT_TOKEN``.

One ``before_request`` of the app covers every route, those of blueprints added later too (and
paths that match none, so a caller without the token cannot tell which exist); no blueprint
checks the token itself.
"""

from __future__ import annotations

import hmac

from flask import Flask, abort, request

from mimikit.config import secret_text
from mimikit.web.context import runtime

# Liveness for health checks, and the page with its files: the page asks for the token.
ALLOWED_WITHOUT_TOKEN = frozenset({"health.health", "chat.index", "static"})
# A browser's EventSource cannot send headers: the live-update stream may carry ``?token=``.
QUERY_TOKEN_ENDPOINTS = frozenset({"events.events"})


def init_app(app: Flask) -> None:
    """Put the gate in front of every request of ``app``."""
    app.before_request(require_token)


def require_token() -> None:
    """``before_request``: abort with 401 unless the request carries the configured token."""
    token = secret_text(runtime().settings.api_token)
    if not token or request.endpoint in ALLOWED_WITHOUT_TOKEN:
        return
    header = request.headers.get("Authorization", "")
    given = header[7:] if header.startswith("Bearer ") else ""
    if not given and request.endpoint in QUERY_TOKEN_ENDPOINTS:
        given = request.args.get("token", "")
    if not hmac.compare_digest(given.encode(), token.encode()):
        abort(401, description="missing or wrong token: send 'Authorization: Bearer <MIMIKIT_API_TOKEN>'")
