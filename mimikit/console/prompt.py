"""``mimikit prompt``: the exact system prompt a role gets (and, in full mode, the context that
opens its first user message)."""

from __future__ import annotations

import sys

from redis.exceptions import RedisError

from mimikit.agents.context import context_sections
from mimikit.agents.inbox_view import memory_by_inputs
from mimikit.agents.prompts import PromptMode, build_prompts
from mimikit.config import Settings
from mimikit.llm.profile import Path
from mimikit.store.runtime import build_runtime


def print_prompt(settings: Settings | None, role: str, mode: PromptMode = "minimal",
                 path: Path = "native") -> int:
    """Print a role's system prompt for the path its requests take; ``full`` adds the memory
    and history this instance would put at the start of the first user message.

    ``settings`` is needed (and Redis read) only in ``full`` mode.
    """
    sections = None
    if mode == "full":
        sections = _context_sections(settings) if settings is not None else None
        if sections is None:
            mode = "minimal"
    before_inputs = ""
    if role == "teller" and sections:  # its Memory is read next to the message it answers
        sections, before_inputs = memory_by_inputs(sections, "")
    system, context = build_prompts(role, mode, sections, "")
    print(system(path))
    if context.strip():
        print("\n--- first user message starts with ---\n" + context.strip())
    if before_inputs.strip():
        print("\n--- and has right before its inputs ---\n" + before_inputs.strip())
    return 0


def _context_sections(settings: Settings) -> list[str] | None:
    """The context sections a run would get now, or None (with a note) when Redis is down."""
    try:
        return context_sections(build_runtime(settings), [], keep=False)
    except RedisError as error:
        print(f"mimikit: cannot reach Redis ({error}); showing the minimal prompt without "
              "memory and history", file=sys.stderr)
        return None
