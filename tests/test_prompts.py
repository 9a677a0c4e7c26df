"""Prompt files load from the installed package and assemble per PromptMode."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mimikit.agents.prompts import (
    TELLER_FIRST_LINE,
    build_system_prompt,
    choose_mode,
    load,
)
from mimikit.roles import ROLES


@pytest.mark.parametrize("role", sorted(ROLES))
def test_every_prompt_file_of_a_role_loads(role):
    for name in ROLES[role].prompt_files:
        assert len(load(name)) > 100
    assert "submit_verdicts" in load("llm-eval-batch.md")


def test_only_the_teller_has_the_fixed_first_line_and_a_voice():
    teller = build_system_prompt("teller", "minimal")
    assert teller.startswith(TELLER_FIRST_LINE + "\n")
    assert load("agents/teller/voice.md") in teller
    planner = build_system_prompt("planner", "minimal")
    assert not planner.startswith(TELLER_FIRST_LINE)
    assert all("voice" not in name for role in ("planner", "worker", "llm_eval")
               for name in ROLES[role].prompt_files)


def test_prompt_modes_full_minimal_none():
    context = ["## Memory\n[memory.md] likes pnpm", "## History\n[10:00] user: hi"]
    full = build_system_prompt("teller", "full", context)
    minimal = build_system_prompt("teller", "minimal", context)
    none = build_system_prompt("teller", "none", context)
    assert "likes pnpm" in full and "likes pnpm" not in minimal
    assert minimal == build_system_prompt("teller", "minimal")
    assert none == TELLER_FIRST_LINE and build_system_prompt("worker", "none") == ""
    assert choose_mode("teller", True) == "full" and choose_mode("teller", False) == "minimal"
    assert choose_mode("worker", True) == "minimal"


def test_mimikit_prompt_prints_what_the_teller_gets():
    out = subprocess.run([sys.executable, "-m", "mimikit", "prompt", "teller"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == build_system_prompt("teller", "minimal")
