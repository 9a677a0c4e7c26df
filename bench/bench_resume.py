"""Resume: a Worker run killed (``kill -9`` of the task worker of ``mimikit up``) at step k of
n, and what it costs to finish: the LLM requests after the kill (ideal: n - k + 1, the step in
flight asked again), the tool calls run again (ideal: 0) and the seconds from the kill to the
task done (the heartbeat must lapse, then ``mimikit up`` restarts the worker).

    python bench/bench_resume.py [--steps 6] [--kill-at 3] [--latency 1.0]
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from stack import Instance, Services


def _script(steps: int, latency: float) -> Any:
    """A Worker that runs ``steps - 1`` shell steps (each appends a line to steps.log), then
    submits its result; every answer takes ``latency`` seconds."""
    from llm_server import delay, tool_call

    def answer(body: dict[str, Any]) -> Any:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done < steps - 1:
            return delay(latency, tool_call("shell", command=f"echo step{done + 1} >> steps.log"))
        return delay(latency, tool_call("submit_result", status="done", resultType="text",
                                        result={"text": f"{steps - 1} steps"}))

    return answer


def _task_worker_pid(runtime: Any) -> int:
    from mimikit.delivery.workers import workers

    for worker in workers(runtime):
        if worker.get("queues") == ["worker"]:
            return int(worker["pid"])
    raise SystemExit("no task worker registered")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=6, help="LLM requests of the run (n)")
    parser.add_argument("--kill-at", type=int, default=3, help="answers in before the kill (k)")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per LLM answer")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mimikit-bench-resume-"))
    services = Services(tmp, concurrency=1)
    instance = Instance(services, "resume", db=2, env={"MIMIKIT_HEARTBEAT_SECONDS": "3"})
    try:
        services.llm.default("worker", _script(args.steps, args.latency))
        runtime = instance.runtime()
        from mimikit.lifecycle.submit import submit
        from mimikit.models import RetryPolicy, Task

        task = submit(runtime, [Task(prompt="steps", retry=RetryPolicy(maxAttempts=3))])[0]
        while len(services.llm.requests_for("worker")) < args.kill_at + 1:
            time.sleep(0.05)
        before = len(services.llm.requests_for("worker"))
        os.killpg(os.getpgid(_task_worker_pid(runtime)), signal.SIGKILL)
        killed = time.monotonic()
        while runtime.tasks.require(task.id).status != "done":
            if time.monotonic() - killed > 300:
                raise SystemExit("the task did not finish within 300 s of the kill")
            time.sleep(0.1)
        seconds = time.monotonic() - killed
        after = len(services.llm.requests_for("worker")) - before
        lines = (instance.dir / "work" / "steps.log").read_text().split()
        print(f"run of {args.steps} LLM requests killed after {args.kill_at} answers")
        print(f"  LLM requests after the kill   {after}  (ideal {args.steps - args.kill_at})")
        print(f"  tool calls run twice          {len(lines) - len(set(lines))}  (ideal 0)")
        print(f"  seconds from kill to done     {seconds:.1f}")
    finally:
        instance.stop()
        services.close()


if __name__ == "__main__":
    main()
