"""The environment an MCP server is started with: the Worker's own, without Mimikit's secrets,
then the entry's ``env`` over it.

Left out are every ``MIMIKIT_*`` variable (the API token, the LLM key, Flower's password, the
Redis URL and its password), the OpenAI variables Mimikit falls back to, and any variable whose
value holds one of those secrets under another name. A server that needs a key of its own gets
it from its entry's ``env``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlparse

from mimikit.config import Settings, secret_text

OWN_PREFIXES = ("MIMIKIT_",)
OWN_NAMES = frozenset({"OPENAI_API_KEY", "OPENAI_BASE_URL"})
SHORTEST_SECRET_CHARS = 4  # a shorter value would match by chance


def server_environment(settings: Settings, extra: Mapping[str, str],
                       base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without Mimikit's secrets, with
    ``extra`` (the entry's ``env``) over it."""
    secrets = _secrets(settings)
    kept = {name: value for name, value in (os.environ if base is None else base).items()
            if not _private(name, value, secrets)}
    return {**kept, **extra}


def _private(name: str, value: str, secrets: list[str]) -> bool:
    return name.startswith(OWN_PREFIXES) or name in OWN_NAMES or \
        any(secret in value for secret in secrets)


def _secrets(settings: Settings) -> list[str]:
    values = [secret_text(settings.api_token), secret_text(settings.llm_api_key),
              secret_text(settings.flower_basic_auth), urlparse(settings.redis_url).password]
    return [value for value in values if value and len(value) >= SHORTEST_SECRET_CHARS]
