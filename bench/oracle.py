"""A scripted model for the task benchmark: it answers each role's request as a model that
gets everything right would, at once, on the path a server that holds answers to a schema
takes (it lists its models as llama.cpp's server does). What the benchmark then measures is
Mimikit's own part: the calls a request costs, and the time they take without the model's.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from llm_server import ScriptedLLM, text, tool_call

FIB = "a, b = 0, 1\nfor _ in range(10):\n    print(a)\n    a, b = b, a + b\n"


class Oracle(ScriptedLLM):
    """The scripted server, its answers made by ``answer``."""

    def __init__(self) -> None:
        super().__init__()
        self.owner = "llamacpp"
        self.default("scripted", self.answer)  # listed, as llama.cpp's server lists its model

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        system = body["messages"][0]["content"]
        if "response_format" not in body:
            return tool_call("reply", text="ok")  # a probe of native calls
        schema = body["response_format"]["json_schema"]["schema"]
        asked = schema.get("properties", {}).get("answer")
        if asked is not None:  # a short question alone: yes, and no answer given already
            return _object(answer="yes" if "enum" in asked else "")
        role = next((r for r in ("teller", "planner", "worker") if f"Mimikit {r}" in system
                     or f"runtime {r}" in system), "worker")
        return {"teller": _teller, "planner": _planner, "worker": _worker}[role](body)


def _object(**fields: Any) -> dict[str, Any]:
    return text(json.dumps(fields, ensure_ascii=False))


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][1]["content"])


def _teller(body: dict[str, Any]) -> dict[str, Any]:
    prompt = _prompt(body)
    if "## Pending inputs" not in prompt:  # results to report: what they and their runs say
        said = re.findall(r'"text": "(.*)"', prompt) + re.findall(r"what its run did: (.*)", prompt)
        return _object(reply=" ".join(said) or "Done.")
    said = re.findall(r"\] user: (.*)", prompt.split("## Pending inputs")[1])
    answer = re.search(r"from the user: (.*)", prompt)
    words = said[-1] if said else (answer[1] if answer else "")
    if "who are you" in words:
        return _object(delegate=False, remember=False, reply="I am Mimikit, your assistant.")
    if "17 times 23" in words:
        return _object(delegate=False, remember=False, reply="17 times 23 is 391.")
    if "记住" in words:
        return _object(delegate=False, remember=True, reply="记住了：你喜欢用 pnpm。")
    if "什么包管理器" in words:
        return _object(delegate=False, remember=False, reply="你喜欢用 pnpm。")
    return _object(delegate=True, remember=False, reply="I'll see to it.")


PLANS = {
    "notes.txt": "Create the file notes.txt containing the word hello, then report its size.",
    "fib.py": "Write fib.py printing the first 10 Fibonacci numbers, run it, report its output.",
    "which files": "List the files in the work directory and report their names.",
    "date.txt": "Write today's date as YYYY-MM-DD into date.txt, count its characters, report "
                "the number.",
}


def _planner(body: dict[str, Any]) -> dict[str, Any]:
    request = _prompt(body).split("## User request", 1)[-1]
    done = {"status": "done", "result": {"text": "Planned."}}
    if "every day at 9am" in request:
        return _object(schedule={"prompt": "Remind the user to drink water.",
                                 "type": "recurring", "cron": "0 9 * * *"}, submit_result=done)
    if "in ten minutes" in request:
        return _object(schedule={"prompt": "Remind the user to stretch.", "type": "scheduled",
                                 "runAt": "10m"}, submit_result=done)
    if "cancel the water" in request:
        water = re.search(r"- (task-\w+): recurring.*water", _prompt(body))
        return _object(cancel_task=water[1] if water else "none", submit_result=done)
    if "favorite color" in request and "teal" not in request:
        return _object(submit_result={"status": "needs_input",
                                      "question": "What is your favorite color?"})
    if "favorite color" in request:
        return _object(delegate={"prompt": "Create an empty file named teal."},
                       submit_result=done)
    plan = next((p for key, p in PLANS.items() if key in request), request.strip())
    return _object(delegate={"prompt": plan}, submit_result=done)


def _worker(body: dict[str, Any]) -> dict[str, Any]:
    task = _prompt(body)
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    results = [m["content"] for m in body["messages"] if m["role"] == "user"][1:]
    actions = _actions(task)
    if step < len(actions):
        return _object(**actions[step])
    said = " ".join(re.findall(r'"(?:stdout|bytes|entries)": ([^,}]+)', " ".join(results)))
    return _object(submit_result={"status": "done", "result": {"text": f"Done: {said}"}})


def _actions(task: str) -> list[dict[str, Any]]:
    today = datetime.now(UTC).date().isoformat()
    if "notes.txt" in task:
        return [{"write_file": {"path": "notes.txt", "content": "hello"}}]
    if "fib.py" in task:
        return [{"write_file": {"path": "fib.py", "content": FIB}},
                {"shell": {"command": "python3 fib.py"}}]
    if "List the files" in task:
        return [{"list_files": {"path": "."}}]
    if "date.txt" in task:
        return [{"write_file": {"path": "date.txt", "content": today}},
                {"shell": {"command": "wc -c < date.txt"}}]
    if "named teal" in task:
        return [{"write_file": {"path": "teal", "content": ""}}]
    return []
