"""Settings: every ``MIMIKIT_*`` variable, read once, validated, documented."""

from __future__ import annotations

import os
from functools import cached_property
from ipaddress import ip_address
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from mimikit.exceptions import ConfigError, InvalidValue
from mimikit.models import MAX_TASK_TIMEOUT_SECONDS
from mimikit.prices import PriceTable, parse_prices
from mimikit.roles import ROLES

# Settings whose values are never printed, not even in an error about them.
SECRET_SETTINGS = frozenset({"api_token", "llm_api_key", "flower_basic_auth"})
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


DEFAULT_LLM_BASE_URL = "https://api.openai.com/v1"  # where a model is asked when no URL is set


class Settings(BaseSettings):
    """The runtime configuration (env prefix ``MIMIKIT_``, optional ``.env``)."""

    model_config = SettingsConfigDict(
        env_prefix="MIMIKIT_",
        env_file=".env",
        extra="ignore",
        validate_default=True,
        populate_by_name=True,
    )

    redis_url: str = "redis://127.0.0.1:6379/0"
    state_dir: Path = Path(".mimikit")
    work_dir: Path = Path(".")
    host: str = "127.0.0.1"
    port: int = Field(8787, ge=1, le=65535)
    api_token: SecretStr | None = None
    flower_basic_auth: SecretStr | None = Field(
        None, description="user:password for `mimikit flower`")

    llm_base_url: str | None = Field(
        None, validation_alias=AliasChoices("MIMIKIT_LLM_BASE_URL", "OPENAI_BASE_URL")
    )
    llm_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("MIMIKIT_LLM_API_KEY", "OPENAI_API_KEY")
    )
    model: str = "gpt-4o-mini"
    teller_model: str | None = None
    planner_model: str | None = None
    worker_model: str | None = None
    worker_backend: Literal["llm", "codex"] = "llm"
    shell_sandbox: Literal["auto", "on", "off", "bwrap", "landlock", "sandbox-exec"] = Field(
        "auto", description="the Worker's shell in a sandbox: auto (the first of bwrap, "
                            "landlock and sandbox-exec this host has), on (the same, refusing "
                            "commands where there is none), a kind's name (that one only), off")
    shell_network: bool = Field(False, description="sandboxed shell commands reach the network")

    concurrency: int = Field(32, ge=1, le=256, description="runs in flight at once per worker "
                             "process (the task worker of `mimikit up`)")
    shell_concurrency: int = Field(
        default_factory=lambda: os.cpu_count() or 1, ge=1, le=1024,
        description="shell commands and codex runs at once per host (default: its cores)")
    retry_max_attempts: int = Field(3, ge=1, le=100, description="attempts of a task whose "
                                    "worker died, unless the task sets retry.maxAttempts")
    llm_outage_backoff_max: float = Field(
        300.0, gt=0, le=86_400, description="the longest wait, in seconds, between two tries "
                                            "of a task waiting for the LLM to come back")
    tick_seconds: float = Field(1.0, gt=0, le=3600)
    llm_eval_interval: float = Field(300.0, gt=0)
    key_prefix: str = Field("mimikit", pattern=r"^[A-Za-z0-9_.-]+$")
    timezone: str = Field("UTC", description="IANA zone naive times and cron are read in")

    teller_timeout: int = Field(120, gt=0, le=MAX_TASK_TIMEOUT_SECONDS, description="seconds a Teller run may take")
    planner_timeout: int = Field(600, gt=0, le=MAX_TASK_TIMEOUT_SECONDS, description="seconds a Planner run may take")
    worker_timeout: int = Field(1800, gt=0, le=MAX_TASK_TIMEOUT_SECONDS, description="seconds a Worker task may take")
    max_steps: int = Field(24, ge=1, le=500, description="LLM round trips per agent run")
    teller_max_steps: int = Field(6, ge=1, le=100, description="LLM round trips per Teller run")
    max_tokens: int = Field(4096, ge=16, le=1_000_000, description="most tokens one answer may "
                            "have (a longer one is cut, and asked again shorter)")
    teller_max_tokens: int | None = Field(1024, ge=16, le=1_000_000)
    planner_max_tokens: int | None = Field(None, ge=16, le=1_000_000)
    worker_max_tokens: int | None = Field(None, ge=16, le=1_000_000)
    llm_timeout: float = Field(120.0, gt=0, description="seconds per LLM request")
    llm_retries: int = Field(3, ge=0, le=10)
    llm_temperature: float | None = Field(
        None, ge=0, le=2, description="sampling temperature sent with every request; unset: "
        "0 for answers held to a schema (a small model decides best greedily), else the "
        "server's own")
    heartbeat_seconds: float = Field(10.0, gt=0, description="running-task heartbeat lifetime")

    prices: str | None = Field(None, description="JSON or a JSON file: model -> {input, output} "
                                                 "per million tokens")
    budget_day: float | None = Field(None, ge=0, description="most spent per day (all roles but "
                                                             "the Teller's small reserve)")
    budget_task: float | None = Field(None, ge=0, description="most one task may spend")

    mcp_config: Path | None = Field(
        None, description="the MCP config file (default: mcp.json in the state dir)")

    retention_days: int = Field(30, ge=1, le=36_500, description="days finished tasks, their "
                                "results, logs and run records are kept")
    log_level: LogLevel = Field("INFO", description="the least severe log records written")
    log_format: Literal["text", "json"] = Field(
        "text", description="text lines, or one JSON object per line")

    @field_validator("redis_url")
    @classmethod
    def _redis_scheme(cls, value: str) -> str:
        if urlparse(value).scheme not in {"redis", "rediss", "unix"}:
            raise InvalidValue("not a redis:// URL; use e.g. redis://127.0.0.1:6379/0")
        return value

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidValue("not an IANA time zone; use e.g. UTC, Europe/Berlin or "
                             "America/New_York") from None
        return value

    @field_validator("log_level", "log_format", "shell_sandbox", mode="before")
    @classmethod
    def _any_case(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, str):
            return value
        value = value.strip()
        return value.upper() if info.field_name == "log_level" else value.lower()

    @field_validator("prices")
    @classmethod
    def _price_table(cls, value: str | None) -> str | None:
        parse_prices(value)  # refused here, with the reason, rather than at the first LLM call
        return value

    @field_validator("flower_basic_auth")
    @classmethod
    def _user_and_password(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        user, sep, password = value.get_secret_value().partition(":")
        if not (user and sep and password) or any(c.isspace() for c in user + password):
            raise InvalidValue("must be user:password (no spaces)")
        return value

    @field_validator("llm_base_url", "api_token", "llm_api_key", "flower_basic_auth", "prices",
                     "mcp_config", mode="before")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value or None

    @cached_property
    def price_table(self) -> PriceTable:
        """The price of each model that has one."""
        return parse_prices(self.prices)

    @property
    def retention_seconds(self) -> int:
        """How long finished tasks and their records are kept, in seconds."""
        return self.retention_days * 24 * 3600

    @property
    def tz(self) -> ZoneInfo:
        """The configured time zone (naive times from models and users are read in it)."""
        return ZoneInfo(self.timezone)

    def model_for(self, role: str) -> str:
        """The model name a role uses (its own setting, else ``MODEL``)."""
        setting = ROLES[role].model_setting if role in ROLES else None
        return (getattr(self, setting) if setting else None) or self.model

    def max_tokens_for(self, role: str) -> int:
        """The most tokens one answer of a role may have (its own setting, else
        ``MAX_TOKENS``)."""
        own = getattr(self, f"{role}_max_tokens", None) if role in ROLES else None
        return int(own or self.max_tokens)

    def max_steps_for(self, role: str) -> int:
        """The most LLM requests one run of a role may make."""
        return min(self.teller_max_steps, self.max_steps) if role == "teller" else self.max_steps

    def timeout_for(self, role: str) -> int:
        """The default timeout in seconds of a role's runs."""
        return int(getattr(self, ROLES[role].timeout_setting))

    @property
    def llm_configured(self) -> bool:
        """True when an LLM endpoint or an API key is known."""
        return bool(self.llm_base_url or self.llm_api_key)

    @property
    def longest_task_seconds(self) -> int:
        """The longest a task may legitimately run (for the broker's visibility timeout): a
        task's own ``timeout`` may be up to ``MAX_TASK_TIMEOUT_SECONDS``."""
        return MAX_TASK_TIMEOUT_SECONDS

    @cached_property
    def host_is_loopback(self) -> bool:
        """True when the web app binds a loopback address only."""
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """True for localhost and the loopback ranges (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


def check_web_bind(settings: Settings, debug: bool = False) -> None:
    """Raise ``ConfigError`` for a non-loopback bind without a token, or with ``debug``."""
    if not settings.host_is_loopback and not settings.api_token:
        raise ConfigError(
            f"refusing to serve on {settings.host} without a token: set MIMIKIT_API_TOKEN "
            "(every /api call will then need 'Authorization: Bearer <token>'), or bind 127.0.0.1"
        )
    if debug and not settings.host_is_loopback:
        raise ConfigError(
            f"refusing --debug on {settings.host}: the debugger runs any Python code sent to it; "
            "use --debug only with --host 127.0.0.1, or drop --debug"
        )


def load_settings(**overrides: object) -> Settings:
    """Read the settings, turning a validation error into a readable ``ConfigError``."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as error:
        problems = []
        for item in error.errors():
            field = str(item["loc"][0]) if item["loc"] else ""
            name = f"MIMIKIT_{field.upper()}" if field else "settings"
            value = os.environ.get(name, item.get("input"))
            problems.append(f"{name}={shown_value(field, value)}: {item['msg']}")
        raise ConfigError("invalid configuration: " + "; ".join(problems)) from None


def shown_value(field: str, value: object) -> str:
    """How a setting's value may appear in a message: secrets never, URL passwords hidden."""
    if field in SECRET_SETTINGS:
        return "'***'"
    if isinstance(value, str):
        return repr(hide_password(value))
    return repr(value)


def hide_password(url: str) -> str:
    """``url`` with any credentials replaced by ``***`` (``redis://***@host:6379/0``)."""
    scheme, sep, rest = url.partition("://")
    netloc = rest.split("/", 1)[0]
    if not sep or "@" not in netloc:
        return url
    return f"{scheme}://***@{netloc.rpartition('@')[2]}{rest[len(netloc):]}"


def secret_text(value: SecretStr | None) -> str | None:
    """The value of a secret setting, for the one place that must use it."""
    return value.get_secret_value() if value is not None else None
