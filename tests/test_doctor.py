"""``mimikit doctor``: all green on a healthy instance; each broken part failed with its fix."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta

import pytest
from processes import RedisServer, free_port, wait_for
from test_cli_commands import installed

from mimikit.delivery.workers import WORKER_TTL_SECONDS, register_worker
from mimikit.doctor import (
    check_clocks,
    check_directory,
    check_llm,
    check_persistence,
    format_check,
    run_checks,
)
from mimikit.models import utcnow
from mimikit.scheduling.beat import liveness
from mimikit.store.runtime import build_runtime
from mimikit.workspace.sandbox import choose_sandbox

MODELS = ("teller", "planner", "worker", "default")  # the models conftest configures
CHECKS = ["redis", "persistence", "queue teller", "queue planner", "queue worker",
          "queue supervisor", "beat", "clocks", "llm", "llm server", "state dir", "work dir",
          "sandbox", "mcp"]


def serve_models(llm, *models: str) -> None:
    """Make the scripted LLM list ``models`` (it lists every model it has an answer for)."""
    for model in models:
        llm.default(model, {"content": "ready", "tool_calls": []})


def rows(report: str) -> dict[str, str]:
    """The lines of a text report by check name (the summary line left out)."""
    return {line[6:23].strip(): line for line in report.splitlines()[:-1]}


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of this test alone, so its configuration may be changed."""
    server = RedisServer(free_port(), tmp_path / "private-redis").start()
    yield server
    server.stop()


def test_doctor_is_all_green_on_a_healthy_instance(stack, procs, llm):
    serve_models(llm, *MODELS)
    procs.beat()
    wait_for(lambda: liveness(stack)["alive"], timeout=30, message="beat to hold the lock")
    stack.settings.state_dir.mkdir(parents=True, exist_ok=True)
    # Without bubblewrap or Landlock on this host the sandbox check warns; "off" silences it.
    quiet = {} if choose_sandbox("auto").kind else {"MIMIKIT_SHELL_SANDBOX": "off"}
    done = installed("doctor", env_extra=quiet)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["ok"] * len(CHECKS), done.stdout
    assert lines[-1] == "all checks passed"
    by_name = rows(done.stdout)
    assert list(by_name) == CHECKS
    assert "AOF on" in by_name["persistence"]
    assert "tasks-" in by_name["queue worker"] and "agents-" in by_name["queue teller"]
    assert "holds the scheduler lock" in by_name["beat"]
    assert "serves default, planner, teller, worker" in by_name["llm"]
    report = json.loads(installed("doctor", "--json", env_extra=quiet).stdout)
    assert report["ok"] is True
    assert [(c["name"], c["status"]) for c in report["checks"]] == [(n, "ok") for n in CHECKS]


def test_doctor_fails_without_a_task_worker_beat_or_reachable_llm_and_names_the_fixes(
        runtime, procs):
    procs.worker(queues="teller,planner,supervisor", name="agents")
    closed = f"http://127.0.0.1:{free_port()}/v1"
    done = installed("doctor", env_extra={"MIMIKIT_LLM_BASE_URL": closed})
    assert done.returncode == 1, done.stdout + done.stderr
    lines = rows(done.stdout)
    assert lines["queue teller"].startswith("ok")
    assert lines["queue worker"].startswith("FAIL  queue worker      no live worker consumes it")
    assert "fix: start one: `mimikit worker --queues worker` (or `mimikit up`)" in \
        lines["queue worker"]
    assert lines["beat"].startswith("FAIL") and "fix: start exactly one `mimikit beat`" in \
        lines["beat"]
    assert lines["llm"].startswith("FAIL") and "connection refused" in lines["llm"]
    assert f"fix: start the LLM server or fix MIMIKIT_LLM_BASE_URL ({closed})" in lines["llm"]
    assert done.stdout.splitlines()[-1] == "3 checks failed"
    report = json.loads(installed("doctor", "--json",
                                  env_extra={"MIMIKIT_LLM_BASE_URL": closed}).stdout)
    failed = {c["name"]: c["fix"] for c in report["checks"] if c["status"] == "fail"}
    assert report["ok"] is False and set(failed) == {"queue worker", "beat", "llm"}


def test_doctor_without_redis_fails_it_and_skips_what_needs_it():
    url = f"redis://127.0.0.1:{free_port()}/0"
    done = installed("doctor", env_extra={"MIMIKIT_REDIS_URL": url})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"FAIL  redis             cannot reach {url}")
    assert "fix: start Redis, set MIMIKIT_REDIS_URL, or run `mimikit up`" in lines[0]
    assert [line.split()[0] for line in lines[1:8]] == ["skip"] * 7


def test_a_model_the_llm_does_not_serve_fails_naming_the_variable_to_set(runtime, llm):
    serve_models(llm, "teller", "planner", "worker", "gpt-other")
    settings = runtime.settings.model_copy(update={"llm_base_url": llm.url})
    check = check_llm(settings)
    assert check.status == "fail"
    assert "does not serve 'default' (llm_eval)" in check.detail
    assert "it serves: gpt-other, planner, teller, worker" in check.detail
    assert check.fix.startswith("set MIMIKIT_MODEL to a model it serves")
    worker_missing = check_llm(settings.model_copy(update={"worker_model": "big"}))
    assert "'big' (worker)" in worker_missing.detail
    assert "MIMIKIT_WORKER_MODEL" in worker_missing.fix


