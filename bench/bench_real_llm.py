"""What a person feels of a real model behind ``mimikit up``: prompt sizes, what the server
keeps cached from one turn to the next, the time to the first word of a reply, and how long
passes take against their deadline.

Run against an OpenAI-compatible server (llama.cpp's ``llama-server --jinja`` reports its
prompt cache in ``timings``; OpenAI-style servers in ``prompt_tokens_details``)::

    python bench/bench_real_llm.py --url http://127.0.0.1:8099/v1 --model qwen2.5-coder-1.5b-instruct

A recording proxy sits between ``mimikit up`` and the server and notes, for every request, the
role, the prompt tokens, those served from the cache, and the time to the first token.
Targets: Teller prompt on a first turn <= 2,000 tokens, Planner <= 3,000; on a second turn at
least 70 % of the Teller's prompt served from the cache; the first reply token of a second turn
within 10 s; no pass longer than its deadline plus 5 s.
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from recorder import Recorder
from stack import Instance, Services


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="the server's base URL, e.g. .../v1")
    parser.add_argument("--model", required=True)
    parser.add_argument("--turn-seconds", type=float, default=900)
    args = parser.parse_args()
    recorder = Recorder(args.url)
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    tmp = Path(tempfile.mkdtemp(prefix="mimikit-bench-real-"))
    services = Services(tmp, concurrency=1)
    env = {"MIMIKIT_LLM_BASE_URL": recorder.url, "MIMIKIT_MODEL": args.model,
           "MIMIKIT_TELLER_MODEL": "teller-" + args.model, "MIMIKIT_TELLER_TIMEOUT": "600",
           "MIMIKIT_LLM_TIMEOUT": "600"}
    instance = Instance(services, "real", db=1, env=env)
    try:
        turns = [_turn(instance.client, text, args.turn_seconds)
                 for text in ("hello!", "how are you today?",
                              "Create a file notes.txt containing the word hello.")]
        deadline = time.monotonic() + args.turn_seconds  # the Planner's first request
        while time.monotonic() < deadline and not any(
                c["role"] != "teller" for c in recorder.calls):
            time.sleep(1)
        _report(recorder.calls, turns)
    finally:
        instance.stop()
        services.close()


def _turn(client: Any, text: str, timeout: float) -> dict[str, Any]:
    """Post ``text``; when the first word of the reply showed (a streamed ``reply`` event or
    the stored message) and when the whole reply was stored."""
    while not client.events.empty():
        client.events.get_nowait()
    began = time.monotonic()
    client.call("POST", "/api/input", {"text": text})
    first = None
    deadline = began + timeout
    while time.monotonic() < deadline:
        try:
            event, data = client.events.get(timeout=1)
        except queue.Empty:
            continue
        if event == "reply" and data.get("text") and first is None:
            first = time.monotonic()
        if event == "message" and data.get("role") == "assistant":
            done = time.monotonic()
            return {"text": text, "began": began, "firstReply": (first or done) - began,
                    "reply": done - began}
    return {"text": text, "began": began, "firstReply": float("nan"), "reply": float("nan")}


def _report(calls: list[dict[str, Any]], turns: list[dict[str, Any]]) -> None:
    teller = [c for c in calls if c["role"] == "teller"]
    planner = [c for c in calls if c not in teller]
    rows = [("Teller prompt, first turn (tokens)", teller[0]["prompt"] if teller else None,
             "<= 2000"),
            ("Planner prompt, first request (tokens)", planner[0]["prompt"] if planner else None,
             "<= 3000")]
    second_turn = [c for c in teller if len(turns) > 1 and c["began"] >= turns[1]["began"]]
    if second_turn:
        second = second_turn[0]  # the second turn's first request
        share = second["cached"] / second["prompt"] if second["prompt"] else 0
        rows.append(("Teller prompt served from cache, second turn", f"{share:.0%}", ">= 70%"))
        rows.append(("first reply token, second turn (s)", f"{turns[1]['firstReply']:.1f}",
                     "<= 10"))
    longest = max((c["seconds"] for c in teller), default=0)
    rows.append(("longest Teller request (s)", f"{longest:.1f}", "<= deadline + 5"))
    width = max(len(r[0]) for r in rows)
    print(f"{'figure':<{width}}  value  target")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value}  {target}")
    for turn in turns:
        print(f"turn {turn['text']!r}: first reply word after {turn['firstReply']:.1f} s, "
              f"whole reply after {turn['reply']:.1f} s")
    print(json.dumps({"teller": teller, "planner": planner[:3]}, default=str)[:2000],
          file=sys.stderr)


if __name__ == "__main__":
    main()
