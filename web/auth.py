"""Bearer-token check for every ``/api`` call when ``MIMIKIT_API_TOKEN`` is set."""

from __future__ import annotations

import hmac

from flask import abort, request

from mimikit.config import secret_text
from mimikit.web.context import runtime


def check_token(allow_query: bool = False) -> None:
    """Abort with 401 unless the request carries the configured token."""
    token = secret_text(runtime().settings.api_token)
    if not token:
        return
    header = request.headers.get("Authorization", "")
    given = header[7:] if header.startswith("Bearer ") else ""
    if not given and allow_query:
        given = request.args.get("token", "")
    if not hmac.compare_digest(given.encode(), token.encode()):
        abort(401, description="missing or wrong token: send 'Authorization: Bearer <MIMIKIT_API_TOKEN>'")
