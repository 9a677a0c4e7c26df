"""Shared by the MCP tests: the config file, and the test server (``mcp_server.py``) as an
entry of it or as a streamable-HTTP process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from processes import TESTS, free_port, wait_for

from mimikit.launcher import spawn

SERVER = str(TESTS / "mcp_server.py")


def stdio_entry(*flags: str, **fields: Any) -> dict[str, Any]:
    """The test server as an entry that Mimikit starts (``flags`` passed to it)."""
    return {"command": sys.executable, "args": [SERVER, *flags], **fields}


def write_config(runtime: Any, servers: dict[str, Any], **top: Any) -> Path:
    """``STATE_DIR/mcp.json`` with ``servers`` (and other top-level keys)."""
    path = Path(runtime.settings.state_dir) / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers, **top}), encoding="utf-8")
    return path


def http_server(log_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The test server serving streamable HTTP; its process and endpoint URL."""
    port = free_port()
    process = spawn([sys.executable, SERVER, "--http", str(port)], log_dir / "mcp-http.log")
    url = f"http://127.0.0.1:{port}/mcp"
    wait_for(lambda: _answers(port), timeout=30, message="the MCP server to listen")
    return process, url


def _answers(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
