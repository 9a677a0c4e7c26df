"""Prompt assembly from each role's prompt files (``roles``), with PromptMode full / minimal /
none.

- full: the role's files, then the dynamic context (history, memory) when there is any.
- minimal: the role's files only.
- none: nothing but the inputs / request / task (for tests).
Only the Teller has the fixed first line and ``voice.md``.

The system message is the static part only, the same for every request of a role (identity,
rules, tools), so a server can keep it cached; the dynamic context goes into the first user
message, before the inputs or the request (``build_prompts``).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Literal

from mimikit.roles import role as role_spec

PromptMode = Literal["full", "minimal", "none"]
# The repository's top-level prompts/ folder, installed as this package: found by its full name,
# so a prompts/ folder in the current directory never replaces it.
PROMPTS_PACKAGE = "mimikit.prompts"
TELLER_FIRST_LINE = "You are the Mimikit runtime teller."


@cache
def load(relative: str) -> str:
    """The text of one prompt file, e.g. ``agents/teller/identity.md``."""
    return files(PROMPTS_PACKAGE).joinpath(relative).read_text(encoding="utf-8").strip()


def role_text(role: str) -> str:
    """The static part of a role's system prompt (its files, in order)."""
    parts = [load(name) for name in role_spec(role).prompt_files]
    if role == "teller":
        parts.insert(0, TELLER_FIRST_LINE)
    return "\n\n".join(parts)


def choose_mode(role: str, has_context: bool) -> PromptMode:
    """The runtime policy: Teller/Planner full when there is history/memory, else minimal."""
    if role in ("teller", "planner") and has_context:
        return "full"
    return "minimal"


def build_system_prompt(role: str, mode: PromptMode = "minimal",
                        context_sections: list[str] | None = None) -> str:
    """The system prompt of a role; ``context_sections`` are used in full mode only."""
    if mode == "none":
        return TELLER_FIRST_LINE if role == "teller" else ""
    text = role_text(role)
    if mode == "full" and context_sections:
        text += "\n\n" + "\n\n".join(s for s in context_sections if s)
    return text


def build_prompts(role: str, mode: PromptMode, context_sections: list[str] | None,
                  request: str) -> tuple[str, str]:
    """The system message and the first user message of a run: the role's static text, then
    the dynamic context (in full mode) followed by ``request``."""
    system = build_system_prompt(role, "none" if mode == "none" else "minimal")
    shown = [s for s in context_sections or [] if s] if mode == "full" else []
    return system, "\n\n".join([*shown, request])
