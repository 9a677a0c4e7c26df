"""Reading the roles' system prompts into a server's prompt cache before their first runs, and
a history begun anew before the run that will show it.

A local server on two CPU cores reads 30-40 prompt tokens a second. The first file task of an
instance read the Planner's system prompt (about 1,300 tokens) and the Worker's (1,100) cold,
57 s and 40 s of its 135 s; later tasks found both in the server's cache. A server that keeps
the prompts it read (llama.cpp's: ``cachedTokens`` in its profile) serves any later prompt
that begins the same way from its cache, so each role's system prompt is sent ahead of time
and answered with one token.

A prompt is sent in steps: each request holds the text up to a line break about
``STEP_CHARS`` further on, its beginning served from the cache. A step is sent only once the
server's slots have been free for ``QUIET_SECONDS``: a person's message waits behind one step
(a few seconds), never behind a whole prompt, and a run's request waiting for a free slot, or
sent within a second of its last answer, goes first. A prompt a run has read meanwhile is not
sent on.

At an instance's start a prompt goes ``ahead`` of its runs instead, which wait for it, whole
and as soon as a slot is free: a server that holds it answers in 0.2 s (llama.cpp keeps whole
prompts: the first step of one it held found 3 of its 165 tokens cached, and all three roles'
were read anew, 83 s at every start), one that does not reads it in one request (20-35 s on
two CPU cores). A person who types meanwhile waits for the three (about 75 s the first time);
where the steps gave way to that message, its first file task read 2,400 tokens cold and took
100 s. Another client's request goes first, and waits behind one prompt at most.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from mimikit.exceptions import LLMUnavailable
from mimikit.llm.attempts import SAYS_HOW_BUSY
from mimikit.llm.client import LLMClient
from mimikit.llm.profile import ServerProfile
from mimikit.llm.slots import SLOT_POLL_SECONDS, all_busy

log = logging.getLogger("mimikit.llm")
STEP_CHARS = 600  # about 150 tokens: 4-5 s on two CPU cores
# A run's request waiting for a free slot asks every SLOT_POLL_SECONDS: it finds the slot free
# before a step does, after the warming's own steps too.
QUIET_SECONDS = 3 * SLOT_POLL_SECONDS
POLL_SECONDS = 0.25
BUSY_GIVE_UP_SECONDS = 600.0  # a server busy this long with other work is left as it is
READING_KEY = "prompts-reading"  # meta key: the role whose prompt an instance's start reads
READ_AT_KEY = "prompts-read-at"  # meta key: when an instance's start last ended reading them
WARMING_KEY = "prompts-warming"  # meta key: when the process reading them started


@dataclass
class Warmed:
    """What warming did: requests sent, prompt tokens the server read (not from its cache),
    and whether every prompt was read to its end."""

    steps: int = 0
    read: int = 0
    whole: bool = True


def warmable(profile: ServerProfile) -> bool:
    """Whether the server says how busy it is and serves prompts from its cache."""
    return profile.server in SAYS_HOW_BUSY and bool(profile.cachedTokens)


def warm_prompt(client: LLMClient, model: str, prompt: str,
                read_by_a_run: Callable[[], bool] = lambda: False, after: str = "",
                quiet_now: bool = False, ahead: Callable[[], None] | None = None,
                steps: bool = True) -> Warmed:
    """Send a system prompt of ``model`` to the server in steps, or, given ``after`` (the
    beginning of a first user message), the whole system prompt with ``after`` in steps;
    stops where a run has read it meanwhile (``read_by_a_run``: its own request then holds the
    whole prompt, which a step's part of it does not find), or where the server stays busy
    with other work or goes away (``whole`` False). ``quiet_now``: the server was found quiet
    just now, and the first step goes at once. ``ahead``: the prompt goes whole, ahead of the
    instance's runs, which wait while it goes (it is called before it is sent, to keep them
    waiting), once a slot of the server is free. ``steps`` False: in one request, the first
    (what a run that comes meanwhile waits for, it reads too)."""
    warmed = Warmed()
    if not warmable(client.profile(model)):
        return warmed
    text = after or prompt
    for step, cut in enumerate([len(text)] if ahead or not steps else step_ends(text)):
        if not (quiet_now and step == 0) and not (ahead and free(client)) and not quiet(client):
            warmed.whole = False
            return warmed
        if read_by_a_run():
            return warmed
        if ahead is not None:
            ahead()
        messages = [{"role": "system", "content": prompt if after else prompt[:cut]},
                    {"role": "user", "content": after[:cut]}]
        try:
            answer = client.chat(model, messages, max_tokens=1, retries=0)
        except LLMUnavailable as error:
            log.info("stopped reading prompts into the LLM server's cache: %s", error)
            warmed.whole = False
            return warmed
        warmed.steps += 1
        warmed.read += max(0, answer.usage.promptTokens - answer.usage.cachedTokens)
    return warmed


def step_ends(text: str) -> list[int]:
    """Where the steps of ``text`` end: after the first line break at least ``STEP_CHARS``
    past the last step's end, and at the end of the text."""
    ends: list[int] = []
    start = 0
    while (found := text.find("\n", start + STEP_CHARS)) >= 0:
        ends.append(found + 1)
        start = found + 1
    return [*ends, len(text)] if not ends or ends[-1] < len(text) else ends


def free(client: LLMClient) -> bool:
    """Whether the server says a slot of it is free now."""
    return all_busy(client.url, client.api_key) is False


def quiet(client: LLMClient) -> bool:
    """Wait until the server has had a free slot for ``QUIET_SECONDS``; False when it stays
    busy past ``BUSY_GIVE_UP_SECONDS`` or does not say."""
    began = time.monotonic()
    free_since: float | None = None
    while (now := time.monotonic()) - began < BUSY_GIVE_UP_SECONDS:
        busy = all_busy(client.url, client.api_key)
        if busy is None:
            return False
        if busy:
            free_since = None
        elif free_since is None:
            free_since = now
        elif now - free_since >= QUIET_SECONDS:
            return True
        time.sleep(POLL_SECONDS)
    return False
