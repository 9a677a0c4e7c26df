"""The roles' system prompts read into a server's prompt cache before their first runs
(``llm.warming``): in steps that each wait for the server to be free (at an instance's start,
ahead of its runs), only where the server says how busy it is and serves prompts from its
cache, once per start of an instance."""

from __future__ import annotations

import time

import pytest
from agent_helpers import post_input, wait_history
from llm_server import text, turn, with_usage
from processes import wait_for

from mimikit.agents.prompts import system_prompt
from mimikit.llm import warming
from mimikit.llm.client import LLMClient
from mimikit.llm.profile import profile_for
from mimikit.llm.profile_store import RedisProfiles
from mimikit.llm.warming import (
    QUIET_SECONDS,
    READ_AT_KEY,
    STEP_CHARS,
    step_ends,
    warm_prompt,
)
from mimikit.models import Message
from mimikit.status import status

MODELS = ("teller", "planner", "worker")
PROMPT = "\n".join(f"Line {n}: " + "words " * 30 for n in range(40))  # ~7,700 characters


QUICK = 0.3  # seconds of quiet a step waits for in tests of what is sent, not of the waiting


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warming, "QUIET_SECONDS", QUICK)


def _client(llm, cached: bool | None) -> LLMClient:
    llm.owner = "llamacpp"
    client = LLMClient(llm.url, None, max_retries=0)
    profile = profile_for(llm.url, "planner", ["llamacpp"])
    profile.probed, profile.cachedTokens = True, cached
    client.profiles.put(profile)
    return client


def _systems(llm, model: str) -> list[str]:
    return [body["messages"][0]["content"] for body in llm.requests_for(model)
            if body.get("max_tokens") == 1]


def test_a_prompt_is_read_in_steps_each_ending_at_a_line_break(llm, quick):
    client = _client(llm, cached=True)
    llm.default("planner", with_usage(text("ok"), 300, 1, cached_tokens=0))
    warmed = warm_prompt(client, "planner", PROMPT)
    sent = _systems(llm, "planner")
    assert warmed.whole and warmed.steps == len(sent) == len(step_ends(PROMPT)) >= 5
    assert sent[-1] == PROMPT and all(PROMPT.startswith(part) for part in sent)
    assert all(part.endswith("\n") for part in sent[:-1])
    sizes = [len(b) - len(a) for a, b in zip(["", *sent], sent, strict=False)]
    assert all(STEP_CHARS <= size < STEP_CHARS + 300 for size in sizes[:-1])
    assert [body["messages"][1] for body in llm.requests_for("planner")] == [
        {"role": "user", "content": ""}] * len(sent)
    assert warmed.read == 300 * len(sent)


def test_a_step_waits_until_the_server_has_been_free_a_while(llm):
    client = _client(llm, cached=True)
    llm.default("planner", text("ok"))
    began = time.monotonic()
    llm.busy_until = began + 2.0  # another client's request holds the one slot
    warm_prompt(client, "planner", "one line\n" * 3)
    assert llm.arrivals_for("planner")[0] - began >= 2.0 + QUIET_SECONDS


def test_every_step_waits_for_quiet_and_longer_after_another_clients_request(llm, quick):
    client = _client(llm, cached=True)

    def answer(_body):  # another client's request takes the slot as the second step is read
        if len(llm.requests) == 2:
            llm.busy_until = time.monotonic() + 1.0
        return text("ok")

    llm.default("planner", answer)
    warm_prompt(client, "planner", PROMPT)
    gaps = [b - a for a, b in zip(llm.arrivals, llm.arrivals[1:], strict=False)]
    assert gaps[1] >= 1.0 + QUICK and min(gaps) >= QUICK, gaps  # a waiting run goes first


def _holding(llm, seconds: float):
    """An answer that holds the scripted server's one slot ``seconds``, as a step does that
    llama.cpp's reads."""
    def answer(_body):  # the slot is free again as the answer leaves
        llm.busy_until = time.monotonic() + seconds
        time.sleep(seconds + 0.02)
        return text("ok")
    return answer


