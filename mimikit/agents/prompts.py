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

import json
import re
from collections.abc import Callable
from functools import cache
from importlib.resources import files
from typing import Literal

from mimikit.llm.profile import Path
from mimikit.memory.tokenize import tokenize
from mimikit.roles import role as role_spec
from mimikit.workspace.named import named_paths

PromptMode = Literal["full", "minimal", "none"]
SystemPrompt = Callable[[Path], str]  # the system prompt for the path requests take
# The repository's top-level prompts/ folder, installed as this package: found by its full name,
# so a prompts/ folder in the current directory never replaces it.
PROMPTS_PACKAGE = "mimikit.prompts"
TELLER_FIRST_LINE = "You are the Mimikit runtime teller."
REPORT_EXAMPLE = "a task result"  # how an example of a report begins in the prompts
_EXAMPLE_REPLY = re.compile(r'"(?:reply|text)": ("(?:[^"\\]|\\.)*")')
_EXAMPLE_MESSAGE = re.compile(r"^user: (.+?) -> ", re.MULTILINE)  # what an example's person says


@cache
def load(relative: str) -> str:
    """The text of one prompt file, e.g. ``agents/teller/identity.md``."""
    return files(PROMPTS_PACKAGE).joinpath(relative).read_text(encoding="utf-8").strip()


def role_text(role: str, path: Path = "native") -> str:
    """The static part of a role's system prompt (its files, in order): for answers held to
    the role's schema, ``answer.md`` (the object's fields) stands for ``tools.md``."""
    spec = role_spec(role)
    parts = [load(name) for name in
             (spec.answer_files if path == "constrained" else spec.prompt_files)]
    if role == "teller":
        parts.insert(0, TELLER_FIRST_LINE)
    return "\n\n".join(parts)


@cache
def example_replies(role: str) -> tuple[str, ...]:
    """What the examples of ``role``'s prompts say to the person (a ``reply``, or a reply
    call's ``text``): a small model copies one whatever its results say."""
    texts = role_text(role, "constrained") + role_text(role, "native")
    return tuple(dict.fromkeys(json.loads(found) for found in _EXAMPLE_REPLY.findall(texts)))


@cache
def example_messages(role: str) -> tuple[str, ...]:
    """What the person says in the examples of ``role``'s prompts: a small model copies one
    as its reply."""
    texts = role_text(role, "constrained") + role_text(role, "native")
    return tuple(dict.fromkeys(_EXAMPLE_MESSAGE.findall(texts)))


def unsaid_examples(role: str, heard: list[str], results: bool) -> list[str]:
    """The replies of ``role``'s examples that do not fit a pass with what the person said
    (``heard``; ``results``: and results to report): those that name a file or a number and
    share no word with it (the 0.5B model answered "What is 17 times 23?" with "I'll create
    todo.txt with milk in it."), and, without results, the examples of a report (it then
    answered it with "That failed: it was not done."); and the examples' messages that share
    no word with it (it answered "show me what's in my folder" with "I live in Berlin.")."""
    said = set(tokenize(" ".join(heard)))
    reports = () if results else report_examples(role)
    return [reply for reply in example_replies(role) if reply in reports or (
        (named_paths(reply) or any(char.isdigit() for char in reply))
        and not set(tokenize(reply)) & said)] + [
        message for message in example_messages(role) if not set(tokenize(message)) & said]


@cache
def report_examples(role: str) -> tuple[str, ...]:
    """The replies of ``role``'s examples of a report (their lines begin "a task result")."""
    lines = (role_text(role, "constrained") + "\n" + role_text(role, "native")).splitlines()
    return tuple(json.loads(found) for line in lines if line.startswith(REPORT_EXAMPLE)
                 for found in _EXAMPLE_REPLY.findall(line))


def choose_mode(role: str, has_context: bool) -> PromptMode:
    """The runtime policy: Teller/Planner full when there is history/memory, else minimal."""
    if role in ("teller", "planner") and has_context:
        return "full"
    return "minimal"


def build_system_prompt(role: str, mode: PromptMode = "minimal",
                        context_sections: list[str] | None = None, path: Path = "native") -> str:
    """The system prompt of a role; ``context_sections`` are used in full mode only."""
    if mode == "none":
        return TELLER_FIRST_LINE if role == "teller" else ""
    text = role_text(role, path)
    if mode == "full" and context_sections:
        text += "\n\n" + "\n\n".join(s for s in context_sections if s)
    return text


def system_prompt(role: str, mode: PromptMode = "minimal") -> SystemPrompt:
    """The role's system prompt, by the path its requests take (the static part only: the
    dynamic context opens the first user message)."""
    static: PromptMode = "none" if mode == "none" else "minimal"
    return lambda path: build_system_prompt(role, static, path=path)


def build_prompts(role: str, mode: PromptMode, context_sections: list[str] | None,
                  request: str) -> tuple[SystemPrompt, str]:
    """The system message (by path) and the first user message of a run: the role's static
    text, then the dynamic context (in full mode) followed by ``request``."""
    shown = [s for s in context_sections or [] if s] if mode == "full" else []
    return system_prompt(role, mode), "\n\n".join([*shown, request])