def test_an_llm_without_a_model_listing_is_asked_once_per_model(runtime, llm):
    llm.lists_models = False
    serve_models(llm, *MODELS)
    settings = runtime.settings.model_copy(update={"llm_base_url": llm.url})
    check = check_llm(settings)
    assert check.status == "ok", check
    assert "answered a one-line request with each of default, planner, teller, worker" in \
        check.detail
    assert {model: len(llm.requests_for(model)) for model in MODELS} == dict.fromkeys(MODELS, 1)
    llm.reset()
    serve_models(llm, "teller", "planner", "worker")
    unknown = check_llm(settings)
    assert unknown.status == "fail" and "'default'" in unknown.detail, unknown


def test_no_llm_configured_fails_with_the_variables_to_set(runtime):
    settings = runtime.settings.model_copy(update={"llm_base_url": None, "llm_api_key": None})
    check = check_llm(settings)
    assert (check.status, check.detail) == ("fail", "no LLM is configured")
    assert "MIMIKIT_LLM_BASE_URL" in check.fix and "MIMIKIT_LLM_API_KEY" in check.fix


def test_persistence_ok_with_aof_warned_with_rdb_only_failed_with_none(runtime, private_redis):
    redis = private_redis.client()
    local = build_runtime(runtime.settings.model_copy(update={"redis_url": private_redis.url}))
    assert check_persistence(local).status == "ok"
    redis.config_set("appendonly", "no")
    redis.config_set("save", "900 1")
    rdb_only = check_persistence(local)
    assert rdb_only.status == "warn" and "RDB snapshots only (save 900 1)" in rdb_only.detail
    assert "CONFIG SET appendonly yes" in rdb_only.fix
    redis.config_set("save", "")
    none = check_persistence(local)
    assert none.status == "fail" and "neither AOF nor RDB" in none.detail
    assert format_check(none).startswith("FAIL  persistence       neither AOF nor RDB is on")


def test_persistence_on_a_redis_that_refuses_config_is_a_warning_not_a_crash(
        runtime, private_redis):
    private_redis.client().execute_command(
        "ACL", "SETUSER", "app", "on", ">secret", "~*", "&*", "+@all", "-config")
    url = private_redis.url.replace("redis://", "redis://app:secret@")
    limited = build_runtime(runtime.settings.model_copy(update={"redis_url": url}))
    check = check_persistence(limited)
    assert check.status == "warn" and "CONFIG GET is refused" in check.detail
    assert "provider's settings" in check.fix
    checks = {c.name: c for c in run_checks(limited)}
    assert checks["redis"].status == "ok" and checks["persistence"].status == "warn"
    assert "app:secret" not in checks["redis"].detail


def test_a_worker_host_whose_clock_is_off_fails_the_clock_check(runtime):
    register_worker(runtime, {"name": "good@in-sync", "queues": ["worker"]})
    assert check_clocks(runtime).status == "ok"
    skewed = {"name": "w@drifting", "queues": ["worker"],
              "seenAt": (utcnow() + timedelta(seconds=9)).isoformat()}
    # what register_worker writes on a host whose clock is 9 s ahead
    runtime.redis.set(runtime.keys.worker("w@drifting"), json.dumps(skewed),
                      ex=WORKER_TTL_SECONDS)
    runtime.redis.zadd(runtime.keys.worker_names,
                       {"w@drifting": datetime.fromisoformat(skewed["seenAt"]).timestamp()})
    check = check_clocks(runtime)
    assert check.status == "fail"
    assert check.detail.startswith("worker host drifting is 9.0 s ahead of Redis")
    assert "NTP" in check.fix


def test_directories_missing_not_a_directory_or_present(runtime, tmp_path):
    assert check_directory("work dir", tmp_path, "MIMIKIT_WORK_DIR").status == "ok"
    missing = check_directory("work dir", tmp_path / "nope", "MIMIKIT_WORK_DIR")
    assert missing.status == "fail" and "does not exist" in missing.detail
    assert "mkdir -p" in missing.fix and "MIMIKIT_WORK_DIR" in missing.fix
    later = check_directory("state dir", tmp_path / "fresh", "MIMIKIT_STATE_DIR")
    assert later.status == "warn" and "created on first use" in later.detail
    (tmp_path / "file").write_text("x")
    not_dir = check_directory("state dir", tmp_path / "file", "MIMIKIT_STATE_DIR")
    assert not_dir.status == "fail" and "is not a directory" in not_dir.detail
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert check_directory("state dir", locked, "MIMIKIT_STATE_DIR").status == "fail"


def test_doctor_says_in_one_line_how_the_server_handles_tools(llm, tmp_path):
    """A server that writes calls into the text, holds no answer to a schema and sends no
    usage in its streams, as llama.cpp's may without --jinja."""
    from llm_server import text, without_usage

    from mimikit.config import load_settings
    from mimikit.doctor import check_llm, check_llm_server

    serve_models(llm, *MODELS)
    for model in MODELS:
        llm.default(model, without_usage(text('<tool_call>{"name": "reply", "arguments": '
                                              '{"text": "ok"}}</tool_call>')))
    settings = load_settings(llm_base_url=llm.url)
    line = check_llm_server(settings, check_llm(settings)).detail
    assert line.count("path text") == 3  # one line for each role's model
    assert "tool calls written as text" in line and "tool_choice required not held" in line
    assert "no usage in streams (estimated)" in line
    probes = llm.requests_for("teller")
    assert "response_format" in probes[0]  # held to a schema? (it was not)
    assert any(probe.get("tool_choice") == "required" for probe in probes)
    assert all(probe["max_tokens"] == 24 for probe in probes)
