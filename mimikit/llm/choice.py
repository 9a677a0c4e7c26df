"""What ``tool_choice`` a server is sent (on the native and text paths), by what its profile
says it holds its model to.

A required call (``"required"``) or one forced function (``"named"``: ``{"type": "function",
...}``) is sent as asked until the server shows it does not hold its model to it (it answers
without a ``tool_calls``); from then on that kind is sent as ``"auto"``. A forced function is
offered alone, so that even a server that holds its model to nothing shows the model only the
call it must make; where the named form is not held (llama.cpp's server takes it as
``"auto"``), it is sent as ``"required"``, the same demand with one tool offered. A server
that refuses the field by name is not sent it at all.
"""

from __future__ import annotations

from typing import Any

from mimikit.llm.completion import Completion
from mimikit.llm.profile import ServerProfile


def forced(name: str) -> dict[str, Any]:
    """The ``tool_choice`` that makes the model call ``name``."""
    return {"type": "function", "function": {"name": name}}


def kind(value: Any) -> str | None:
    """``"required"``, ``"named"`` (one function), or None (``"auto"``, nothing)."""
    if value == "required":
        return "required"
    return "named" if isinstance(value, dict) else None


def sent(options: dict[str, Any], profile: ServerProfile) -> dict[str, Any]:
    """``options`` with the ``tool_choice`` (and tools) this server is sent."""
    value = options.get("tool_choice")
    if value is None:
        return options
    if profile.toolChoiceRefused or not options.get("tools"):
        return {k: v for k, v in options.items() if k != "tool_choice"}
    if kind(value) == "named":
        name = value["function"]["name"]
        alone = [tool for tool in options["tools"] if tool["function"]["name"] == name]
        options = {**options, "tools": alone or options["tools"]}
        if profile.toolChoice.get("named") is False:
            value = "required"
    if kind(value) == "required" and profile.toolChoice.get("required") is False:
        value = "auto"
    return {**options, "tool_choice": value}


def answered(asked: dict[str, Any], completion: Completion, profile: ServerProfile) -> bool:
    """Learn from an answer to ``asked`` (before ``sent``) whether the kind it was sent as is
    held; True when the profile changed."""
    value = sent(asked, profile).get("tool_choice")
    held = kind(value)
    if held is None:
        return False
    said = "held" if completion.tool_calls else "not held (answered without a call)"
    return profile.learn(f"tool_choice {held} {said}",
                         toolChoice={**profile.toolChoice, held: bool(completion.tool_calls)})


def refused(asked: dict[str, Any], detail: str, profile: ServerProfile) -> bool:
    """A request refused naming ``tool_choice``: True when it should be asked again (another
    way, ``"auto"`` at last, or without the field once ``"auto"`` was refused too)."""
    value = sent(asked, profile).get("tool_choice")
    if value is None or "tool_choice" not in detail.lower():
        return False
    held = kind(value)
    if held is None:
        return profile.learn("tool_choice refused", toolChoiceRefused=True) or True
    profile.learn(f"tool_choice {held} refused", toolChoice={**profile.toolChoice, held: False})
    return True
