"""The Flask chat page and JSON/SSE API (``create_app``)."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Flask, current_app, jsonify, request
from redis.exceptions import RedisError
from werkzeug.exceptions import HTTPException

from mimikit.config import Settings, load_settings
from mimikit.store.runtime import build_runtime

MAX_BODY_BYTES = 256 * 1024
REDIS_RETRY_AFTER_SECONDS = 2


def create_app(settings: Settings | None = None) -> Flask:
    """Build the web app for ``settings`` (read from the environment when omitted)."""
    settings = settings or load_settings()
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.extensions["mimikit"] = build_runtime(settings)

    from mimikit.web import (
        api,
        auth,
        chat,
        events,
        failed,
        guard,
        health,
        metrics,
        triggers,
        usage,
    )

    app.before_request(guard.check_host_and_origin)
    auth.init_app(app)
    health.init_app(app, settings)
    app.register_blueprint(chat.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(events.bp)
    app.register_blueprint(usage.bp)
    app.register_blueprint(metrics.bp)
    app.register_blueprint(triggers.bp)
    app.register_blueprint(failed.bp)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(RedisError, _redis_error)
    app.register_error_handler(Exception, _unexpected_error)
    return app


def _http_error(error: HTTPException) -> Any:
    if not request.path.startswith("/api"):
        return error
    return jsonify(error=error.description or error.name, status=error.code), error.code


def _redis_error(error: RedisError) -> Any:
    """Redis is away (restarting, unreachable): a 503 with ``Retry-After``, not a 500."""
    current_app.logger.warning("Redis unavailable on %s: %s", request.path, error)
    response = jsonify(error=f"cannot reach Redis: {error}; retry in a moment", status=503)
    response.status_code = 503
    response.headers["Retry-After"] = str(REDIS_RETRY_AFTER_SECONDS)
    return response


def _unexpected_error(error: Exception) -> Any:
    """A 500 that says only "internal error" and a log id: the exception text may hold data
    or secrets; the log has it under that id."""
    log_id = uuid.uuid4().hex[:12]
    current_app.logger.exception("internal error %s on %s %s", log_id, request.method,
                                 request.path)
    return jsonify(error=f"internal error (log id {log_id})", logId=log_id, status=500), 500
