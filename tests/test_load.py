"""A bounded loopback load test: 50 clients each post 20 messages to POST /api/input of a real
``mimikit web`` process, with real Celery workers and the scripted LLM answering at once.

Every message must be stored once and answered: it reaches exactly one Teller run, and every
Teller run posts its reply. Throughput and latency are printed, not asserted against a target:
they depend on the machine.
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from collections import Counter

import pytest
from fault_helpers import wait_until
from web_helpers import WebServer

CLIENTS = 50
MESSAGES_PER_CLIENT = 20


def _client(port: int, number: int, latencies: list[float], ids: list[str],
            failures: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for n in range(MESSAGES_PER_CLIENT):
            body = json.dumps({"text": f"client {number} message {n}"})
            began = time.monotonic()
            conn.request("POST", "/api/input", body, {"Content-Type": "application/json"})
            response = conn.getresponse()
            answer = response.read()
            latencies.append(time.monotonic() - began)
            if response.status == 202:
                ids.append(json.loads(answer)["id"])
            else:
                failures.append(f"{response.status} {answer[:100]!r}")
    except (OSError, http.client.HTTPException) as error:
        failures.append(repr(error))
    finally:
        conn.close()


def _teller_inputs(llm) -> Counter[str]:
    """How many Teller requests each user input line appeared in."""
    seen: Counter[str] = Counter()
    for body in llm.requests_for("teller"):
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        pending = prompt.split("## Pending inputs", 1)[-1]  # not the history before it
        for line in pending.splitlines():
            if "] user: client " in line:
                seen[line.split("] user: ", 1)[1]] += 1
    return seen


@pytest.mark.slow
def test_fifty_clients_posting_twenty_messages_each_are_all_stored_once_and_answered(
        wired, procs, llm, tmp_path, figures):
    runtime = wired
    procs.worker(queues="teller,planner,supervisor", concurrency=2, name="agents")
    procs.beat()
    server = WebServer(tmp_path / "web.log").start()
    latencies: list[float] = []
    ids: list[str] = []
    failures: list[str] = []
    threads = [threading.Thread(target=_client, args=(server.port, n, latencies, ids, failures))
               for n in range(CLIENTS)]
    try:
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        posted = time.monotonic() - began
        total = CLIENTS * MESSAGES_PER_CLIENT
        answered = wait_until(lambda: len(_teller_inputs(llm)) == total
                              and not runtime.redis.llen(runtime.keys.inbox), 120,
                              "every message to reach the Teller")
    finally:
        server.stop()

    history = runtime.redis.hgetall(runtime.keys.messages)
    stored = Counter(json.loads(raw)["text"] for raw in history.values()
                     if json.loads(raw)["role"] == "user")
    replies = sum(1 for raw in history.values() if json.loads(raw)["role"] == "assistant")
    teller_runs = len(llm.requests_for("teller"))
    ordered = sorted(latencies)
    figures.record(
        "load: 50 clients x 20 messages", accepted=len(ids), failed=len(failures),
        post_throughput_per_s=round(len(ids) / posted, 1),
        post_p50_ms=round(statistics.median(ordered) * 1000, 1),
        post_p95_ms=round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 1),
        post_max_ms=round(ordered[-1] * 1000, 1), posting_s=round(posted, 1),
        all_answered_s=round(posted + answered, 1), teller_runs=teller_runs)
    assert failures == [] and len(ids) == total == len(set(ids))
    assert len(stored) == total and set(stored.values()) == {1}  # each stored once
    assert set(_teller_inputs(llm).values()) == {1}  # each answered by exactly one run
    assert replies == teller_runs  # and every run replied
