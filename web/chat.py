"""The chat page at ``/``."""

from __future__ import annotations

from flask import Blueprint, render_template

bp = Blueprint("chat", __name__)


@bp.get("/")
def index() -> str:
    return render_template("index.html")