def test_a_prompt_ahead_of_the_runs_goes_whole_at_once_but_after_another_clients_request(
        llm, quick):
    """A server that holds a prompt serves a step of it from nothing: llama.cpp keeps whole
    prompts (the first step of the Planner's found 3 of its 165 tokens cached)."""
    client = _client(llm, cached=True)
    llm.default("planner", text("ok"))
    noted: list[int] = []
    began = time.monotonic()
    warmed = warm_prompt(client, "planner", PROMPT, ahead=lambda: noted.append(len(llm.requests)))
    assert warmed.whole and warmed.steps == 1 and noted == [0]
    assert _systems(llm, "planner") == [PROMPT] and llm.arrivals[0] - began < QUICK
    llm.reset()
    llm.default("planner", text("ok"))
    began = time.monotonic()
    llm.busy_until = began + 1.0  # another client's request holds the one slot
    warm_prompt(client, "planner", PROMPT, ahead=lambda: None)
    assert llm.arrivals_for("planner")[0] - began >= 1.0 + QUICK


def test_a_server_that_stays_busy_is_left_as_it_is(llm, monkeypatch: pytest.MonkeyPatch):
    client = _client(llm, cached=True)
    monkeypatch.setattr(warming, "BUSY_GIVE_UP_SECONDS", 1.5)
    llm.busy_until = time.monotonic() + 60
    warmed = warm_prompt(client, "planner", PROMPT)
    assert not warmed.whole and warmed.steps == 0 and llm.requests == []


@pytest.mark.parametrize("cached", [False, None], ids=["no cache", "not known"])
def test_a_server_that_serves_no_prompt_from_its_cache_is_sent_nothing(llm, cached):
    client = _client(llm, cached=cached)
    assert warm_prompt(client, "planner", PROMPT).steps == 0
    assert llm.requests == []


def test_a_server_gone_away_stops_the_warming(llm, quick):
    client = _client(llm, cached=True)  # nothing scripted: the server answers 500
    warmed = warm_prompt(client, "planner", PROMPT)
    assert not warmed.whole and warmed.steps == 0 and len(llm.requests) == 1


def test_a_prompt_a_run_read_meanwhile_is_not_sent_on(llm, quick):
    client = _client(llm, cached=True)
    llm.default("planner", text("ok"))
    warmed = warm_prompt(client, "planner", PROMPT, read_by_a_run=lambda: len(llm.requests) >= 2)
    assert warmed.whole and warmed.steps == 2 < len(step_ends(PROMPT))


@pytest.fixture
def caching_llamacpp(runtime, llamacpp):
    """The scripted server named as llama.cpp's (``llamacpp``) and known to serve prompts
    from its cache, reading each prompt for 2 s."""
    keeper = RedisProfiles(runtime.redis, runtime.keys.llm_profiles)
    for model in MODELS:
        profile = keeper.load(llamacpp.url, model)
        assert profile is not None
        profile.cachedTokens = True
        keeper.save(profile)
    llamacpp.default("*", _holding(llamacpp, 2.0))  # the warming starts as the workers do
    return llamacpp


def test_an_instance_reads_the_roles_prompts_in_order_before_its_first_message(
        caching_llamacpp, stack, llm):
    prompts = {model: system_prompt(model)("constrained") for model in MODELS}
    wait_for(lambda: _systems(llm, "planner"), timeout=60, message="the planner's prompt begun")
    teller = prompts["teller"]  # by one process, each whole
    assert _systems(llm, "teller") == [teller]
    assert _systems(llm, "planner") == [prompts["planner"]]
    llm.script("teller", turn(delegate=False, remember=False, reply="Hi!"))
    post_input(stack, "hello")
    reading = status(stack)["llm"].get("readingPrompts") or {}
    assert reading.get("role") in ("planner", "worker"), reading
    wait_history(stack, lambda h: ("assistant", "Hi!") in h, message="the reply")
    assert _systems(llm, "worker")[-1] == prompts["worker"]  # the message waited for them
    assert llm.arrivals_for("teller")[-1] > llm.arrivals_for("worker")[-1]
    assert llm.requests_for("teller")[-1]["messages"][0]["content"] == teller
    assert "readingPrompts" not in status(stack)["llm"]
    noted = stack.redis.get(stack.keys.meta("prompt-read|teller"))  # a warming skips it now
    assert noted is not None and time.time() - float(noted) < 30


