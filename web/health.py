"""``GET /api/health``: liveness for container and load-balancer health checks.

It answers without the token and whatever the ``Host`` header names (a health check from a
container runtime or a load balancer sends neither the token nor a loopback name), so it says
nothing but whether this process serves and reaches Redis: ``{"ok": true}``, or 503
``{"ok": false}``.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, jsonify
from redis import Redis
from redis.exceptions import RedisError

from mimikit.config import Settings

bp = Blueprint("health", __name__, url_prefix="/api")
HEALTH_TIMEOUT_SECONDS = 2  # a Redis that hangs is a failed check, not a hung one
EXTENSION = "mimikit.health_redis"


def init_app(app: Any, settings: Settings) -> None:
    """Register the endpoint with its own Redis client (short timeouts, connected lazily)."""
    app.extensions[EXTENSION] = Redis.from_url(
        settings.redis_url, socket_timeout=HEALTH_TIMEOUT_SECONDS,
        socket_connect_timeout=HEALTH_TIMEOUT_SECONDS)
    app.register_blueprint(bp)


@bp.get("/health")
def health() -> Any:
    try:
        current_app.extensions[EXTENSION].ping()
    except RedisError:
        return jsonify(ok=False), 503
    return jsonify(ok=True)
