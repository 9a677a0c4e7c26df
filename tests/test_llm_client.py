"""The LLM client against the scripted server over real HTTP."""

from __future__ import annotations

import json
import socket
import time

import llm_fixtures
import pytest
from llm_server import (
    ScriptedLLM,
    delay,
    disconnect,
    error,
    hang,
    malformed,
    text,
    tool_call,
    tool_calls,
    with_usage,
)

from mimikit.config import load_settings
from mimikit.exceptions import LLMUnavailable
from mimikit.llm.client import LLMClient
from mimikit.llm.completion import ToolCall

llm = llm_fixtures.llm  # the scripted server fixture

MODEL = "test-model"


def client_for(server: ScriptedLLM, **options: float) -> LLMClient:
    settings = {"timeout": 5.0, "max_retries": 3, "backoff_base": 0.01, "backoff_max": 0.05}
    settings.update(options)
    return LLMClient(server.url, None, **settings)  # type: ignore[arg-type]


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_plain_text_answer_gives_content_usage_and_raw_message(llm: ScriptedLLM) -> None:
    llm.script(MODEL, with_usage(text("hello there"), 12, 3))

    completion = client_for(llm).chat(MODEL, [{"role": "user", "content": "hi"}])

    assert completion.content == "hello there"
    assert completion.tool_calls == []
    assert (completion.usage.promptTokens, completion.usage.completionTokens) == (12, 3)
    assert completion.usage.totalTokens == 15
    assert completion.raw_message == {"role": "assistant", "content": "hello there"}
    assert llm.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


def test_tool_calls_are_parsed_in_order_with_their_raw_arguments(llm: ScriptedLLM) -> None:
    llm.script(MODEL, tool_calls([("reply", {"text": "你好"}), ("list_tasks", {})]))

    completion = client_for(llm).chat(MODEL, [{"role": "user", "content": "hi"}], tools=[])

    names = [call.name for call in completion.tool_calls]
    assert names == ["reply", "list_tasks"]
    assert completion.tool_calls[0].arguments == '{"text": "你好"}'
    assert all(isinstance(call, ToolCall) and call.id for call in completion.tool_calls)
    raw_calls = completion.raw_message["tool_calls"]
    assert raw_calls[0]["type"] == "function"
    assert raw_calls[0]["function"] == {"name": "reply", "arguments": '{"text": "你好"}'}
    assert raw_calls[1]["id"] == completion.tool_calls[1].id


def test_tools_are_sent_only_when_given(llm: ScriptedLLM) -> None:
    schema = {"type": "function", "function": {"name": "reply", "parameters": {"type": "object"}}}
    llm.script(MODEL, text("a"), text("b"))
    client = client_for(llm)

    client.chat(MODEL, [{"role": "user", "content": "x"}], tools=None)
    client.chat(MODEL, [{"role": "user", "content": "x"}], tools=[schema])

    assert "tools" not in llm.requests[0]
    assert llm.requests[1]["tools"] == [schema]


def test_500_then_429_then_success_succeeds_after_three_requests(llm: ScriptedLLM) -> None:
    llm.script(MODEL, error(500), error(429), text("finally"))

    completion = client_for(llm).chat(MODEL, [{"role": "user", "content": "x"}])

    assert completion.content == "finally"
    assert len(llm.requests) == 3


def test_retry_after_header_is_waited_for(llm: ScriptedLLM) -> None:
    llm.script(MODEL, error(429, headers={"Retry-After": "0.4"}), text("ok"))

    began = time.monotonic()
    client_for(llm).chat(MODEL, [{"role": "user", "content": "x"}])

    assert time.monotonic() - began >= 0.4


def test_persistent_503_gives_up_after_max_retries_naming_status(llm: ScriptedLLM) -> None:
    llm.default(MODEL, error(503))

    with pytest.raises(LLMUnavailable) as raised:
        client_for(llm, max_retries=2).chat(MODEL, [{"role": "user", "content": "x"}])

    assert len(llm.requests) == 3
    assert "HTTP 503" in str(raised.value) and llm.url in str(raised.value)