def test_a_model_under_probe_elsewhere_is_warmed_once_its_profile_is_kept(runtime, llm, quick):
    import threading

    from mimikit.agents.warmup import claim_warming, warm_server_prompts

    llm.owner = "llamacpp"
    llm.default("*", text("ok"))
    keeper = RedisProfiles(runtime.redis, runtime.keys.llm_profiles)
    runtime.settings = runtime.settings.model_copy(update={
        "llm_base_url": llm.url, **{f"{model}_model": model for model in MODELS}})
    for model in MODELS:  # the probe of the planner's model half way: cached tokens not known
        profile = profile_for(llm.url, model, ["llamacpp"])
        profile.probed, profile.cachedTokens = True, model != "planner" or None
        keeper.save(profile)
    probed = profile_for(llm.url, "planner", ["llamacpp"])
    probed.probed, probed.cachedTokens = True, True
    threading.Timer(2.0, keeper.save, args=(probed,)).start()  # another process's probe ends
    client = LLMClient(llm.url, None, max_retries=0, keeper=keeper)
    started = time.time()
    assert claim_warming(runtime, started)
    warm_server_prompts(runtime, client, started)
    for model in MODELS:
        assert _systems(llm, model)[-1] == system_prompt(model)("constrained")
    assert llm.arrivals_for("planner")[0] < llm.arrivals_for("worker")[0]
    assert not claim_warming(runtime, time.time())  # once per start of the instance
    assert float(runtime.redis.get(runtime.keys.meta(READ_AT_KEY))) >= started


def _caching_runtime(runtime, llm):
    """``runtime`` on the scripted server named as llama.cpp's, holding answers to schemas and
    serving prompts from its cache, for every role."""
    llm.owner = "llamacpp"
    llm.default("*", with_usage(text("ok"), 300, 1, cached_tokens=0))
    runtime.settings = runtime.settings.model_copy(update={
        "llm_base_url": llm.url, **{f"{model}_model": model for model in MODELS}})
    keeper = RedisProfiles(runtime.redis, runtime.keys.llm_profiles)
    for model in MODELS:
        profile = profile_for(llm.url, model, ["llamacpp"])
        profile.probed, profile.cachedTokens = True, True
        keeper.save(profile)
    return runtime


def _say(runtime, n: int) -> None:
    runtime.conversation.append(Message(role="assistant" if n % 2 else "user",
                                        text=f"message number {n} " + "word " * 12))


def test_what_the_next_message_will_find_is_read_before_it_comes(runtime, llm, quick):
    """After each pass, the history the next message's pass will show (the lines said since,
    and where it begins anew, all of it) and the surroundings after it are read into the
    server's cache while the server is free: that pass finds them there, and a warming with
    nothing said since sends nothing."""
    from scheduling_helpers import add_trigger

    from mimikit.agents.context import context_sections
    from mimikit.agents.history_ahead import warm_next_message
    from mimikit.agents.prompts import build_prompts
    from mimikit.agents.surroundings import surroundings
    from mimikit.models import IntervalSchedule

    runtime = _caching_runtime(runtime, llm)
    teller = system_prompt("teller")("constrained")
    add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=7200),
                prompt="Remind the user to drink water.")
    runtime.redis.delete(runtime.keys.status("queued"))  # it waits: no work now
    began = runtime.keys.meta("history-start|teller")
    starts: set[str | None] = set()
    inbox = "## Pending inputs\n- [2026-12-01T16:20:21.424166Z] user: also add a line to todo.txt"
    for n in range(200):
        _say(runtime, n)
        before = len(llm.requests_for("teller"))
        warmed = warm_next_message(runtime)
        assert warmed is not None and warmed.whole and warmed.steps >= 1
        sent = llm.requests_for("teller")[before:]
        assert len(sent) == warmed.steps and {body["max_tokens"] for body in sent} == {1}
        assert {body["messages"][0]["content"] for body in sent} == {teller}
        read = sent[-1]["messages"][1]["content"]
        assert read.startswith("## History\n") and "## Scheduled\n" in read
        assert read.endswith("\n\n") and f"message number {n} " in read
        assert warm_next_message(runtime) is None
        assert len(llm.requests_for("teller")) == before + len(sent)
        seen = surroundings(runtime)
        _system, user = build_prompts("teller", "full", [
            *context_sections(runtime, ["also add a line to todo.txt"],
                              beside="\n\n".join([*seen, inbox])), *seen], inbox)
        assert user.startswith(read)  # the message's pass: all it shows before its time line
        starts.add(runtime.redis.get(began))
        if len(starts) > 1:
            break  # the history began anew, and was read so
    assert len(starts) == 2 and 5 < n < 199


