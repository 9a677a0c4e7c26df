"""One logging setup for every process: MIMIKIT_LOG_LEVEL and MIMIKIT_LOG_FORMAT (text or
JSON lines with the ids of the work in hand), the supervisor tick kept out of INFO, the web
access log on, secrets kept out of it."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
import urllib.request
from pathlib import Path

import pytest
from processes import ROOT, wait_for

from mimikit import logs
from mimikit.launcher import spawn, stop_processes

JSON_KEYS = {"time", "level", "logger", "message"}
TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


@pytest.fixture
def captured():
    """This process's logging set up on a string buffer; put back as it was afterwards."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    stream = io.StringIO()
    yield stream
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)
    logs.unbind()


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_json_lines_carry_time_level_logger_message_and_the_ids_of_the_work(captured):
    logs.configure("INFO", "json", captured)
    log = logging.getLogger("mimikit.test")
    logs.bind(taskId="task-1", traceId="trace-1", celeryId="c-1")
    log.info("working on %s", "it")
    log.warning("explicit", extra={"taskId": "task-2"})
    logs.unbind()
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("it failed")
    first, second, third = (json.loads(line) for line in lines(captured))
    assert set(first) == JSON_KEYS | {"taskId", "traceId", "celeryId"}
    assert first["level"] == "INFO" and first["logger"] == "mimikit.test"
    assert first["message"] == "working on it" and first["taskId"] == "task-1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", first["time"])
    assert second["taskId"] == "task-2" and second["traceId"] == "trace-1"
    assert "traceId" not in third and "ValueError: boom" in third["exception"]


def test_the_level_drops_lower_records_even_of_loggers_set_lower(captured):
    logs.configure("WARNING", "text", captured)
    chatty = logging.getLogger("mimikit.test.chatty")
    chatty.setLevel(logging.DEBUG)
    try:
        chatty.info("not shown")
        chatty.warning("shown")
    finally:
        chatty.setLevel(logging.NOTSET)
    assert len(lines(captured)) == 1
    assert TEXT_LINE.match(lines(captured)[0]) and lines(captured)[0].endswith(
        "WARNING mimikit.test.chatty: shown")


def test_a_second_setup_replaces_the_first(captured):
    logs.configure("INFO", "text", captured)
    logs.configure("INFO", "json", captured)
    logging.getLogger("mimikit.test").info("once")
    assert [json.loads(line)["message"] for line in lines(captured)] == ["once"]


def test_routine_tick_lines_go_below_warning_and_real_work_stays(captured):
    logs.configure("DEBUG", "json", captured)
    trace = logging.getLogger("celery.app.trace")
    beat = logging.getLogger("celery.beat")
    tick, work = "mimikit.supervisor.tick", "mimikit.worker"
    trace.info("Task %(name)s[%(id)s] succeeded in %(runtime)ss", {"name": tick, "id": "1", "runtime": 0.1})
    beat.info("Scheduler: Sending due task %s (%s)", tick, tick)
    trace.info("Task %(name)s[%(id)s] succeeded in %(runtime)ss", {"name": work, "id": "2", "runtime": 3})
    trace.error("Task %(name)s[%(id)s] raised", {"name": tick, "id": "3"})
    logging.getLogger("mimikit.supervisor").info("recovered task-9 (%s)", tick)
    kept = [json.loads(line)["message"] for line in lines(captured)]
    assert kept == ["Task mimikit.worker[2] succeeded in 3s",
                    "Task mimikit.supervisor.tick[3] raised",
                    "recovered task-9 (mimikit.supervisor.tick)"]


def test_log_settings_are_validated(monkeypatch):
    from mimikit.config import load_settings
    from mimikit.exceptions import ConfigError

    monkeypatch.setenv("MIMIKIT_LOG_LEVEL", "warning")
    monkeypatch.setenv("MIMIKIT_LOG_FORMAT", "JSON")
    settings = load_settings()
    assert (settings.log_level, settings.log_format) == ("WARNING", "json")
    monkeypatch.setenv("MIMIKIT_LOG_LEVEL", "loud")
    with pytest.raises(ConfigError, match="MIMIKIT_LOG_LEVEL='loud'.*'DEBUG', 'INFO'"):
        load_settings()
    monkeypatch.setenv("MIMIKIT_LOG_LEVEL", "INFO")
    monkeypatch.setenv("MIMIKIT_LOG_FORMAT", "xml")
    with pytest.raises(ConfigError, match="MIMIKIT_LOG_FORMAT='xml'.*'text' or 'json'"):
        load_settings()


