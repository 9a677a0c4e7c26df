"""The task benchmark: everyday requests to ``mimikit up``, one after another, each checked in
the world once the instance settles (the file on disk, the trigger in Redis, the line in
memory, the number in the reply), not in the transcript.

    python bench/tasks.py --url http://127.0.0.1:8099/v1 --model qwen2.5-coder-1.5b-instruct
    python bench/tasks.py --scripted      # the scripted server, answering as a model should

``mimikit up`` runs in a new directory as a new user starts it (defaults, embedded Redis),
behind a recording proxy that notes each LLM request's role, prompt tokens, cached tokens and
time. One row per request: done or not (and why), wall time from the message to the settled
instance (it includes the quiet seconds that tell it settled), times to the first reply and to the
last (the report), LLM calls, and prompt / cached tokens per role. A model is
not bound to pass: this prints numbers, it is not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from checks import (
    FIFTH_WORDING,
    FOURTH_WORDING,
    OTHER_WORDING,
    REQUESTS,
    THIRD_WORDING,
    Request,
    World,
)
from chores import CHORES
from dawn import DAWN
from dusk import DUSK
from errands import ERRANDS
from evening import EVENING
from household import HOUSEHOLD
from morning import MORNING
from night import NIGHT
from noon import NOON
from recorder import ROLES, Recorder
from stack import Client
from weekend import WEEKEND

READY_SECONDS = 180
SETS: dict[str, list[Request]] = {"everyday": REQUESTS, "errands": ERRANDS, "chores": CHORES,
                                  "household": HOUSEHOLD, "weekend": WEEKEND,
                                  "evening": EVENING, "morning": MORNING,
                                  "noon": NOON, "night": NIGHT, "dusk": DUSK,
                                  "dawn": DAWN}
SETTLED_QUIET_SECONDS = 4.0  # nothing running, nothing new, this long: settled


@dataclass
class Row:
    """What one request came to."""

    name: str
    done: bool = False
    why: str = ""
    wall: float = float("nan")
    first_reply: float = float("nan")
    last_reply: float = float("nan")
    calls: dict[str, int] = field(default_factory=dict)
    prompt: dict[str, int] = field(default_factory=dict)
    cached: dict[str, int] = field(default_factory=dict)


class Up:
    """``mimikit up`` in a directory of its own, as a new user runs it."""

    def __init__(self, root: Path, llm_url: str, model: str, extra: dict[str, str]) -> None:
        self.work = root / "work"
        self.work.mkdir(parents=True)
        self.port = _free_port()
        self.redis_url = f"redis://127.0.0.1:{_free_port()}/0"
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("MIMIKIT_", "OPENAI_"))}
        env.update({"MIMIKIT_LLM_BASE_URL": llm_url, "MIMIKIT_LLM_API_KEY": "bench",
                    "MIMIKIT_PORT": str(self.port),
                    "MIMIKIT_REDIS_URL": self.redis_url,
                    **{f"MIMIKIT_{role.upper()}_MODEL": f"{role}-{model}" for role in ROLES},
                    **extra})
        self.log = open(root / "up.log", "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen([sys.executable, "-m", "mimikit", "up"], env=env,
                                        cwd=self.work, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        ready = threading.Event()
        threading.Thread(target=self._follow, args=(ready,), daemon=True).start()
        if not ready.wait(READY_SECONDS):
            self.stop()
            raise SystemExit(f"mimikit up did not say ready; see {root / 'up.log'}")
        self.client = Client(self.port)

    def _follow(self, ready: threading.Event) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.log.write(line)
            self.log.flush()
            if "ready at" in line:
                ready.set()

    def keep_chat(self, path: Path) -> None:
        """The chat as the person saw it (every message, system notes too)."""
        messages = self.client.call("GET", "/api/messages?limit=1000")["messages"]
        path.write_text("\n".join(f"[{m['createdAt'][11:19]}] {m['role']}: {m['text']}"
                                   for m in messages) + "\n")

    def keep_runs(self, path: Path) -> None:
        """Every run's transcript (Teller, Planner, Worker), for reading what happened."""
        import redis

        client = redis.Redis.from_url(self.redis_url)
        runs = {key.decode(): [json.loads(item) for item in client.lrange(key, 0, -1)]
                for key in client.scan_iter("mimikit:runs:*") if client.type(key) == b"list"}
        path.write_text(json.dumps(runs, indent=1, ensure_ascii=False))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_request(up: Up, recorder: Recorder, request: Request, timeout: float) -> Row:
    """Send one request (and its answer, when it asks one), wait until the instance settles,
    then check the world."""
    row = Row(request.name)
    client = up.client
    world = World(up.work, client, since=_last_message_id(client))
    began = time.monotonic()
    replies = _say(client, request.text)
    settled = _settle(client, began + timeout)
    if request.answer is not None and (world.question() or world.asked()):
        _answer(client, request.answer)
        settled = _settle(client, began + timeout) and settled
    row.wall = time.monotonic() - began
    row.first_reply, row.last_reply = replies.stop()
    calls = [c for c in recorder.calls if began <= c["began"] <= began + row.wall and
             not c["warm"]]  # a warming's requests are the instance's, counted apart
    for role in ROLES:
        mine = [c for c in calls if c["role"] == role]
        row.calls[role] = len(mine)
        row.prompt[role] = sum(c["prompt"] for c in mine)
        row.cached[role] = sum(c["cached"] for c in mine)
    if not settled:
        row.why = f"not settled within {timeout:g} s; "
    try:
        row.done, why = request.check(world)
    except Exception as error:  # a check that cannot read the world says so
        row.done, why = False, f"check failed: {type(error).__name__}: {error}"
    row.why += why
    return row


