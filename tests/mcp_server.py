"""A small real MCP server, written with the official SDK, that tests start as a process.

``python tests/mcp_server.py`` serves over stdio; ``--http PORT`` over streamable HTTP at
``http://127.0.0.1:PORT/mcp``. ``--exit-at-start`` says why on stderr and exits before
answering; ``--hang-at-start`` never answers; ``--tag`` is ignored (it marks the process). With ``MCP_TEST_CALLS`` set to a file, each
``secret_word`` call appends a line to it.

Tools: ``secret_word(seed)`` (what no other tool knows), ``wait(seconds)`` (a call that
hangs), ``crash()`` (the server dies mid-call), ``environment()`` (the names of its
environment variables), ``add_note(note)`` (its schema has definitions).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

DESCRIPTION = "Secret words by seed"


def secret_word(seed: int) -> str:
    """The secret word of a seed."""
    calls = os.environ.get("MCP_TEST_CALLS")
    if calls:
        with open(calls, "a", encoding="utf-8") as log:
            log.write(f"{seed}\n")
    return f"word-{seed * 7}"


def wait(seconds: float) -> str:
    """Wait this many seconds, then answer."""
    time.sleep(seconds)
    return "waited"


def crash() -> str:
    """Stop the server in the middle of the call."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


class Note(BaseModel):
    title: str
    tags: list[str] = []


def add_note(note: Note) -> str:
    """Keep a note."""
    return f"noted {note.title}"


def environment() -> str:
    """The names of the server's environment variables."""
    return json.dumps(sorted(os.environ))


def build() -> MCPServer:
    server = MCPServer("secrets", description=DESCRIPTION)
    for tool in (secret_word, wait, crash, environment, add_note):
        server.tool()(tool)
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--exit-at-start", action="store_true")
    parser.add_argument("--hang-at-start", action="store_true")
    parser.add_argument("--tag", help="ignored: tells this server's process apart")
    options = parser.parse_args()
    if options.exit_at_start:
        print("no licence key found in LICENCE_KEY", file=sys.stderr, flush=True)
        sys.exit(2)
    if options.hang_at_start:
        time.sleep(3600)
    if options.http:
        build().run("streamable-http", host="127.0.0.1", port=options.http)
    else:
        build().run()


if __name__ == "__main__":
    main()
