"""Host slots: however many runs wait for the LLM at once, at most ``MIMIKIT_SHELL_CONCURRENCY``
shell commands run at a time on a host, across threads and processes; a run that stops while
it waits for a slot stops waiting.

The commands are real (in the sandbox); each writes when it started and ended, so the overlap
is read from what they did, not from Mimikit's account of it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fault_helpers import wait_until
from llm_server import steps, tool_call
from processes import ROOT

from mimikit.exceptions import ToolError, WaitStopped
from mimikit.lifecycle.submit import submit
from mimikit.models import Task
from mimikit.workspace.local import Workspace
from mimikit.workspace.slots import HostSlots

STAMPED = "echo start $(date +%s.%N) >> {name}.times; sleep {seconds}; echo end $(date +%s.%N) >> {name}.times"


def _most_at_once(work: Path) -> int:
    """The most commands that ran at the same time, from the times they wrote."""
    edges = []
    for path in work.glob("*.times"):
        for line in path.read_text().splitlines():
            kind, at = line.split()
            edges.append((float(at), 1 if kind == "start" else -1))
    running = most = 0
    for _at, step in sorted(edges, key=lambda edge: (edge[0], edge[1])):
        running += step
        most = max(most, running)
    return most


def test_threads_of_one_process_take_turns_in_the_slots(tmp_path, figures):
    work = tmp_path / "work"
    work.mkdir()
    slots = HostSlots(tmp_path / "slots", 2)
    results: list[dict] = []

    def run(n: int) -> None:
        workspace = Workspace(work, slots=slots)
        results.append(workspace.shell(STAMPED.format(name=n, seconds=0.4)))

    began = time.monotonic()
    threads = [threading.Thread(target=run, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    took = time.monotonic() - began
    figures.record("6 commands of 0.4 s, 2 slots, one process", seconds=round(took, 2),
                   most_at_once=_most_at_once(work),
                   waited_ms=sorted(r.get("waitedMs", 0) for r in results))
    assert _most_at_once(work) == 2
    assert all(r["exitCode"] == 0 for r in results) and len(results) == 6
    assert sum(1 for r in results if r.get("waitedMs", 0) >= 300) >= 2  # said in the result


def test_processes_of_one_host_share_the_slots(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    script = (f"import sys, threading; sys.path.insert(0, {str(ROOT)!r})\n"
              "from pathlib import Path\n"
              "from mimikit.workspace.local import Workspace\n"
              "from mimikit.workspace.slots import HostSlots\n"
              f"slots = HostSlots(Path({str(tmp_path / 'slots')!r}), 2)\n"
              "def run(n):\n"
              f"    Workspace(Path({str(work)!r}), slots=slots).shell("
              f"{STAMPED!r}.format(name=sys.argv[1] + str(n), seconds=0.4))\n"
              "threads = [threading.Thread(target=run, args=(n,)) for n in range(3)]\n"
              "[t.start() for t in threads]; [t.join() for t in threads]\n")
    processes = [subprocess.Popen([sys.executable, "-c", script, name]) for name in "ab"]
    for process in processes:
        assert process.wait(timeout=60) == 0
    assert len(list(work.glob("*.times"))) == 6
    assert _most_at_once(work) == 2


def test_a_run_that_stops_while_waiting_for_a_slot_stops_waiting(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    slots = HostSlots(tmp_path / "slots", 1)
    holder, waiter = Workspace(work, slots=slots), Workspace(work, slots=slots)
    busy = threading.Thread(target=holder.shell, args=("sleep 5",), daemon=True)
    busy.start()
    time.sleep(0.5)  # the only slot is taken
    outcome: list[BaseException] = []

    def wait() -> None:
        try:
            waiter.shell("echo never")
        except ToolError as error:
            outcome.append(error)

    waiting = threading.Thread(target=wait)
    waiting.start()
    time.sleep(0.3)
    canceled = time.monotonic()
    waiter.cancel()
    waiting.join(timeout=5)
    assert outcome and "waited for a free shell slot" in str(outcome[0])
    assert time.monotonic() - canceled < 1
    holder.cancel()
    busy.join(timeout=10)
    with slots.hold(lambda: False), pytest.raises(WaitStopped):  # a free slot is taken at
        with slots.hold(lambda: True):  # once; a stopped run waits for none
            pass


@pytest.mark.slow
def test_worker_runs_in_flight_run_their_shell_commands_a_slot_at_a_time(
        wired, procs, llm, monkeypatch, figures):
    runtime = wired
    monkeypatch.setenv("MIMIKIT_SHELL_CONCURRENCY", "2")
    work = Path(runtime.settings.work_dir)

    def model(body: dict) -> dict:
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        name = prompt.split("## Task ", 1)[1].split()[0]
        return steps(tool_call("shell", command=STAMPED.format(name=name, seconds=1)),
                     tool_call("submit_result", status="done", resultType="text",
                               result={"text": "ran"}))

    llm.default("worker", model)
    procs.worker(queues="worker", concurrency=8, name="tasks")  # 8 runs, 2 slots
    tasks = submit(runtime, [Task(prompt=f"job {n}") for n in range(6)])
    began = time.monotonic()
    wait_until(lambda: all(runtime.tasks.require(t.id).status == "done" for t in tasks), 60,
               "every task")
    figures.record("6 Worker tasks with a 1 s command each, 8 runs in flight, 2 slots",
                   seconds=round(time.monotonic() - began, 1), most_at_once=_most_at_once(work))
    assert len(list(work.glob("*.times"))) == 6
    assert _most_at_once(work) == 2