def test_what_the_next_message_will_find_is_read_in_one_request_a_message_then_waits_for(
        runtime, llm, quick):
    """However long, it goes in one request: a message that comes meanwhile waits for it, and
    reads it from the server's cache."""
    from mimikit.agents import history_ahead
    from mimikit.agents.history_ahead import warm_next_message

    runtime = _caching_runtime(runtime, llm)
    for n in range(80):
        runtime.conversation.append(Message(role="user" if n % 2 else "assistant",
                                            text=f"message number {n} " + "word " * 40))
    assert len(history_ahead.next_beginning(runtime)) > 2 * STEP_CHARS  # steps: 2 at least
    warmed = warm_next_message(runtime)
    sent = llm.requests_for("teller")
    assert warmed is not None and warmed.whole and warmed.steps == len(sent) == 1
    assert sent[0]["messages"][1]["content"] == history_ahead.next_beginning(runtime)


def test_no_history_is_read_ahead_while_a_teller_run_is_due_nor_before_work_is_done(
        runtime, llm, quick):
    """The history is begun anew once the work a pass handed over is done: a reminder it
    set is among the surroundings, which leave the history less room."""
    import threading

    from mimikit.agents.history_ahead import warm_next_message

    runtime = _caching_runtime(runtime, llm)
    for n in range(80):
        _say(runtime, n)
    runtime.redis.set(runtime.keys.teller_queued, "1")  # a message's run waits for a worker
    assert warm_next_message(runtime) is None
    runtime.redis.delete(runtime.keys.teller_queued)
    from scheduling_helpers import add_trigger

    from mimikit.models import IntervalSchedule

    add_trigger(runtime, type="recurring", schedule=IntervalSchedule(interval=7200),
                prompt="Remind the user to drink water.")  # it waits: no work now
    assert runtime.redis.smembers(runtime.keys.status("queued"))
    runtime.redis.sadd(runtime.keys.status("running"), "task-planning")
    warmed: list[object] = []
    warming = threading.Thread(target=lambda: warmed.append(warm_next_message(runtime)))
    warming.start()
    time.sleep(2 * QUICK + 1.0)
    assert warming.is_alive() and llm.requests_for("teller") == []  # the Planner still plans
    runtime.redis.srem(runtime.keys.status("running"), "task-planning")
    warming.join(timeout=30)
    assert warmed and warmed[0] is not None and llm.requests_for("teller")


def test_ready_waits_for_the_reading_a_start_of_the_instance_does(runtime, monkeypatch):
    """``mimikit up`` says "ready" once the process of its start that claimed the reading has
    ended it, not before it began; nor does it wait where an earlier start read them lately,
    no LLM is configured, or the reading has taken too long."""
    from datetime import UTC, datetime, timedelta

    from mimikit import readiness
    from mimikit.agents.warmup import claim_warming, warm_server_prompts
    from mimikit.readiness import prompts_pending

    runtime.settings = runtime.settings.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1"})
    launched = datetime.now(UTC)
    assert prompts_pending(runtime, launched)  # no process has begun
    assert claim_warming(runtime, time.time())
    assert prompts_pending(runtime, launched)
    warm_server_prompts(runtime, LLMClient("http://127.0.0.1:9/v1", None, max_retries=0),
                        time.time())  # nothing answers there: the reading ends at once
    assert not prompts_pending(runtime, launched)
    later = datetime.now(UTC) + timedelta(seconds=1)
    assert not prompts_pending(runtime, later)  # claimed before it: read lately, not again
    runtime.redis.delete(runtime.keys.meta("prompts-warming"))
    assert prompts_pending(runtime, later)
    monkeypatch.setattr(readiness, "PROMPTS_READY_MAX_SECONDS", 0.5)
    assert not prompts_pending(runtime, datetime.now(UTC) - timedelta(seconds=1))  # too long
    runtime.settings = runtime.settings.model_copy(update={"llm_base_url": None,
                                                           "llm_api_key": None})
    assert not prompts_pending(runtime, datetime.now(UTC))
