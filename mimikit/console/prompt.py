"""``mimikit prompt``: the exact system prompt a role gets."""

from __future__ import annotations

import sys

from redis.exceptions import RedisError

from mimikit.agents.context import context_sections
from mimikit.agents.prompts import PromptMode, build_system_prompt
from mimikit.config import Settings
from mimikit.store.runtime import build_runtime


def print_prompt(settings: Settings | None, role: str, mode: PromptMode = "minimal") -> int:
    """Print a role's system prompt; ``full`` adds this instance's memory and history.

    ``settings`` is needed (and Redis read) only in ``full`` mode.
    """
    sections = None
    if mode == "full":
        sections = _context_sections(settings) if settings is not None else None
        if sections is None:
            mode = "minimal"
    print(build_system_prompt(role, mode=mode, context_sections=sections))
    return 0


def _context_sections(settings: Settings) -> list[str] | None:
    """The context sections a run would get now, or None (with a note) when Redis is down."""
    try:
        return context_sections(build_runtime(settings), [])
    except RedisError as error:
        print(f"mimikit: cannot reach Redis ({error}); showing the minimal prompt without "
              "memory and history", file=sys.stderr)
        return None
