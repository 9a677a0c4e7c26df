"""A run told to stop abandons its LLM request at once, and the client tells an LLM that is away
(worth waiting for) from one that refuses for good. The scripted LLM is a real HTTP server."""

from __future__ import annotations

import threading
import time

import pytest
from llm_server import ScriptedLLM, delay, error, hang, text

from mimikit.exceptions import LLMAway, LLMStopped, LLMUnavailable
from mimikit.llm.abort import StopHandle, stoppable
from mimikit.llm.client import LLMClient

MESSAGES = [{"role": "user", "content": "hi"}]


class Call(threading.Thread):
    """One chat call on a thread of its own, as a run of a threads pool makes it."""

    def __init__(self, client: LLMClient, handle: StopHandle | None = None) -> None:
        super().__init__(daemon=True)
        self.client, self.handle = client, handle
        self.answer: str | None = None
        self.error: BaseException | None = None
        self.ended = 0.0

    def run(self) -> None:
        try:
            if self.handle is None:
                self.answer = self.client.chat("m", MESSAGES).content
            else:
                with stoppable(self.handle):
                    self.answer = self.client.chat("m", MESSAGES).content
        except BaseException as error:  # noqa: BLE001 - handed to the test
            self.error = error
        finally:
            self.ended = time.monotonic()


def _wait_requests(llm: ScriptedLLM, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(llm.requests) < count:
        assert time.monotonic() < deadline, f"{len(llm.requests)} of {count} requests came"
        time.sleep(0.01)


def test_a_stopped_run_abandons_its_request_in_flight_at_once(llm, figures):
    llm.default("m", hang(30))
    call = Call(LLMClient(llm.url, None, timeout=60, max_retries=3), StopHandle())
    call.start()
    _wait_requests(llm, 1)
    time.sleep(0.2)  # the request is waiting for its answer now
    stopped = time.monotonic()
    call.handle.stop()  # type: ignore[union-attr]
    call.join(timeout=5)
    figures.record("a stopped run's LLM request", abandoned_after_s=round(call.ended - stopped, 3))
    assert isinstance(call.error, LLMStopped), call.error
    assert call.ended - stopped < 1.0
    assert len(llm.requests) == 1  # not retried


def test_a_stopped_run_does_not_wait_out_its_backoff(llm):
    llm.default("m", error(503))
    client = LLMClient(llm.url, None, timeout=10, max_retries=5, backoff_base=4, backoff_max=8)
    call = Call(client, StopHandle())
    call.start()
    _wait_requests(llm, 1)
    time.sleep(0.2)  # in its backoff (2 to 4 s) now
    stopped = time.monotonic()
    call.handle.stop()  # type: ignore[union-attr]
    call.join(timeout=5)
    assert isinstance(call.error, LLMStopped), call.error
    assert call.ended - stopped < 0.5 and len(llm.requests) == 1


def test_stopping_one_run_leaves_the_requests_of_the_others_alone(llm):
    llm.default("m", delay(1.0, text("answered")))
    client = LLMClient(llm.url, None, timeout=10, max_retries=0)  # one client, one pool
    stopped, other, plain = Call(client, StopHandle()), Call(client, StopHandle()), Call(client)
    for call in (stopped, other, plain):
        call.start()
    _wait_requests(llm, 3)
    stopped.handle.stop()  # type: ignore[union-attr]
    for call in (stopped, other, plain):
        call.join(timeout=5)
    assert isinstance(stopped.error, LLMStopped)
    assert (other.answer, other.error, plain.answer, plain.error) == (
        "answered", None, "answered", None)


@pytest.mark.parametrize("fault", [error(503), error(500), error(429), hang(5)],
                         ids=["503", "500", "429", "no answer"])
def test_an_llm_that_stays_away_past_the_retries_raises_llm_away(llm, fault):
    llm.default("m", fault)
    client = LLMClient(llm.url, None, timeout=0.3, max_retries=1, backoff_base=0.01)
    with pytest.raises(LLMAway, match="after 2 attempts"):
        client.chat("m", MESSAGES)


def test_an_unreachable_llm_is_away():
    client = LLMClient("http://127.0.0.1:9/v1", None, timeout=1, max_retries=0)
    with pytest.raises(LLMAway, match="cannot reach the LLM"):
        client.chat("m", MESSAGES)


@pytest.mark.parametrize(("status", "fix"), [(401, "MIMIKIT_LLM_API_KEY"),
                                             (403, "MIMIKIT_LLM_API_KEY"),
                                             (404, "MIMIKIT_MODEL"),
                                             (400, "refused the request")])
def test_a_refusal_that_will_not_change_is_not_away_and_names_the_fix(llm, status, fix):
    llm.default("m", error(status))
    client = LLMClient(llm.url, None, timeout=5, max_retries=3)
    with pytest.raises(LLMUnavailable, match=fix) as raised:
        client.chat("m", MESSAGES)
    assert not isinstance(raised.value, LLMAway)
    assert len(llm.requests) == 1  # no retry either
