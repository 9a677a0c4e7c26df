"""What a person's next message will find before its own lines, read by the server while no
one waits.

A message's pass reads from the server's cache what an earlier request began the same way,
then the rest. Before the time line and the message, the pass shows the history (the lines
said since the last pass) and the surroundings (``## Scheduled``, ``## Work directory``), which
a report's pass does not show: after a file task, a message's pass read 200-250 new tokens on
the 1.5B model, 6-10 s on two CPU cores before the first word of its answer. Where the history
no longer fits its room it begins anew (``context._steady``), and all of it is read again
(300-380 tokens). Once a Teller run has nothing left to do, the work it handed over is done and
a slot of the server is free, the system prompt with that beginning is sent, in one request
with one token asked (``llm.warming``): the next message's pass then reads its own lines only
(the time, what Memory recalls, the message). A message that comes meanwhile waits for that
request, and reads what it read from the server's cache.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from functools import partial

from redis.exceptions import RedisError

from mimikit.agents.common import answer_path, client_for
from mimikit.agents.context import context_sections
from mimikit.agents.prompts import build_prompts, system_prompt
from mimikit.agents.surroundings import surroundings
from mimikit.conversation.gate import teller_state
from mimikit.exceptions import LLMUnavailable
from mimikit.llm.client import LLMClient
from mimikit.llm.warming import BUSY_GIVE_UP_SECONDS, Warmed, free, warm_prompt, warmable
from mimikit.store.keys import as_text
from mimikit.store.runtime import Runtime

log = logging.getLogger("mimikit.teller")
# A message as the next pass shows it, estimated: the time line, its heading, its time and a
# sentence, and beside one in Chinese, the note to answer in Chinese (68-80). With 64, the
# 1.5B's pass for "我喜欢喝什么茶？" began the history anew where the reading ahead had not, and
# read 352 tokens (13.2 s to its first reply).
MESSAGE_TOKENS = 96
HISTORY = "## History"
AHEAD_KEY = "teller-ahead"  # meta key: a digest of the Teller's prompt beginning read last
WORK_POLL_SECONDS = 0.5
_warming = threading.Lock()  # one warming at a time in a process


def next_history(runtime: Runtime, seen: list[str]) -> list[str]:
    """The ``## History`` section (none where there is no history) that the next message's
    pass will begin with, shown ``seen`` (its surroundings) and a message; begun anew now
    where that is due."""
    return [section for section in context_sections(runtime, [], beside="\n\n".join(seen),
                                                    ahead=MESSAGE_TOKENS)
            if section.startswith(HISTORY)]


def next_beginning(runtime: Runtime) -> str:
    """The first user message of the next message's pass up to its time line: its history
    and surroundings, as ``teller.run_pass`` puts them."""
    seen = surroundings(runtime)
    return build_prompts("teller", "full", [*next_history(runtime, seen), *seen], "")[1]


def warm_soon(runtime: Runtime) -> None:
    """``warm_next_message`` in a thread of its own, unless one runs in this process or the
    server, as far as it is known, keeps no prompts."""
    if not _warming.locked() and _warmable(runtime):
        threading.Thread(target=_warm, args=(runtime,), name="next-message-warming",
                         daemon=True).start()


def _warmable(runtime: Runtime) -> bool:
    """Whether the Teller's answers are held to a schema by a server that keeps prompts."""
    return answer_path(runtime, "teller") == "constrained" and warmable(
        client_for(runtime).profile(runtime.settings.model_for("teller")))


def warm_next_message(runtime: Runtime) -> Warmed | None:
    """Once the work handed over is done and a slot of the server is free, read what the next
    message's pass will begin with (``next_beginning``) into the server's cache, after the
    Teller's system prompt, in one request; not where a Teller run came due or a message came
    first. None where the server keeps no prompts, a Teller run is due, or that beginning was
    read already."""
    client, model = client_for(runtime), runtime.settings.model_for("teller")
    if not _warmable(runtime) or not _settled(runtime, client):
        return None
    lines = runtime.redis.zcard(runtime.keys.history)
    system = system_prompt("teller", "full")("constrained")
    user = next_beginning(runtime)
    if not user.strip():
        return None
    key, digest = runtime.keys.meta(AHEAD_KEY), _digest(system, user)
    if as_text(runtime.redis.get(key) or b"") == digest:
        return None
    warmed = warm_prompt(client, model, system, partial(_moved_on, runtime, lines), after=user,
                         quiet_now=True, steps=False)
    if warmed.whole:
        runtime.redis.set(key, digest)
    return warmed


def _digest(*texts: str) -> str:
    return hashlib.blake2b("\0".join(texts).encode(), digest_size=16).hexdigest()


def _warm(runtime: Runtime) -> None:
    if not _warming.acquire(blocking=False):
        return
    try:
        warmed = warm_next_message(runtime)
        if warmed is not None:
            log.info("read %d tokens of what the next message will find into the LLM server's "
                     "cache in %d requests%s", warmed.read, warmed.steps,
                     "" if warmed.whole else " (stopped early)")
    except (LLMUnavailable, RedisError) as error:
        log.info("what the next message will find is not read into the LLM server's cache: %s", error)
    finally:
        _warming.release()


def _settled(runtime: Runtime, client: LLMClient) -> bool:
    """Wait until the work handed over is done (its tasks created, its lines in the history,
    what it scheduled among the surroundings) and a slot of the server is free; False where a
    Teller run comes due first, or the work or the server stays busy
    (``BUSY_GIVE_UP_SECONDS``)."""
    until = time.monotonic() + BUSY_GIVE_UP_SECONDS
    while not _teller_due(runtime) and time.monotonic() < until:
        if not _working(runtime) and free(client):
            return not (_working(runtime) or _teller_due(runtime))
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