class _Replies:
    """When the first words of a reply to a message showed (a streamed ``reply`` event or a
    stored assistant message), and when the last assistant message came, in seconds after the
    message was sent."""

    def __init__(self, client: Client, began: float) -> None:
        self.client, self.began = client, began
        self.first: float | None = None
        self.last: float | None = None
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.stopped.is_set():
            try:
                event, data = self.client.events.get(timeout=0.2)
            except queue.Empty:
                continue
            now = time.monotonic() - self.began
            assistant = event == "message" and data.get("role") == "assistant"
            if self.first is None and (assistant or (event == "reply" and data.get("text"))):
                self.first = now
            if assistant:
                self.last = now

    def stop(self) -> tuple[float, float]:
        self.stopped.set()
        self.thread.join()
        nan = float("nan")
        return (nan if self.first is None else self.first, nan if self.last is None else self.last)


def _say(client: Client, text: str) -> _Replies:
    while not client.events.empty():
        client.events.get_nowait()
    began = time.monotonic()
    client.call("POST", "/api/input", {"text": text})
    return _Replies(client, began)


def _answer(client: Client, text: str) -> None:
    if client.call("GET", "/api/question").get("question"):
        client.call("POST", "/api/question/answer", {"answer": text})
    else:
        client.call("POST", "/api/input", {"text": text})


def _last_message_id(client: Client) -> str | None:
    messages = client.call("GET", "/api/messages?limit=1")["messages"]
    return messages[-1]["id"] if messages else None


def _settle(client: Client, deadline: float) -> bool:
    """Wait until nothing is queued or running, the Teller is idle with an empty inbox, and no
    new message came for ``SETTLED_QUIET_SECONDS``; False at the deadline."""
    quiet_since, last = None, None
    while time.monotonic() < deadline:
        status = client.call("GET", "/api/status")
        busy = _busy(client, status)
        newest = _last_message_id(client)
        if busy or newest != last:
            quiet_since, last = None, newest
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= SETTLED_QUIET_SECONDS:
            return True
        time.sleep(0.5)
    return False


def _busy(client: Client, status: dict[str, Any]) -> bool:
    if (status.get("teller") or {}).get("state") != "idle" or any(
            (status.get("queues") or {}).values()):
        return True
    tasks = client.call("GET", "/api/tasks?scope=all")["tasks"]
    return any(t["status"] in ("queued", "running", "deferred") for t in tasks)


def answers_table(runs_file: Path) -> None:
    """Per role, over the whole run: the model's answers, those that parsed as the role's
    object (or came as native calls), the corrections the runtime sent, and the runs."""
    runs = json.loads(runs_file.read_text())
    seen: dict[str, dict[str, Any]] = {}
    for items in runs.values():
        for run in items:
            seen.setdefault(run["id"], run)
    print("\nanswers per role (a correction is a message telling the model what was wrong)")
    print(f"{'role':<8} {'runs':>5} {'answers':>8} {'parsed':>7} {'not parsed':>11} "
          f"{'corrections':>12}")
    for role in ROLES:
        mine = [run for run in seen.values() if run["role"] == role]
        answers = [m for run in mine for m in run["messages"] if m["role"] == "assistant"]
        parsed = sum(1 for m in answers if m.get("tool_calls") or _an_object(m.get("content")))
        corrections = sum(1 for run in mine for m in run["messages"]
                          if m["role"] == "user" and str(m.get("content", "")).startswith("error:"))
        print(f"{role:<8} {len(mine):>5} {len(answers):>8} {parsed:>7} "
              f"{len(answers) - parsed:>11} {corrections:>12}")


def first_requests(calls: list[dict[str, Any]]) -> None:
    """Per role, the prompt tokens of its runs' first requests, by the server's count, and the
    share of the prompt tokens the server had cached, over all its requests but the first."""
    print("\nfirst requests, prompt tokens by the server's count: fewest-most (runs); "
          "cached share of the later requests' prompt tokens")
    for role in ROLES:
        mine = [c for c in calls if c["role"] == role]
        sizes = [c["prompt"] for c in mine if c.get("first")]
        later = mine[1:]
        share = sum(c["cached"] for c in later) / max(1, sum(c["prompt"] for c in later))
        if sizes:
            print(f"{role:<8} {min(sizes)}-{max(sizes)} ({len(sizes)}); {share:.0%} cached")


