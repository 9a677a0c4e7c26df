"""Helpers for agent flow tests: posting input, reading history, scripted tool results."""

from __future__ import annotations

import json
from typing import Any

from processes import wait_for

from mimikit.conversation.input import post_input as post
from mimikit.models import Message


def post_input(runtime: Any, text: str) -> Message:
    return post(runtime, text)


def history(runtime: Any) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in runtime.conversation.between(None, None)]


def wait_history(runtime: Any, predicate: Any, timeout: float = 30, message: str = "history"
                 ) -> list[tuple[str, str]]:
    return wait_for(lambda: predicate(history(runtime)) and history(runtime), timeout=timeout,
                    message=message)


def last_tool_result(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON content of the newest tool message in a recorded request body."""
    for message in reversed(body["messages"]):
        if message["role"] == "tool":
            return json.loads(message["content"])
    raise AssertionError("no tool message in the request")


def tool_names(body: dict[str, Any]) -> list[str]:
    return sorted(t["function"]["name"] for t in body.get("tools", []))


def user_prompt(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def script_deploy_question(llm: Any) -> None:
    """Teller delegates, the Planner needs input, the Teller asks staging or production."""
    from llm_server import tool_call, tool_calls

    llm.script("teller", tool_calls([("delegate", {"prompt": "Deploy the app"}),
                                     ("reply", {"text": "Let me plan that."})]))
    llm.script("planner", tool_call("submit_result", status="needs_input", resultType="text",
                                    result={"text": "two targets"},
                                    question="staging or production?"),
               tool_call("answer", answer=""))  # asked alone, it finds no answer given already
    llm.script("teller", tool_call("ask_user", question="Deploy to staging or production?",
                                   options=["staging", "production"]))