def test_401_fails_at_once_and_names_the_api_key_setting(llm: ScriptedLLM) -> None:
    llm.script(MODEL, error(401, {"error": {"message": "Incorrect API key provided"}}))

    with pytest.raises(LLMUnavailable) as raised:
        client_for(llm).chat(MODEL, [{"role": "user", "content": "x"}])

    assert len(llm.requests) == 1
    message = str(raised.value)
    assert "rejected the API key" in message and "MIMIKIT_LLM_API_KEY" in message


def test_dead_port_raises_llm_unavailable_naming_the_url_quickly() -> None:
    url = f"http://127.0.0.1:{dead_port()}/v1"
    client = LLMClient(url, None, timeout=2.0, max_retries=2, backoff_base=0.01)

    began = time.monotonic()
    with pytest.raises(LLMUnavailable) as raised:
        client.chat(MODEL, [{"role": "user", "content": "x"}])

    assert time.monotonic() - began < 5
    message = str(raised.value)
    assert f"cannot reach the LLM at {url}" in message
    assert "connection refused" in message and "MIMIKIT_LLM_BASE_URL" in message


def test_slow_answer_times_out_and_is_retried(llm: ScriptedLLM) -> None:
    llm.script(MODEL, delay(1.0, text("late")), delay(1.0, text("late")))

    with pytest.raises(LLMUnavailable) as raised:
        client_for(llm, timeout=0.2, max_retries=1).chat(MODEL, [{"role": "user", "content": "x"}])

    assert "did not answer within 0.2 s" in str(raised.value)
    assert len(llm.requests) == 2


