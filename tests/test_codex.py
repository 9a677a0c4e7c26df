"""The codex Worker backend, against a stand-in `codex` that follows the CLI's exec interface."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from processes import pid_alive

from mimikit.models import Result
from mimikit.workspace.codex import NOT_INSTALLED, RESULT_JSON_SCHEMA, build_command, run_codex

FAKE_BIN = Path(__file__).parent / "bin"




@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_success_returns_validated_text_result(work: Path) -> None:
    outcome = run_codex("Say hello FAKE_CODEX:ok", work, timeout=20, model="gpt-5-codex")
    assert outcome.status == "done", outcome.error
    assert outcome.resultType == "text"
    assert outcome.result == {"text": "did: Say hello FAKE_CODEX:ok"}
    assert outcome.error is None
    assert '"model": "gpt-5-codex"' in outcome.stdout_tail
    assert outcome.durationMs > 0


def test_code_change_works_in_work_dir_and_drops_null_fields(work: Path) -> None:
    outcome = run_codex("FAKE_CODEX:code_change", work, timeout=20)
    assert outcome.status == "done", outcome.error
    assert (work / "hello.txt").read_text() == "hello from codex\n"
    assert outcome.result == {
        "files": [{"path": "hello.txt", "action": "created", "summary": "greeting file"}]
    }
    Result(id="task-1", status="done", resultType=outcome.resultType, result=outcome.result)


def test_reported_failure_keeps_codex_error(work: Path) -> None:
    outcome = run_codex("FAKE_CODEX:task_failed", work, timeout=20)
    assert outcome.status == "failed"
    assert outcome.error == "the repository has no tests to run"


def test_malformed_output_fails_quoting_the_output(work: Path) -> None:
    outcome = run_codex("FAKE_CODEX:malformed", work, timeout=20)
    assert outcome.status == "failed"
    assert "not JSON" in outcome.error
    assert "this is not json {" in outcome.error


def test_result_not_matching_result_type_fails_naming_the_field(work: Path) -> None:
    outcome = run_codex("FAKE_CODEX:badschema", work, timeout=20)
    assert outcome.status == "failed"
    assert "resultType 'analysis'" in outcome.error
    assert "result.findings" in outcome.error
    assert "wrong shape" in outcome.error


def test_nonzero_exit_fails_with_stderr_tail(work: Path) -> None:
    outcome = run_codex("FAKE_CODEX:fail", work, timeout=20)
    assert outcome.status == "failed"
    assert outcome.error.startswith("codex exited with code 1:")
    assert "model provider refused the request" in outcome.error


def test_timeout_kills_codex_and_its_children(work: Path) -> None:
    started = time.monotonic()
    outcome = run_codex("FAKE_CODEX:sleep", work, timeout=1.5)
    assert outcome.status == "failed"
    assert outcome.error == "codex timed out after 1.5 s"
    assert time.monotonic() - started < 6
    assert not pid_alive(int((work / ".fake-codex-child.pid").read_text()))


def test_cancel_event_kills_codex_and_its_children(work: Path) -> None:
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    outcome = run_codex("FAKE_CODEX:sleep", work, timeout=60, cancel_event=cancel)
    assert outcome.status == "failed"
    assert outcome.error == "canceled"
    assert outcome.durationMs < 5000
    assert not pid_alive(int((work / ".fake-codex-child.pid").read_text()))


def test_missing_codex_says_how_to_fix(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(work / "empty"))
    outcome = run_codex("FAKE_CODEX:ok", work, timeout=20)
    assert outcome.status == "failed"
    assert outcome.error == NOT_INSTALLED
    assert "MIMIKIT_WORKER_BACKEND=llm" in outcome.error


def test_command_uses_documented_exec_flags_and_stdin_prompt(tmp_path: Path) -> None:
    argv = build_command("codex", tmp_path / "s.json", tmp_path / "o.json", tmp_path, "m1")
    assert argv[:2] == ["codex", "exec"]
    assert argv[-1] == "-"
    for flag, value in [
        ("--output-schema", "s.json"),
        ("--output-last-message", "o.json"),
        ("--cd", str(tmp_path)),
        ("--model", "m1"),
    ]:
        assert argv[argv.index(flag) + 1].endswith(value)
    assert "--skip-git-repo-check" in argv


def test_result_schema_is_valid_for_strict_mode() -> None:
    def objects(node: object):
        if isinstance(node, dict):
            if node.get("type") == "object":
                yield node
            for value in node.values():
                yield from objects(value)
        elif isinstance(node, list):
            for item in node:
                yield from objects(item)

    found = list(objects(RESULT_JSON_SCHEMA))
    assert len(found) == 6
    for node in found:
        assert node["additionalProperties"] is False
        assert sorted(node["required"]) == sorted(node["properties"])
    json.dumps(RESULT_JSON_SCHEMA)
