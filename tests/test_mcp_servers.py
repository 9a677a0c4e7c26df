"""MCP servers below the agents: the config file, the environment a server runs with, and one
run's servers (stdio and streamable HTTP) against a real server process written with the SDK:
its tools, a call that hangs, a server that dies, and its tools in the Worker's answer schema."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jsonschema
import pytest
from mcp_helpers import http_server, stdio_entry

from mimikit.config import load_settings
from mimikit.exceptions import ConfigError, McpFailure
from mimikit.launcher import stop_processes
from mimikit.llm.registry import Registry
from mimikit.mcp.config import parse_config
from mimikit.mcp.environment import server_environment
from mimikit.mcp.run import RunServers


def _config(servers: dict, **top) -> str:
    return json.dumps({"mcpServers": servers, **top})


def _refusal(servers: dict) -> str:
    with pytest.raises(ConfigError) as refused:
        parse_config(_config(servers), Path("/etc/mimikit/mcp.json"))
    return str(refused.value)


def test_a_bad_entry_is_refused_naming_the_server_and_the_field_but_never_a_secret():
    said = _refusal({"git": {"command": "git-mcp", "args": "--repo ."}})
    assert "/etc/mimikit/mcp.json: server 'git'" in said and "field 'args'" in said
    said = _refusal({"git": {"command": "git-mcp", "env": {"TOKEN": 42}}})
    assert "field 'env.TOKEN'" in said and "42" not in said
    said = _refusal({"hub": {"url": "ftp://example.com", "headers": {"A": "Bearer s3cret"}}})
    assert "server 'hub'" in said and "field 'url'" in said and "http://" in said
    said = _refusal({"hub": {"url": "https://x", "headers": {"Authorization": ["s3cret"]}}})
    assert "field 'headers.Authorization'" in said and "s3cret" not in said
    said = _refusal({"x": {"command": "a", "autoApprove": ["t"]}})
    assert "unknown field 'autoApprove'" in said and "command" in said
    assert "not both" in _refusal({"x": {"command": "a", "url": "http://h/mcp"}})
    assert "SSE servers are not supported" in _refusal({"x": {"type": "sse", "url": "http://h"}})
    assert "neither is given" in _refusal({"x": {"args": ["a"]}})
    assert "letters, digits" in _refusal({"my server": {"command": "a"}})
    with pytest.raises(ConfigError, match="not valid JSON: .* line 1"):
        parse_config("{mcpServers: 1}", Path("mcp.json"))
    with pytest.raises(ConfigError, match='needs an object "mcpServers"'):
        parse_config('{"servers": {}}', Path("mcp.json"))


def test_a_config_written_for_other_clients_is_read_with_its_other_keys_left_alone():
    config = parse_config(_config({
        "files": {"type": "stdio", "command": "npx", "args": ["-y", "files-mcp", "/srv"],
                  "env": {"ROOT": "/srv"}},
        "docs": {"type": "streamable-http", "url": "https://user:pw@docs.example/mcp",
                 "headers": {"Authorization": "Bearer t"}, "description": "Product docs"},
        "old": {"command": "old-mcp", "disabled": True},
    }, globalShortcut="Ctrl+Space"), Path("claude_desktop_config.json"))
    assert config.names == ["files", "docs"]
    files, docs = config.servers
    assert (files.kind, files.target) == ("stdio", "npx -y files-mcp /srv")
    assert (docs.kind, docs.target) == ("http", "https://docs.example/mcp")
    assert docs.entry.description == "Product docs" and files.entry.timeout == 120


def test_a_server_gets_the_workers_environment_without_mimikits_secrets(runtime, monkeypatch):
    monkeypatch.setenv("MIMIKIT_API_TOKEN", "token-123456")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdef")
    monkeypatch.setenv("MIMIKIT_FLOWER_BASIC_AUTH", "admin:hunter22")
    monkeypatch.setenv("COPY_OF_THE_TOKEN", "Bearer token-123456")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ada")
    settings = load_settings()
    config = parse_config(_config({"secrets": stdio_entry(env={"SERVER_OWN": "1"})}),
                          Path("mcp.json"))
    with RunServers(settings, config, ["secrets"]) as servers:
        servers.start()
        names = json.loads(servers.call("secrets", "environment", {}).content[0].text)
    assert "GIT_AUTHOR_NAME" in names and "SERVER_OWN" in names and "PATH" in names
    assert not [n for n in names if n.startswith("MIMIKIT_")]
    assert "OPENAI_API_KEY" not in names and "COPY_OF_THE_TOKEN" not in names
    assert server_environment(settings, {}, {"X": "admin:hunter22 inside"}) == {}


def test_a_hanging_call_and_a_dying_server_fail_that_call_and_the_next_call_starts_it_again(
        runtime):
    config = parse_config(_config({"secrets": stdio_entry(timeout=2)}), Path("mcp.json"))
    registry = Registry()
    with RunServers(runtime.settings, config, ["secrets"]) as servers:
        for tool in servers.start():
            registry.register(tool)
        began = time.monotonic()
        hung = registry.call("worker", "secrets__wait", '{"seconds": 60}', None)
        hung_for = time.monotonic() - began
        again = registry.call("worker", "secrets__secret_word", '{"seed": 2}', None)
        died = registry.call("worker", "secrets__crash", "{}", None)
        back = registry.call("worker", "secrets__secret_word", '{"seed": 3}', None)
        refused = registry.call("worker", "secrets__secret_word", '{"seed": "six"}', None)
    assert not hung.ok and "did not answer wait within 2 s" in hung.content
    assert hung_for < 10  # the call's timeout and the server's stop, not the 60 s it asked
    assert again.ok and again.content == "word-14"
    assert not died.ok and "closed the connection during crash" in died.content
    assert "crashing on purpose" in died.content  # its stderr says why
    assert back.ok and back.content == "word-21"
    assert not refused.ok and "secret_word of MCP server 'secrets' failed" in refused.content


def test_servers_that_cannot_start_are_each_named_with_why(runtime):
    config = parse_config(_config({
        "gone": {"command": "/nonexistent/mcp-server"},
        "quits": stdio_entry("--exit-at-start"),
        "stuck": stdio_entry("--hang-at-start", startTimeout=2),
    }), Path("mcp.json"))
    with pytest.raises(McpFailure) as failed:
        RunServers(runtime.settings, config, ["gone", "quits", "stuck"]).start()
    said = str(failed.value)
    assert "'gone' (stdio: /nonexistent/mcp-server) could not be started: command not " \
           "found" in said
    assert "'quits'" in said and "exited (or closed its output) before answering" in said
    assert "no licence key found in LICENCE_KEY" in said
    assert "'stuck'" in said and "did not answer within 2 s" in said
    with pytest.raises(McpFailure, match=r"no MCP server named 'other' .*configured: gone"):
        RunServers(runtime.settings, config, ["other"]).start()


def test_a_streamable_http_server_is_listed_and_called_at_its_url(runtime, tmp_path):
    process, url = http_server(tmp_path)
    try:
        config = parse_config(_config({"remote": {"url": url, "headers": {"X-Team": "a"}}}),
                              Path("mcp.json"))
        with RunServers(runtime.settings, config, ["remote"]) as servers:
            names = [tool.name for tool in servers.start()]
            answer = servers.call("remote", "secret_word", {"seed": 5}).content[0].text
        wrong = parse_config(_config({"remote": {"url": url.replace("/mcp", "/nothing")}}),
                             Path("mcp.json"))
        with pytest.raises(McpFailure, match="'remote' .* could not be reached"):
            RunServers(runtime.settings, wrong, ["remote"]).start()
    finally:
        stop_processes([process], 5)
    assert names == ["remote__secret_word", "remote__wait", "remote__crash",
                     "remote__environment", "remote__add_note"]
    assert answer == "word-35"


def test_mcp_tools_are_branches_of_the_workers_step_schema(runtime):
    from mimikit.agents.common import run_registry, shape_in

    config = parse_config(_config({"secrets": stdio_entry()}), Path("mcp.json"))
    with RunServers(runtime.settings, config, ["secrets"]) as servers:
        view = run_registry("worker", servers.start())
    shape = shape_in(view, "worker")
    schema = shape.schema()
    jsonschema.validate({"check": "", "secrets__secret_word": {"seed": 6}}, schema)
    jsonschema.validate({"check": "", "shell": {"command": "ls"}}, schema)
    jsonschema.validate({"check": "", "secrets__add_note": {"note": {"title": "milk"}}},
                        schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"check": "", "secrets__secret_word": {"seed": "six"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"check": "", "secrets__add_note": {"note": {"tags": []}}}, schema)
    assert "secrets__add_note.Note" in schema["$defs"]  # its definitions, under its name
    assert shape.calls({"secrets__secret_word": {"seed": 6}}) == \
        [("secrets__secret_word", '{"seed": 6}')]
    native = {s["function"]["name"]: s["function"] for s in view.schemas_for("worker")}
    assert native["secrets__secret_word"]["parameters"] == {
        "properties": {"seed": {"type": "integer"}}, "required": ["seed"], "type": "object"}
    from mimikit.agents.common import registry

    assert "secrets__secret_word" not in registry().names_for("worker")  # the run's alone


def test_the_planner_names_only_configured_servers_and_each_firing_of_a_schedule_gets_them(
        runtime):
    from mimikit.agents.common import registry, run_registry
    from mimikit.mcp.planning import planner_tools
    from mimikit.scheduling.triggers import child_of
    from mimikit.tools.context import ToolContext

    config = parse_config(_config({"secrets": stdio_entry(), "notes": stdio_entry()}),
                          Path("mcp.json"))
    view = run_registry("planner", planner_tools(registry(), config))
    ctx = ToolContext(runtime=runtime, role="planner", trace_id="trace-1")
    made = view.call("planner", "schedule", json.dumps(
        {"prompt": "the word of the day", "cron": "0 9 * * *", "mcp": ["secrets"]}), ctx)
    assert made.ok, made.content
    unknown = view.call("planner", "delegate", json.dumps({"prompt": "x", "mcp": ["github"]}),
                        ctx)
    assert not unknown.ok and "'secrets'" in unknown.content and "'notes'" in unknown.content
    (trigger,) = ctx.staged
    assert trigger.mcp == ["secrets"] and child_of(trigger, catch_up=False).mcp == ["secrets"]
    without = registry().call("planner", "delegate",
                              json.dumps({"prompt": "x", "mcp": ["secrets"]}), ctx)
    assert not without.ok and "mcp" in without.content  # no such field without servers


def test_processes_load_the_mcp_sdk_only_where_a_server_is_started():
    import subprocess
    import sys

    from processes import ROOT

    code = ("import sys, mimikit.celery_tasks, mimikit.web, mimikit.status, "
            "mimikit.console.report; print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('mcp', 'mcp_types')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    assert done.stdout.strip() == "[]"  # ~50 MB and half a second per process otherwise