# --- real processes -----------------------------------------------------------------------------


def _start(name: str, args: list[str], log_dir: Path, **env: str):
    return spawn([sys.executable, "-m", "mimikit", *args], log_dir / f"{name}.log", cwd=ROOT,
                 env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def _ticks(runtime) -> str:
    return (runtime.redis.get(runtime.keys.meta("last_tick")) or b"").decode()


def _send_archive(runtime) -> None:
    from mimikit.celery_app import app

    app.send_task("mimikit.memory.archive", queue="supervisor")
    wait_for(lambda: runtime.redis.get(runtime.keys.meta("archive_last_run")), timeout=30,
             message="the archive task to run")


@pytest.mark.slow
def test_worker_and_beat_write_json_lines_without_the_tick(runtime, tmp_path):
    worker = _start("worker", ["worker", "--queues", "supervisor", "--concurrency", "1",
                               "--name", f"json-{os.getpid()}@test"], tmp_path,
                    MIMIKIT_LOG_FORMAT="json")
    beat = _start("beat", ["beat"], tmp_path, MIMIKIT_LOG_FORMAT="json")
    try:
        seen = {wait_for(lambda: _ticks(runtime), timeout=30, message="a first tick")}
        wait_for(lambda: seen.add(_ticks(runtime)) or len(seen) >= 4, timeout=30,
                 message="several ticks")
        _send_archive(runtime)
        wait_for(lambda: (tmp_path / "worker.log").read_text().count(
            "mimikit.memory.archive[") >= 2, timeout=10,
            message="the archive task received and succeeded in the worker's log")
        texts = {name: (tmp_path / f"{name}.log").read_text() for name in ("worker", "beat")}
    finally:
        stop_processes([worker, beat], 20)
    for name, text in texts.items():
        entries = [json.loads(line) for line in text.splitlines() if line.strip()]
        assert entries and all(JSON_KEYS <= set(e) for e in entries), name
        assert not [e for e in entries if "mimikit.supervisor.tick" in e["message"]], name
    archive = [e for e in (json.loads(line) for line in texts["worker"].splitlines())
               if "mimikit.memory.archive" in e["message"]]
    assert [e["level"] for e in archive] == ["INFO", "INFO"]  # received, succeeded
    assert all(e.get("celeryId") for e in archive)


@pytest.mark.slow
def test_a_worker_at_warning_writes_no_info_lines(runtime, tmp_path):
    worker = _start("worker", ["worker", "--queues", "supervisor", "--concurrency", "1",
                               "--name", f"quiet-{os.getpid()}@test"], tmp_path,
                    MIMIKIT_LOG_LEVEL="WARNING")
    try:
        wait_for(lambda: runtime.redis.zcard(runtime.keys.worker_names), timeout=30,
                 message="the worker to register")
        _send_archive(runtime)
    finally:
        stop_processes([worker], 20)
    log_lines = [line for line in (tmp_path / "worker.log").read_text().splitlines()
                 if TEXT_LINE.match(line)]
    assert [line for line in log_lines if " INFO " in line or " DEBUG " in line] == []


def test_the_web_access_log_is_json_without_secrets_or_health_checks(runtime, tmp_path):
    from web_helpers import WebServer

    server = WebServer(tmp_path / "web.log", env={"MIMIKIT_LOG_FORMAT": "json"}).start()
    try:
        server.get_json("/api/health")
        server.get_json("/api/messages?limit=1&token=s3cret-value")
        try:
            urllib.request.urlopen(server.url + "/api/nope", timeout=5)
        except OSError as error:
            assert getattr(error, "code", None) == 404
        wait_for(lambda: all(path in (tmp_path / "web.log").read_text()
                             for path in ("/api/nope", "/api/messages")),
                 timeout=10, message="the access log lines")
    finally:
        server.stop()
    text = (tmp_path / "web.log").read_text()
    entries = [json.loads(line) for line in text.splitlines() if line.strip()]
    access = [e for e in entries if e["logger"] == "gunicorn.access"]
    # a line is written once its response is sent: threads may finish in either order
    assert sorted((e["http"]["method"], e["http"]["path"], e["http"]["status"])
                  for e in access) == [
        ("GET", "/", 200),  # the test server's readiness probe
        ("GET", "/api/messages?limit=1&token=***", 200), ("GET", "/api/nope", 404)]
    assert "s3cret-value" not in text
    assert all(isinstance(e["http"]["durationMs"], int) for e in access)
    assert any(e["logger"] == "gunicorn.error" for e in entries)  # gunicorn's own lines too
