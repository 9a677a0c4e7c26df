"""Steering a trigger over HTTP: ``POST /api/tasks/ID/pause|resume|run`` and
``PATCH /api/tasks/ID`` (its schedule, condition, prompt, cooldown, budget), checked as the
Planner's ``schedule`` is."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, jsonify

from mimikit.exceptions import InvalidValue
from mimikit.scheduling import control
from mimikit.tasks.edit import TriggerEdit, edit, run_now
from mimikit.web.bodies import parse_body
from mimikit.web.context import runtime

bp = Blueprint("triggers", __name__, url_prefix="/api/tasks")


def _known(task_id: str) -> None:
    if runtime().tasks.get(task_id) is None:
        abort(404, description=f"no task with id {task_id!r}")


@bp.post("/<task_id>/pause")
def pause(task_id: str) -> Any:
    _known(task_id)
    success, message = control.pause(runtime(), task_id, reason="paused by the user")
    return jsonify(success=success, message=message)


@bp.post("/<task_id>/resume")
def resume(task_id: str) -> Any:
    _known(task_id)
    success, message = control.resume(runtime(), task_id)
    return jsonify(success=success, message=message)


@bp.post("/<task_id>/run")
def run(task_id: str) -> Any:
    _known(task_id)
    try:
        child = run_now(runtime(), task_id)
    except InvalidValue as error:
        abort(409, description=str(error))
    return jsonify(success=True, taskId=child.id), 202


@bp.patch("/<task_id>")
def change(task_id: str) -> Any:
    _known(task_id)
    changes = parse_body(TriggerEdit)
    try:
        edited, about = edit(runtime(), task_id, changes)
    except InvalidValue as error:
        abort(400, description=str(error))
    return jsonify(task=edited.dump(), **about)
