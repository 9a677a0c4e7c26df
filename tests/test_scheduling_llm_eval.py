"""The batched llm_eval: one run per interval for all pending conditions, ahead of worker tasks.

Real beat (with a short ``LLM_EVAL_INTERVAL``), real Celery workers, the scripted LLM.
"""

from __future__ import annotations

import json
import time

import pytest
from llm_server import tool_call
from processes import wait_for
from scheduling_helpers import add_trigger, fired

from mimikit.agents.llm_eval import run_batch
from mimikit.delivery.queues import queue_keys, to_broker_priority
from mimikit.scheduling import llm_eval


def judge(runtime, satisfied: set[str] = frozenset()):  # type: ignore[assignment]
    """A scripted model answer: a verdict for every condition it was sent."""

    def answer(body):
        runtime.redis.rpush(runtime.keys.meta("started"), "llm_eval")
        listed = llm_eval.parse(body["messages"][1]["content"])
        verdicts = [{"id": c["id"], "satisfied": c["id"] in satisfied, "reason": "scripted"}
                    for c in listed]
        return tool_call("submit_verdicts", verdicts=verdicts)

    return answer


@pytest.fixture
def configured(runtime, llm, monkeypatch):
    monkeypatch.setenv("MIMIKIT_LLM_BASE_URL", llm.url)
    monkeypatch.setenv("MIMIKIT_LLM_EVAL_INTERVAL", "2")
    runtime.settings = runtime.settings.model_copy(update={"llm_base_url": llm.url})
    return runtime


def semantic(runtime, prompt: str):
    return add_trigger(runtime, type="conditional", cooldown=3600,
                       condition={"type": "llm_eval", "params": {"prompt": prompt}})


def sent_ids(body) -> list[str]:
    return sorted(c["id"] for c in llm_eval.parse(body["messages"][1]["content"]))


def test_three_pending_conditions_make_one_batch_per_interval(configured, procs, llm):
    runtime = configured
    made = [semantic(runtime, f"condition {n} holds") for n in range(3)]
    llm.default("default", judge(runtime))
    procs.worker(queues="worker,supervisor", concurrency=2, name="w")
    procs.beat()
    start = time.monotonic()
    wait_for(lambda: len(llm.requests) >= 2, timeout=8, message="two batches")
    elapsed = time.monotonic() - start
    expected = sorted(f"{t.id}:c" for t in made)
    assert all(sent_ids(body) == expected for body in llm.requests)
    assert len(llm.requests) <= elapsed / 2 + 1
    batches = [t for t in runtime.tasks.with_status("done") if t.role == "llm_eval"]
    assert len(batches) >= 1
    assert all(json.loads(raw).get("kind") != "result" for raw in
               runtime.redis.lrange(runtime.keys.inbox, 0, -1))  # the Teller is not told


def test_batch_runs_before_queued_worker_tasks(configured, procs, llm):
    from mimikit.celery_app import app

    runtime = configured
    semantic(runtime, "the build is green")
    llm.default("default", judge(runtime))
    for n in range(3):
        app.send_task("tests.record", args=[f"ordinary-{n}"], queue="worker",
                      priority=to_broker_priority(10))
    procs.beat()
    wait_for(lambda: runtime.redis.llen(queue_keys("worker", runtime.keys.prefix)[0]), timeout=6,
             message="the batch to be queued at the system level")
    procs.worker(queues="worker", concurrency=1, name="w")
    started = wait_for(lambda: runtime.redis.lrange(runtime.keys.meta("started"), 0, -1)
                       if runtime.redis.llen(runtime.keys.meta("started")) >= 4 else None,
                       timeout=15, message="the batch and the ordinary tasks")
    assert started[0] == b"llm_eval"


def test_without_pending_conditions_no_llm_request_is_made(configured, procs, llm):
    runtime = configured
    add_trigger(runtime, type="conditional",
                condition={"type": "file_exists", "params": {"path": "never-there"}})
    procs.worker(queues="worker,supervisor", name="w")
    procs.beat()
    time.sleep(4.5)
    assert llm.requests == []
    assert not [t for t in runtime.tasks.with_status("queued", "running", "done")
                if t.role == "llm_eval"]


def test_satisfied_verdict_fires_its_trigger_and_only_it(configured, procs, llm):
    runtime = configured
    yes, no = semantic(runtime, "release is due"), semantic(runtime, "disk is full")
    llm.default("default", judge(runtime, {f"{yes.id}:c"}))
    procs.worker(queues="supervisor", name="sup")
    result = run_batch(runtime, None)
    assert result["conditions"] == 2 and result["fired"] == [yes.id]
    assert len(fired(runtime, yes.id)) == 1 and fired(runtime, no.id) == []
    assert len(llm.requests) == 1
    # yes is cooling down now, no is still undecided: only no is asked next time.
    assert [c["triggerId"] for c in llm_eval.pending_conditions(runtime)] == [no.id]


def test_a_batch_while_another_runs_skips_instead_of_collecting_twice(runtime):
    runtime.redis.set(runtime.keys.meta("llm_eval_batch"), "other-batch", ex=60)
    assert run_batch(runtime, "c2") == {"conditions": 0, "skipped": "another batch is running"}


def test_a_batch_whose_llm_is_away_waits_for_it_and_no_second_batch_is_made(configured, llm):
    from llm_server import error

    runtime = configured
    trigger = semantic(runtime, "the deploy finished")
    llm.default("default", error(503))
    first = run_batch(runtime, "c1")
    waiting = runtime.tasks.require(first["taskId"])
    assert waiting.status == "deferred" and waiting.waitingSince is not None
    assert waiting.attempts == 0 and "HTTP 503" in waiting.error
    assert run_batch(runtime, "c2") == {"conditions": 0, "skipped": "a batch waits for the model"}
    llm.default("default", judge(runtime, {f"{trigger.id}:c"}))
    runtime.tasks.update(waiting.id, lambda t: t.model_copy(update={"deferUntil": None}))
    again = run_batch(runtime, "c3", waiting.id)  # as the tick sends it once its wait is over
    assert again["fired"] == [trigger.id] and runtime.tasks.require(waiting.id).status == "done"
