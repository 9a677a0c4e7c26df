"""The MCP config: ``STATE_DIR/mcp.json``, or the file ``MIMIKIT_MCP_CONFIG`` names, in the shape
other MCP clients read: ``{"mcpServers": {NAME: {"command", "args", "env"} | {"url",
"headers"}}}``.

A server it starts (stdio) or one it reaches at a URL (streamable HTTP); each entry may also
say what the server is for (``description``, what the Planner reads), how long one call may
take (``timeout``, seconds), how long starting it and listing its tools may take
(``startTimeout``) and ``disabled``. Any other key of the file is left to the clients
it was written for; a bad entry is refused with the server and the field named (values of
``env`` and ``headers`` are never shown: they hold tokens).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mimikit.config import Settings
from mimikit.exceptions import ConfigError

log = logging.getLogger("mimikit.mcp")
CONFIG_NAME = "mcp.json"
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
CALL_TIMEOUT_SECONDS = 120.0  # one call's default bound (the run's deadline bounds it too)
START_TIMEOUT_SECONDS = 30.0  # to start a server and list its tools (the deadline too)
MAX_CALL_TIMEOUT_SECONDS = 86_400.0
DESCRIPTION_CHARS = 300
HTTP_TYPES = ("http", "streamable-http", "streamableHttp")
SECRET_FIELDS = ("env", "headers")  # their values are never shown in an error


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str | None = Field(None, max_length=DESCRIPTION_CHARS)
    timeout: float = Field(CALL_TIMEOUT_SECONDS, gt=0, le=MAX_CALL_TIMEOUT_SECONDS)
    startTimeout: float = Field(START_TIMEOUT_SECONDS, gt=0, le=MAX_CALL_TIMEOUT_SECONDS)
    disabled: bool = False


class StdioEntry(_Entry):
    """A server Mimikit starts and speaks to over its stdin and stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class HttpEntry(_Entry):
    """A server reached at a streamable-HTTP endpoint."""

    type: Literal["http", "streamable-http", "streamableHttp"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("must be an http:// or https:// URL (the server's streamable-HTTP "
                             "endpoint, e.g. http://127.0.0.1:8000/mcp)")
        return value


Entry = StdioEntry | HttpEntry


@dataclass(frozen=True)
class Server:
    """One configured server, by the name the config gives it."""

    name: str
    entry: Entry

    @property
    def kind(self) -> Literal["stdio", "http"]:
        return "stdio" if isinstance(self.entry, StdioEntry) else "http"

    @property
    def target(self) -> str:
        """What it is: the command line it is started with, or its URL (without
        credentials)."""
        if isinstance(self.entry, StdioEntry):
            return " ".join([self.entry.command, *self.entry.args])
        return re.sub(r"//[^/@]*@", "//", self.entry.url)

    @property
    def fingerprint(self) -> str:
        """A digest of the entry: what is learned of the server is kept under it, and
        forgotten when the entry changes."""
        dumped = json.dumps(self.entry.model_dump(exclude={"description", "timeout",
                                                            "startTimeout"}),
                            sort_keys=True)
        return hashlib.sha256(f"{self.name}\n{dumped}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class McpConfig:
    """The servers of one config file, in its order (disabled ones left out)."""

    path: Path
    servers: tuple[Server, ...]

    @property
    def names(self) -> list[str]:
        return [server.name for server in self.servers]

    def get(self, name: str) -> Server | None:
        return next((server for server in self.servers if server.name == name), None)


def config_path(settings: Settings) -> Path:
    """Where the config is read from."""
    return settings.mcp_config or settings.state_dir / CONFIG_NAME


def load_config(settings: Settings) -> McpConfig | None:
    """The config, or None when there is none (no ``mcp.json`` in the state dir and no
    ``MIMIKIT_MCP_CONFIG``).

    Raises:
        ConfigError: The file cannot be read, is no JSON, or an entry is bad (named, with
            the field and the fix).
    """
    path = config_path(settings)
    if settings.mcp_config is None and not path.exists():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read the MCP config {path}: {error.strerror or error}; "
                          "fix MIMIKIT_MCP_CONFIG or the file's permissions") from None
    return parse_config(text, path)


def offered(settings: Settings) -> McpConfig | None:
    """The config whose servers agents are offered: None when there is none, or when it is
    invalid (logged; ``mimikit doctor`` and ``mimikit status`` say why)."""
    try:
        return load_config(settings)
    except ConfigError as error:
        log.warning("MCP servers are not offered: %s", error)
        return None


def parse_config(text: str, path: Path) -> McpConfig:
    """The config in ``text`` (read from ``path``).

    Raises:
        ConfigError: It is no JSON object with ``mcpServers``, or an entry is bad.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"the MCP config {path} is not valid JSON: {error.msg} at line "
                          f"{error.lineno} column {error.colno}") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f"the MCP config {path} needs an object \"mcpServers\": "
                          '{"name": {"command": "...", "args": [...]}} or '
                          '{"name": {"url": "https://..."}}')
    found = [Server(name, _entry(path, name, raw)) for name, raw in servers.items()]
    return McpConfig(path, tuple(server for server in found if not server.entry.disabled))


def _entry(path: Path, name: str, raw: Any) -> Entry:
    where = f"MCP config {path}: server {name!r}"
    if not SERVER_NAME.match(name):
        raise ConfigError(f"{where}: a name has 1 to 40 letters, digits, '_' or '-' (it "
                          "prefixes the names of its tools); rename it")
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be an object with \"command\" (a server to start) "
                          "or \"url\" (a streamable-HTTP server)")
    kind = raw.get("type")
    if kind == "sse" or (kind is None and "command" not in raw and "url" not in raw):
        reason = "SSE servers are not supported" if kind == "sse" else "neither is given"
        raise ConfigError(f"{where}: {reason}; give \"command\" (and \"args\", \"env\") for a "
                          "server to start, or \"url\" (and \"headers\") for a streamable-HTTP "
                          "server")
    if "command" in raw and "url" in raw:
        raise ConfigError(f"{where}: give \"command\" or \"url\", not both")
    model: type[Entry] = HttpEntry if "url" in raw or kind in HTTP_TYPES else StdioEntry
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(f"{where}: {_problems(error, model)}") from None


def _problems(error: ValidationError, model: type[Entry]) -> str:
    problems = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "entry"
        top = str(item["loc"][0]) if item["loc"] else ""
        if item["type"] == "extra_forbidden":
            known = ", ".join(sorted(model.model_fields))
            problems.append(f"unknown field {field!r} (a {model.__name__[:-5].lower()} server "
                            f"takes {known})")
            continue
        shown = "" if top in SECRET_FIELDS or item["type"] == "missing" else \
            f" (got {json.dumps(item.get('input'), default=str)[:60]})"
        problems.append(f"field {field!r}: {item['msg']}{shown}")
    return "; ".join(problems)
