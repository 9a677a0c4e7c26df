"""The configured MCP servers in ``mimikit doctor`` (each started once, its tools listed, or
why it failed), ``mimikit status`` and ``GET /api/status`` (listed, not started), and what the
Planner reads of a server that has no description of its own."""

from __future__ import annotations

import json

from mcp_helpers import stdio_entry, write_config
from test_cli_commands import installed

from mimikit.mcp.catalog import described
from mimikit.mcp.config import load_config


def _doctor(*args: str) -> tuple[int, dict[str, dict]]:
    done = installed("doctor", "--json", *args, timeout=60)
    checks = {check["name"]: check for check in json.loads(done.stdout)["checks"]}
    return done.returncode, checks


def test_doctor_lists_each_server_with_its_tools_and_says_which_failed_and_why(runtime):
    path = write_config(runtime, {
        "secrets": stdio_entry(),
        "gone": {"command": "/nonexistent/mcp-server", "args": ["--stdio"]},
        "quits": stdio_entry("--exit-at-start"),
        "stuck": stdio_entry("--hang-at-start", startTimeout=2),
    })
    code, checks = _doctor()
    assert code == 1
    secrets = checks["mcp secrets"]
    assert secrets["status"] == "ok"
    assert "5 tools: secret_word, wait, crash, environment, add_note" in secrets["detail"]
    gone = checks["mcp gone"]
    assert gone["status"] == "fail" and "command not found" in gone["detail"]
    assert str(path) in gone["fix"] and "run its command by hand" in gone["fix"]
    assert "no licence key found in LICENCE_KEY" in checks["mcp quits"]["detail"]
    assert "did not answer within 2 s" in checks["mcp stuck"]["detail"]
    # what doctor learned is what the Planner reads of a server without a description
    config = load_config(runtime.settings)
    assert described(runtime, config)["secrets"] == "Secret words by seed"
    assert described(runtime, config)["gone"] == ""


def test_doctor_names_the_bad_field_of_a_config_and_says_when_there_is_none(runtime):
    write_config(runtime, {"files": {"command": "files-mcp", "args": "/srv"}})
    code, checks = _doctor()
    assert code == 1 and checks["mcp"]["status"] == "fail"
    assert "server 'files': field 'args'" in checks["mcp"]["detail"]
    (runtime.settings.state_dir / "mcp.json").unlink()
    _code, checks = _doctor()
    assert checks["mcp"]["status"] == "ok" and "none configured" in checks["mcp"]["detail"]


def test_status_and_the_api_list_the_servers_without_starting_them(runtime):
    from mimikit.status import status
    from mimikit.web import create_app

    write_config(runtime, {
        "secrets": stdio_entry("--token", "abc123", description="Secret words by seed"),
        "docs": {"url": "https://user:pw@docs.example/mcp", "headers": {"A": "Bearer t0k"}},
    })
    report = status(runtime)["mcp"]
    assert report["config"] == str(runtime.settings.state_dir / "mcp.json")
    secrets, docs = report["servers"]
    assert secrets["name"] == "secrets" and secrets["kind"] == "stdio"
    assert secrets["description"] == "Secret words by seed"
    assert "abc123" not in json.dumps(report) and "t0k" not in json.dumps(report)
    assert docs == {"name": "docs", "kind": "http", "target": "https://docs.example/mcp",
                    "description": None}
    body = create_app(runtime.settings).test_client().get("/api/status").get_json()
    assert [server["name"] for server in body["mcp"]["servers"]] == ["secrets", "docs"]
    done = installed("status")
    assert "mcp       2 servers" in done.stdout and "secrets  stdio" in done.stdout
    write_config(runtime, {"secrets": {"command": ""}})
    assert "field 'command'" in status(runtime)["mcp"]["error"]
