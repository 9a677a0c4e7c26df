"""Access to the app's runtime from request handlers."""

from __future__ import annotations

from flask import current_app

from mimikit.store.runtime import Runtime


def runtime() -> Runtime:
    return current_app.extensions["mimikit"]
