"""The ``codex`` Worker backend: OpenAI's Codex CLI run non-interactively.

``codex exec`` reads the prompt from stdin (``-``), works in ``--cd WORK_DIR`` inside its
``workspace-write`` sandbox, constrains its final message with ``--output-schema`` and writes that
message to ``--output-last-message``; ``--json`` makes stdout a JSONL event stream.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from mimikit.exceptions import InvalidValue
from mimikit.models import Model, ResultType, check_result
from mimikit.workspace.procgroup import run_process_group

log = logging.getLogger("mimikit.codex")
NOT_INSTALLED = "the codex CLI is not installed: install it or set MIMIKIT_WORKER_BACKEND=llm"
QUOTE_CHARS = 200
TAIL_CHARS = 2000
OUTPUT_LIMIT_BYTES = 64_000


def _strict_object(properties: dict[str, Any]) -> dict[str, Any]:
    # Codex sends the schema in strict mode: every property required, no extra ones;
    # optional fields are therefore nullable.
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_STRINGS = {"type": "array", "items": {"type": "string"}}
_NULLABLE_STRINGS = {"type": ["array", "null"], "items": {"type": "string"}}
_FILE = _strict_object(
    {"path": {"type": "string"}, "action": {"type": "string"}, "summary": {"type": "string"}}
)
RESULT_JSON_SCHEMA: dict[str, Any] = _strict_object(
    {
        "status": {"type": "string", "enum": ["done", "failed"]},
        "resultType": {"type": "string", "enum": ["text", "code_change", "analysis", "summary"]},
        "result": {
            "anyOf": [
                _strict_object({"text": {"type": "string"}}),
                _strict_object(
                    {
                        "files": {"type": "array", "items": _FILE},
                        "commitMessage": {"type": ["string", "null"]},
                    }
                ),
                _strict_object(
                    {
                        "findings": _STRINGS,
                        "recommendations": _NULLABLE_STRINGS,
                        "references": _NULLABLE_STRINGS,
                    }
                ),
                # summary.metadata is free-form, which strict mode cannot express; codex omits it.
                _strict_object({"summary": {"type": "string"}, "keyPoints": _STRINGS}),
            ]
        },
        "error": {"type": ["string", "null"]},
    }
)


class _Reply(Model):
    status: Literal["done", "failed"]
    resultType: ResultType
    result: dict[str, Any]
    error: str | None = None


@dataclass(frozen=True)
class CodexOutcome:
    """What a codex run produced, shaped like a Worker result."""

    status: Literal["done", "failed"]
    resultType: str = "text"
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    stdout_tail: str = ""
    durationMs: int = 0

    def dump(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def build_command(
    executable: str, schema: Path, last_message: Path, work_dir: Path, model: str | None
) -> list[str]:
    """The ``codex exec`` argv; the prompt goes to stdin."""
    argv = [executable, "exec", "--json", "--color", "never", "--skip-git-repo-check"]
    argv += ["--sandbox", "workspace-write", "--cd", str(work_dir)]
    argv += ["--output-schema", str(schema), "--output-last-message", str(last_message)]
    if model:
        argv += ["--model", model]
    return [*argv, "-"]


def _quote(text: str) -> str:
    return repr(text[:QUOTE_CHARS]) + ("..." if len(text) > QUOTE_CHARS else "")


def _drop_nulls(value: Any) -> Any:
    # Strict mode makes optional fields explicit nulls; the result models want them absent.
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def parse_last_message(text: str) -> _Reply:
    """Parse and validate codex's final message.

    Raises:
        InvalidValue: naming the problem and quoting the start of the message.
    """
    body = text.strip()
    if body.startswith("```"):  # a fenced block despite the schema: take its inside
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as error:
        raise InvalidValue(f"codex's final message is not JSON ({error}): {_quote(text)}") from None
    try:
        reply = _Reply.model_validate(_drop_nulls(data))
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in item['loc']) or 'message'}: {item['msg']}"
            for item in error.errors()
        )
        message = f"codex's final message has wrong fields ({problems}): {_quote(text)}"
        raise InvalidValue(message) from None
    if reply.status == "done":
        try:
            check_result(reply.resultType, reply.result)
        except InvalidValue as error:
            raise InvalidValue(f"codex's final message: {error}: {_quote(text)}") from None
    return reply


def _outcome_from_message(last_message: Path, stdout_tail: str, duration_ms: int) -> CodexOutcome:
    text = last_message.read_text(errors="replace") if last_message.exists() else ""
    if not text.strip():
        error = f"codex exited without a final message; stdout ends with: {stdout_tail[-500:]!r}"
        return CodexOutcome("failed", error=error, stdout_tail=stdout_tail, durationMs=duration_ms)
    try:
        reply = parse_last_message(text)
    except InvalidValue as error:
        return CodexOutcome(
            "failed", error=str(error), stdout_tail=stdout_tail, durationMs=duration_ms
        )
    reason = reply.error
    if reply.status == "failed" and not reason:
        reason = "codex reported the task failed without saying why"
    return CodexOutcome(
        reply.status, reply.resultType, reply.result, reason, stdout_tail, duration_ms
    )


def run_codex(
    prompt: str,
    work_dir: Path,
    timeout: float,
    model: str | None = None,
    executable: str = "codex",
    cancel_event: threading.Event | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> CodexOutcome:
    """Run one Worker task with ``codex exec``; never raises for a failed run.

    Args:
        prompt: the task prompt (sent on stdin).
        work_dir: the directory codex works in.
        timeout: seconds before codex and its children are killed.
        model: the model codex uses (its own default when None).
        executable: the codex program, looked up on PATH.
        cancel_event: when set, codex and its children are killed and the outcome is canceled.
        on_event: given each of codex's JSON events as it arrives.

    Returns:
        The outcome; ``status`` is ``failed`` with an ``error`` when anything went wrong.
    """
    program = shutil.which(executable)
    if program is None:
        return CodexOutcome("failed", error=NOT_INSTALLED)
    if not Path(work_dir).is_dir():
        error = (
            f"work directory {str(work_dir)!r} does not exist; create it or set MIMIKIT_WORK_DIR"
        )
        return CodexOutcome("failed", error=error)
    if cancel_event is not None and cancel_event.is_set():
        return CodexOutcome("failed", error="canceled")
    with tempfile.TemporaryDirectory(prefix="mimikit-codex-") as tmp:
        schema, last_message = Path(tmp, "result-schema.json"), Path(tmp, "last-message.json")
        schema.write_text(json.dumps(RESULT_JSON_SCHEMA, indent=2))
        run = run_process_group(
            build_command(program, schema, last_message, Path(work_dir).resolve(), model),
            cwd=Path(work_dir),
            timeout=timeout,
            stdin_data=prompt.encode("utf-8"),
            output_limit_bytes=OUTPUT_LIMIT_BYTES,
            stop=cancel_event.is_set if cancel_event is not None else None,
            on_line=_events_to(on_event) if on_event is not None else None,
        )
        tail, ms = run.stdout[-TAIL_CHARS:], run.durationMs
        if run.stopped:
            return CodexOutcome("failed", error="canceled", stdout_tail=tail, durationMs=ms)
        if run.timedOut:
            error = f"codex timed out after {timeout:g} s"
            return CodexOutcome("failed", error=error, stdout_tail=tail, durationMs=ms)
        if run.exitCode != 0:
            stderr = run.stderr.strip()[-500:] or "(no stderr)"
            error = f"codex exited with code {run.exitCode}: {stderr}"
            return CodexOutcome("failed", error=error, stdout_tail=tail, durationMs=ms)
        return _outcome_from_message(last_message, tail, ms)


def _events_to(on_event: Callable[[dict[str, Any]], None]) -> Callable[[str], None]:
    """A stdout line reader that hands each JSON event line to ``on_event``."""

    def read(line: str) -> None:
        line = line.strip()
        if not line.startswith("{"):
            return
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            log.debug("codex printed a line that is not JSON: %.200s", line)
            return
        if isinstance(event, dict):
            on_event(event)

    return read