def _an_object(content: Any) -> bool:
    try:
        return isinstance(json.loads(content or ""), dict)
    except ValueError:
        return False


def print_table(rows: list[Row], title: str) -> None:
    print(f"\n{title}")
    head = (f"{'request':<16} {'done':<5} {'wall s':>7} {'1st s':>6} {'last s':>6} "
            f"{'calls T/P/W':>12} {'prompt T/P/W':>20} {'cached T/P/W':>20}  why")
    print(head)
    print("-" * len(head))
    for row in rows:
        trio = lambda d: "/".join(str(d.get(r, 0)) for r in ROLES)  # noqa: E731
        print(f"{row.name:<16} {'yes' if row.done else 'NO':<5} {row.wall:>7.1f} "
              f"{row.first_reply:>6.1f} {row.last_reply:>6.1f} {trio(row.calls):>12} "
              f"{trio(row.prompt):>20} {trio(row.cached):>20}  {row.why}")
    done = sum(row.done for row in rows)
    calls = sum(sum(row.calls.values()) for row in rows)
    print(f"\n{done} of {len(rows)} done; {calls} LLM calls; "
          f"{sum(row.wall for row in rows):.0f} s in all")


def warming(calls: list[dict[str, Any]]) -> None:
    """What reading the roles' prompts into the server's cache cost, apart from the rows."""
    warm = [call for call in calls if call["warm"]]
    if warm:
        read = sum(call["prompt"] - call["cached"] for call in warm)
        print(f"prompt warming: {len(warm)} requests, {read} prompt tokens read, "
              f"{sum(call['seconds'] for call in warm):.0f} s of the server's time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="the model server's base URL, e.g. http://127.0.0.1:8099/v1")
    parser.add_argument("--model", help="the model name the server serves")
    parser.add_argument("--scripted", action="store_true",
                        help="run against the scripted server answering as a model should")
    parser.add_argument("--only", help="comma-separated names of the requests to run")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per request")
    parser.add_argument("--idle", type=float, default=0,
                        help="seconds to wait after the instance is ready before the first "
                             "request, as a person who opens the page and types later")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--wording", choices=("first", "other", "third", "fourth", "fifth"),
                        default="first",
                        help="the requests as first worded, or worded one of four other ways "
                             "(a real model only: the scripted server knows the first wording)")
    parser.add_argument("--set", choices=tuple(SETS), default="everyday",
                        help="the twelve everyday requests (checks.py), twenty other errands "
                             "(errands.py: files changed in place, folders, more schedules), "
                             "fourteen chores (chores.py: a file copied, a CSV averaged, the "
                             "reminders listed), fifteen household requests (household.py: "
                             "the twelve kinds with other things in them, and the date) or "
                             "fifteen weekend requests (weekend.py: the kinds worded again) or "
                             "fifteen evening requests (evening.py: worded once more) or "
                             "fifteen morning requests (morning.py: and once again) or twelve "
                             "noon requests (noon.py: a to-do file, all reminders listed and "
                             "cancelled, a fact in Chinese used in English) or fifteen "
                             "night requests (night.py: worded once more); "
                             "all but the twelve with a real model only")
    args = parser.parse_args()
    requests = SETS[args.set]
    if args.set != "everyday" and (args.scripted or args.wording != "first"):
        parser.error(f"--set {args.set} runs with a real model (--url and --model), as worded")
    chosen = [r for r in requests if not args.only or r.name in args.only.split(",")]
    wordings = {"other": OTHER_WORDING, "third": THIRD_WORDING, "fourth": FOURTH_WORDING,
                 "fifth": FIFTH_WORDING}
    if args.wording in wordings:
        if args.scripted:
            parser.error(f"--wording {args.wording} needs a real model (--url and --model)")
        chosen = [replace(r, text=wordings[args.wording][r.name]) for r in chosen]
    oracle = None
    if args.scripted:
        from oracle import Oracle

        oracle = Oracle().start()
        url, model = oracle.url, "scripted"
    elif args.url and args.model:
        url, model = args.url, args.model
    else:
        parser.error("give --url and --model, or --scripted")
    recorder = Recorder(url)
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    root = Path(tempfile.mkdtemp(prefix="mimikit-tasks-"))
    up = Up(root, recorder.url, model, {"MIMIKIT_TELLER_TIMEOUT": "900"})
    rows = []
    try:
        time.sleep(args.idle)
        for request in chosen:
            rows.append(run_request(up, recorder, request, args.timeout))
            print(f"{rows[-1].name}: {'done' if rows[-1].done else 'NOT done'} "
                  f"in {rows[-1].wall:.1f} s ({rows[-1].why})", flush=True)
    finally:
        up.keep_runs(root / "runs.json")
        up.keep_chat(root / "chat.txt")
        up.stop()
        if oracle is not None:
            oracle.shutdown()
    print_table(rows, f"{model} at {url} ({root})")
    warming(recorder.calls)
    first_requests(recorder.calls)
    answers_table(root / "runs.json")
    if args.json:
        Path(args.json).write_text(json.dumps([row.__dict__ for row in rows], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
