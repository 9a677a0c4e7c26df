"""The history a person's next message will find, begun anew by a pass no one waits on.

A message's pass reads from the server's cache all that the last pass sent, then its own new
lines. Where the history no longer fits its room it begins anew (``context._steady``), and all
of it is read again: 300-380 tokens on the 1.5B model, 8-10 s on two CPU cores before the first
word of a reply. A report's pass begins it where the next message's pass will find it. Where no
report follows (a reminder set, a fact kept, a question asked), the Teller's run, once nothing
is left to do, begins it anew in the same way while the server is free, and sends it with one
token asked (``llm.warming``): the next message's pass then reads its own lines only.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial

from redis.exceptions import RedisError

from mimikit.agents.common import answer_path, client_for
from mimikit.agents.context import context_sections
from mimikit.agents.prompts import build_prompts
from mimikit.agents.surroundings import surroundings
from mimikit.conversation.gate import teller_state
from mimikit.exceptions import LLMUnavailable
from mimikit.llm.client import LLMClient
from mimikit.llm.warming import BUSY_GIVE_UP_SECONDS, Warmed, quiet, warm_prompt, warmable
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.teller")
# A message as the next pass shows it: its time and a sentence (36-50 estimated tokens), and
# beside one in Chinese, the note to answer in Chinese.
MESSAGE_TOKENS = 64
HISTORY = "## History"
WORK_POLL_SECONDS = 0.5
_warming = threading.Lock()  # one warming at a time in a process


def next_history(runtime: Runtime, seen: list[str]) -> list[str]:
    """The ``## History`` section (none where there is no history) that the next message's
    pass will begin with, shown ``seen`` (its surroundings) and a message; begun anew now
    where that is due."""
    return [section for section in context_sections(runtime, [], beside="\n\n".join(seen),
                                                    ahead=MESSAGE_TOKENS)
            if section.startswith(HISTORY)]


def warm_soon(runtime: Runtime) -> None:
    """``warm_next_history`` in a thread of its own, unless one runs in this process or the
    server, as far as it is known, keeps no prompts."""
    if not _warming.locked() and _warmable(runtime):
        threading.Thread(target=_warm, args=(runtime,), name="history-warming",
                         daemon=True).start()


def _warmable(runtime: Runtime) -> bool:
    """Whether the Teller's answers are held to a schema by a server that keeps prompts."""
    return answer_path(runtime, "teller") == "constrained" and warmable(
        client_for(runtime).profile(runtime.settings.model_for("teller")))


def warm_next_history(runtime: Runtime) -> Warmed | None:
    """Where the history the next message's pass will show begins anew, once the work handed
    over is done and the server has been free a while, read it into the server's cache, after
    the Teller's system prompt; stops where a Teller run is due or a message came. None where
    the server keeps no prompts, a Teller run is due, or the history goes on where the last
    pass began it (the server has read it)."""
    client, model = client_for(runtime), runtime.settings.model_for("teller")
    if not _warmable(runtime) or not _settled(runtime, client):
        return None
    key = runtime.keys.meta("history-start|teller")
    began, lines = runtime.redis.get(key), runtime.redis.zcard(runtime.keys.history)
    history = next_history(runtime, surroundings(runtime))
    if not history or runtime.redis.get(key) == began:
        return None
    system, user = build_prompts("teller", "full", history, "")
    return warm_prompt(client, model, system("constrained"), partial(_moved_on, runtime, lines),
                       after=user, quiet_now=True)


def _warm(runtime: Runtime) -> None:
    if not _warming.acquire(blocking=False):
        return
    try:
        warmed = warm_next_history(runtime)
        if warmed is not None:
            log.info("read %d tokens of the history begun anew into the LLM server's cache in "
                     "%d requests%s", warmed.read, warmed.steps,
                     "" if warmed.whole else " (stopped early)")
    except (LLMUnavailable, RedisError) as error:
        log.info("the history begun anew is not read into the LLM server's cache: %s", error)
    finally:
        _warming.release()


def _settled(runtime: Runtime, client: LLMClient) -> bool:
    """Wait until the work handed over is done (its tasks created, its lines in the history,
    what it scheduled among the surroundings) and the server has been free a while; False
    where a Teller run comes due first, or the work or the server stays busy
    (``BUSY_GIVE_UP_SECONDS``)."""
    until = time.monotonic() + BUSY_GIVE_UP_SECONDS
    while not _teller_due(runtime) and time.monotonic() < until:
        if not _working(runtime):
            return quiet(client) and not (_working(runtime) or _teller_due(runtime))
        time.sleep(WORK_POLL_SECONDS)
    return False


def _working(runtime: Runtime) -> bool:
    """Whether a task is running, or queued other than as a trigger (work for later)."""
    keys = runtime.keys
    pipe = runtime.redis.pipeline(transaction=False)
    pipe.scard(keys.status("running"))
    pipe.sdiff([keys.status("queued"), keys.triggers])
    running, queued = pipe.execute()
    return bool(running or queued)


def _moved_on(runtime: Runtime, lines: int) -> bool:
    """Whether a Teller run is due, or the conversation holds other than ``lines`` messages
    (the history read is no longer the one the next message's pass will find)."""
    return _teller_due(runtime) or runtime.redis.zcard(runtime.keys.history) != lines


def _teller_due(runtime: Runtime) -> bool:
    """Whether a Teller run holds its lease, is queued, or has items waiting."""
    return teller_state(runtime)["state"] != "idle" or bool(runtime.redis.llen(
        runtime.keys.inbox))