def test_no_configuration_fails_before_any_request(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Even if the SDK could find a server through its own variable, nothing is sent.
    monkeypatch.setenv("OPENAI_BASE_URL", llm.url)
    client = LLMClient(None, None, timeout=1.0, max_retries=0)

    with pytest.raises(LLMUnavailable, match="no LLM is configured: set MIMIKIT_LLM_BASE_URL"):
        client.chat(MODEL, [{"role": "user", "content": "x"}])

    assert llm.requests == []
    assert not client.configured


def test_api_key_is_sent_as_bearer_token(llm: ScriptedLLM) -> None:
    llm.script(MODEL, text("a"), text("b"))

    LLMClient(llm.url, "sk-secret", max_retries=0).chat(MODEL, [{"role": "user", "content": "x"}])
    LLMClient(llm.url, None, max_retries=0).chat(MODEL, [{"role": "user", "content": "x"}])

    auth = [headers["authorization"] for headers in llm.request_headers]
    assert auth == ["Bearer sk-secret", "Bearer not-needed"]


def test_from_settings_uses_the_llm_settings(
    llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MIMIKIT_LLM_BASE_URL", llm.url)
    monkeypatch.setenv("MIMIKIT_LLM_API_KEY", "k")
    settings = load_settings(llm_timeout=7, llm_retries=1)
    llm.script(MODEL, error(500), error(500))

    client = LLMClient.from_settings(settings)
    with pytest.raises(LLMUnavailable):
        client.chat(MODEL, [{"role": "user", "content": "x"}])

    assert (client.base_url, client.api_key, client.timeout) == (llm.url, "k", 7)
    assert len(llm.requests) == 2


def test_exhausted_script_is_a_loud_500(llm: ScriptedLLM) -> None:
    with pytest.raises(LLMUnavailable, match="script exhausted for model test-model"):
        client_for(llm, max_retries=0).chat(MODEL, [{"role": "user", "content": "x"}])


def test_callable_response_sees_the_request(llm: ScriptedLLM) -> None:
    llm.script(MODEL, lambda body: tool_call("echo", said=body["messages"][-1]["content"]))

    completion = client_for(llm).chat(MODEL, [{"role": "user", "content": "task-42"}])

    assert completion.tool_calls[0].arguments == '{"said": "task-42"}'


def test_a_streamed_reply_arrives_piece_by_piece_and_whole(llm):
    from llm_server import streamed, tool_call

    text = 'Hello "world" — ünïcode \\ and a long enough tail to come in pieces.'
    llm.script("m", streamed(with_usage(tool_call("reply", text=text), 50, 20, 40), 0.0, 7))
    pieces: list[str] = []
    client = LLMClient(llm.url, None, timeout=5, max_retries=0)
    completion = client.chat("m", [{"role": "user", "content": "hi"}], on_text=pieces.append)
    assert len(pieces) >= 3 and "".join(pieces) == text
    assert completion.tool_calls[0].name == "reply"
    assert json.loads(completion.tool_calls[0].arguments) == {"text": text}
    usage = completion.usage
    assert (usage.promptTokens, usage.completionTokens, usage.cachedTokens) == (50, 20, 40)
    assert llm.requests[0]["stream"] is True


def test_streamed_requests_keep_one_connection(llm):
    """The body of a streamed answer is read to its end, so its connection serves the next
    request (the SDK's stream closed it unread at ``[DONE]``: a new connection, and to a
    remote server a new TLS handshake, for every request)."""
    from llm_server import streamed, text

    llm.default("m", streamed(with_usage(text("Some plain words."), 9, 4), 0.0, 5))
    client = LLMClient(llm.url, None, timeout=5, max_retries=0)
    for _ in range(5):
        pieces: list[str] = []
        completion = client.chat("m", [{"role": "user", "content": "hi"}], on_text=pieces.append)
        assert "".join(pieces) == completion.content == "Some plain words."
        assert completion.usage.promptTokens == 9
    assert all(body["stream"] for body in llm.requests) and len(set(llm.peers)) == 1


def test_plain_content_is_shown_once_it_is_read_whole(llm):
    from llm_server import streamed, text

    llm.script("m", streamed(text('Just some plain words. {"name": "reply", "arguments": {}}'),
                             0.0, 5))
    pieces: list[str] = []
    completion = LLMClient(llm.url, None, timeout=5, max_retries=0).chat(
        "m", [{"role": "user", "content": "hi"}], on_text=pieces.append)
    assert pieces == ["Just some plain words."]
    assert completion.written is not None and completion.written.calls == [("reply", "{}")]


def test_a_server_that_does_not_stream_gives_the_whole_reply(llm):
    from llm_server import tool_call

    llm.streams = False
    llm.script("m", tool_call("reply", text="whole"), tool_call("reply", text="again"))
    pieces: list[str] = []
    client = LLMClient(llm.url, None, timeout=5, max_retries=0)
    first = client.chat("m", [{"role": "user", "content": "hi"}], on_text=pieces.append)
    second = client.chat("m", [{"role": "user", "content": "hi"}], on_text=pieces.append)
    assert json.loads(first.tool_calls[0].arguments) == {"text": "whole"}
    assert json.loads(second.tool_calls[0].arguments) == {"text": "again"}
    assert pieces == [] and client.transport.streams is False
    assert [r.get("stream") for r in llm.requests] == [True, None]


# --- backoff, server-given waits, malformed answers ---------------------------------------------


def gaps(server: ScriptedLLM) -> list[float]:
    """Seconds between consecutive requests the server received."""
    times = server.arrivals
    return [round(b - a, 3) for a, b in zip(times, times[1:], strict=False)]


def test_backoff_is_exponential_with_jitter_between_half_and_the_whole_step() -> None:
    import random

    client = LLMClient("http://127.0.0.1:9/v1", None, backoff_base=0.1, backoff_max=1.0,
                       rng=random.Random(7))
    for attempt, step in enumerate([0.1, 0.2, 0.4, 0.8, 1.0, 1.0]):
        waits = [client.backoff(attempt) for _ in range(200)]
        assert all(step / 2 <= w <= step for w in waits), (attempt, min(waits), max(waits))
        assert min(waits) < step * 0.6 and max(waits) > step * 0.9  # spread over the range
        assert len(set(waits)) == 200  # no two clients wait alike
    assert client.backoff(10_000) <= 1.0  # no overflow for absurd attempt numbers


def test_retries_wait_the_jittered_backoff_between_requests(llm: ScriptedLLM, figures) -> None:
    import random

    llm.script(MODEL, error(500), error(502), error(503), text("up again"))
    client = client_for(llm, backoff_base=0.1, backoff_max=1.0)
    client._random = random.Random(3)

    completion = client.chat(MODEL, [{"role": "user", "content": "x"}])

    assert completion.content == "up again"
    waited = gaps(llm)
    figures.record("backoff between retries (s)", gaps=waited, steps=[0.1, 0.2, 0.4])
    assert len(waited) == 3
    for gap, step in zip(waited, [0.1, 0.2, 0.4], strict=True):
        assert gap >= step / 2, waited


def test_retry_after_ms_is_honoured_before_retry_after(llm: ScriptedLLM, figures) -> None:
    llm.script(MODEL, error(429, headers={"retry-after-ms": "350", "Retry-After": "30"}),
               text("ok"))

    client_for(llm).chat(MODEL, [{"role": "user", "content": "x"}])

    (waited,) = gaps(llm)
    figures.record("retry-after-ms 350", waited_s=waited)
    assert 0.35 <= waited < 5


def test_retry_after_as_an_http_date_is_honoured(llm: ScriptedLLM, figures) -> None:
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    when = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
    llm.script(MODEL, error(503, headers={"Retry-After": format_datetime(when, usegmt=True)}),
               text("ok"))

    client_for(llm).chat(MODEL, [{"role": "user", "content": "x"}])

    (waited,) = gaps(llm)
    retried_at = llm.arrivals[1] + time.time() - time.monotonic()  # as a wall-clock time
    figures.record("Retry-After as an HTTP date 1-2 s ahead", waited_s=waited)
    assert retried_at >= when.timestamp() - 0.005, retried_at - when.timestamp()
    assert waited < 5


def test_a_retry_after_over_the_limit_fails_at_once_saying_so(llm: ScriptedLLM) -> None:
    llm.script(MODEL, error(429, headers={"Retry-After": "600"}), text("never asked"))

    began = time.monotonic()
    with pytest.raises(LLMUnavailable) as raised:
        client_for(llm).chat(MODEL, [{"role": "user", "content": "x"}])

    assert time.monotonic() - began < 2 and len(llm.requests) == 1
    message = str(raised.value)
    assert "HTTP 429" in message and "asks to retry after 600 s" in message, message


def test_unreadable_retry_after_falls_back_to_the_backoff(llm: ScriptedLLM) -> None:
    llm.script(MODEL, error(429, headers={"Retry-After": "soon", "retry-after-ms": "nan"}),
               text("ok"))

    completion = client_for(llm).chat(MODEL, [{"role": "user", "content": "x"}])

    assert completion.content == "ok" and gaps(llm)[0] < 1


@pytest.mark.parametrize("answer", [
    malformed(),
    malformed("<html><body>502 Bad Gateway</body></html>", content_type="text/html"),
    malformed('{"choices": "not a list"}'),
], ids=["cut-off-json", "html-page", "wrong-shape"])
def test_a_malformed_answer_is_retried_then_succeeds(llm: ScriptedLLM, answer) -> None:
    llm.script(MODEL, answer, text("well formed"))

    completion = client_for(llm).chat(MODEL, [{"role": "user", "content": "x"}])

    assert completion.content == "well formed" and len(llm.requests) == 2


def test_persistently_malformed_answers_fail_with_a_readable_reason(llm: ScriptedLLM) -> None:
    llm.default(MODEL, malformed())

    with pytest.raises(LLMUnavailable) as raised:
        client_for(llm, max_retries=2).chat(MODEL, [{"role": "user", "content": "x"}])

    assert len(llm.requests) == 3
    message = str(raised.value)
    assert "answered with malformed JSON" in message and "after 3 attempts" in message, message


def test_a_dropped_connection_and_a_hang_are_retried(llm: ScriptedLLM, figures) -> None:
    llm.script(MODEL, disconnect(), hang(3), text("finally"))

    began = time.monotonic()
    completion = client_for(llm, timeout=0.3).chat(MODEL, [{"role": "user", "content": "x"}])

    elapsed = time.monotonic() - began
    figures.record("disconnect, then hang past a 0.3 s timeout, then an answer",
                   requests=len(llm.requests), seconds=round(elapsed, 2))
    assert completion.content == "finally" and len(llm.requests) == 3
    assert elapsed < 2.5  # the hang was cut at the timeout, not waited out


def test_a_hang_on_every_attempt_fails_naming_the_timeout(llm: ScriptedLLM) -> None:
    llm.default(MODEL, hang(3))

    with pytest.raises(LLMUnavailable, match=r"did not answer within 0\.2 s \(after 2 attempts\)"):
        client_for(llm, timeout=0.2, max_retries=1).chat(MODEL, [{"role": "user", "content": "x"}])


def _offered(options):
    return [tool["function"]["name"] for tool in options["tools"]]


def _profile():
    from mimikit.llm.profile import ServerProfile

    return ServerProfile(baseUrl="http://127.0.0.1:9/v1", model="m")


def test_a_forced_function_is_offered_alone_and_asked_as_required_where_its_name_is_not_held():
    from mimikit.llm import choice
    from mimikit.llm.completion import Completion, ToolCall

    tools = [{"type": "function", "function": {"name": name}} for name in ("reply", "delegate")]
    profile = _profile()
    asked = {"tools": tools, "tool_choice": choice.forced("delegate")}
    prose = Completion(content="I'll delegate it.")
    assert choice.sent(asked, profile) == {"tools": [tools[1]],
                                           "tool_choice": choice.forced("delegate")}
    choice.answered(asked, prose, profile)  # the name not held: the same demand as required
    assert choice.sent(asked, profile) == {"tools": [tools[1]], "tool_choice": "required"}
    called = Completion(content=None, tool_calls=[ToolCall("c1", "delegate", "{}")])
    choice.answered(asked, called, profile)
    assert choice.sent({"tools": tools, "tool_choice": "required"}, profile)["tool_choice"] \
        == "required"
    choice.answered(asked, prose, profile)  # "required" not held either
    assert choice.sent(asked, profile) == {"tools": [tools[1]], "tool_choice": "auto"}
    assert _offered(choice.sent({"tools": tools, "tool_choice": "required"}, profile)) == \
        ["reply", "delegate"]
    assert profile.toolChoice == {"named": False, "required": False}


def test_a_forced_function_is_offered_alone_even_where_nothing_is_held():
    from mimikit.llm import choice
    from mimikit.llm.completion import Completion

    tools = [{"type": "function", "function": {"name": name}} for name in ("reply", "delegate")]
    profile = _profile()
    required = {"tools": tools, "tool_choice": "required"}
    choice.answered(required, Completion(content="Hello!"), profile)
    assert choice.sent(required, profile)["tool_choice"] == "auto"
    asked = {"tools": tools, "tool_choice": choice.forced("reply")}
    assert choice.sent(asked, profile) == {"tools": [tools[0]],
                                           "tool_choice": choice.forced("reply")}
    choice.answered(asked, Completion(content="Hello!"), profile)
    assert choice.sent(asked, profile) == {"tools": [tools[0]], "tool_choice": "auto"}


def test_streamed_calls_without_an_index_are_told_apart_by_their_ids(llm):
    """Some servers number no call in a stream: a new id starts a new call, a piece without
    one goes on the last, and a value that is no chunk is passed over."""
    events = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"id": "a", "function": {"name": "reply", "arguments": '{"text": '}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"function": {"arguments": '"hi"}'}}]}}]},
        "a bare value",
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"id": "b", "function": {"name": "reply", "arguments": '{"text": "there"}'}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    body = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    llm.script("m", {"raw": body, "content_type": "text/event-stream"})
    completion = LLMClient(llm.url, None, timeout=5, max_retries=0).chat(
        "m", [{"role": "user", "content": "hi"}], on_text=lambda _piece: None)
    assert [(c.id, c.name, json.loads(c.arguments)) for c in completion.tool_calls] == [
        ("a", "reply", {"text": "hi"}), ("b", "reply", {"text": "there"})]
