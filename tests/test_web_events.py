"""GET /api/events against a real ``mimikit web`` process, read as a stream with http.client."""

from __future__ import annotations

import json

from web_helpers import EventStream, web_server  # noqa: F401  (fixture)

from mimikit.models import Message, PendingQuestion, Task


def test_a_client_connected_before_a_message_is_written_receives_it(runtime, web_server):  # noqa: F811
    runtime.conversation.append(Message(role="user", text="already there"))
    server = web_server.start()
    stream = EventStream(server.port)
    try:
        assert stream.response.status == 200
        assert stream.response.getheader("Content-Type").startswith("text/event-stream")
        status = stream.next_of("status")  # sent on connect
        assert json.loads(status["data"])["teller"]["state"] == "idle"
        message = Message(role="assistant", text="Hello <b>live</b>")
        runtime.conversation.append(message)
        event = stream.next_of("message")
        data = json.loads(event["data"])
        assert (data["id"], data["text"]) == (message.id, "Hello <b>live</b>")
        assert event["id"]  # resumable
    finally:
        stream.close()


def test_reconnecting_with_last_event_id_gets_what_was_missed(runtime, web_server):  # noqa: F811
    server = web_server.start()
    stream = EventStream(server.port)
    first = Message(role="user", text="first")
    stream.next_of("status")
    runtime.conversation.append(first)
    seen = stream.next_of("message")
    stream.close()
    missed = [Message(role="assistant", text=f"missed {n}") for n in range(3)]
    for message in missed:
        runtime.conversation.append(message)
    runtime.tasks.add([Task(prompt="a task while away")])
    runtime.conversation.ask(PendingQuestion(question="still there?"))

    again = EventStream(server.port, last_event_id=seen["id"])
    try:
        got = [again.next_event() for _ in range(6)]
        kinds = [e["event"] for e in got if e["event"] != "status"]
        assert kinds[:5] == ["message", "message", "message", "task", "question"]
        texts = [json.loads(e["data"])["text"] for e in got if e["event"] == "message"]
        assert texts == ["missed 0", "missed 1", "missed 2"]
        assert json.loads(next(e for e in got if e["event"] == "task")["data"])["status"] == "queued"
    finally:
        again.close()


def test_a_new_client_without_last_event_id_starts_at_the_end(runtime, web_server):  # noqa: F811
    runtime.conversation.append(Message(role="user", text="old news"))
    server = web_server.start()
    stream = EventStream(server.port)
    try:
        stream.next_of("status")
        runtime.conversation.append(Message(role="assistant", text="fresh"))
        assert json.loads(stream.next_of("message")["data"])["text"] == "fresh"
    finally:
        stream.close()


def test_a_teller_state_change_is_sent_as_a_status_event(runtime, web_server):  # noqa: F811
    server = web_server.start()
    stream = EventStream(server.port)
    try:
        assert json.loads(stream.next_of("status")["data"])["teller"]["state"] == "idle"
        runtime.redis.set(runtime.keys.teller_lock, "some-worker", ex=30)
        status = json.loads(stream.next_of("status", timeout=5)["data"])
        assert status["teller"]["state"] == "running"
    finally:
        stream.close()


def test_state_changes_soon_after_one_another_each_send_what_changed(runtime, web_server):  # noqa: F811
    """Within moments of a whole report the next one reads only what a message changes, and
    says it: the Teller's state, the question and the inbox (the rest is the report before)."""
    server = web_server.start()
    stream = EventStream(server.port)
    try:
        first = json.loads(stream.next_of("status")["data"])
        runtime.conversation.ask(PendingQuestion(question="Which color?"))
        runtime.conversation.append(Message(role="user", text="later"), to_inbox=True)
        runtime.redis.set(runtime.keys.teller_lock, "some-worker", ex=30)
        running = json.loads(stream.next_of("status", timeout=5)["data"])
        runtime.redis.delete(runtime.keys.teller_lock)
        idle = json.loads(stream.next_of("status", timeout=5)["data"])
        assert [first["teller"]["state"], running["teller"]["state"], idle["teller"]["state"]] \
            == ["idle", "running", "idle"]
        assert first["pendingQuestion"] is None and first["inbox"]["waiting"] == 0
        assert running["pendingQuestion"]["question"] == "Which color?"
        assert running["inbox"]["waiting"] == 1 == idle["inbox"]["waiting"]
        assert running["workers"] == first["workers"] and running["llm"] == first["llm"]
    finally:
        stream.close()


# --- bad Last-Event-ID, Redis failures, the cap on open streams ----------------------------------


def test_a_malformed_last_event_id_starts_at_the_end_instead_of_breaking(runtime, web_server):  # noqa: F811
    runtime.conversation.append(Message(role="user", text="old news"))
    server = web_server.start()
    bad_ids = ["1-", "-1", "1", "99999999999999999999999-0", "18446744073709551616-0",
               "\u00b2-1", "1-0-0", "abc"]
    for bad in bad_ids:
        stream = EventStream(server.port, last_event_id=bad)
        try:
            assert stream.response.status == 200  # the starting point is fixed by now
            runtime.conversation.append(Message(role="assistant", text=f"after {bad}"))
            event = stream.next_of("message", timeout=5)
            assert json.loads(event["data"])["text"] == f"after {bad}", bad
        finally:
            stream.close()


def test_the_largest_valid_last_event_id_is_accepted(runtime, web_server):  # noqa: F811
    server = web_server.start()
    biggest = f"{2**64 - 1}-{2**64 - 1}"
    stream = EventStream(server.port, last_event_id=biggest)
    try:
        stream.next_of("status")  # nothing is after it, but the stream stays open
        assert stream.response.status == 200
    finally:
        stream.close()


def test_events_with_redis_down_at_connect_are_a_503_not_a_500(runtime):
    from processes import free_port

    from mimikit.web import create_app
    from mimikit.web.events import MAX_EVENT_STREAMS

    settings = runtime.settings.model_copy(
        update={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    client = create_app(settings).test_client()
    for _ in range(MAX_EVENT_STREAMS + 2):  # each failure gives its slot back
        response = client.get("/api/events")
        assert response.status_code == 503, response.get_data(as_text=True)
        assert response.headers["Retry-After"] == "5"
        assert "cannot reach Redis" in response.get_json()["error"]


def test_a_redis_failure_mid_stream_ends_the_stream_cleanly(runtime, tmp_path):
    import socket

    from processes import RedisServer, free_port
    from web_helpers import WebServer

    redis = RedisServer(free_port(), tmp_path / "redis").start()
    server = WebServer(tmp_path / "web.log", env={"MIMIKIT_REDIS_URL": redis.url})
    try:
        server.start()
        with socket.create_connection(("127.0.0.1", server.port), timeout=15) as sock:
            sock.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            received = sock.recv(65536)
            while b"event: status" not in received:
                received += sock.recv(65536)
            redis.stop(kill=True)
            while not received.endswith(b"\r\n0\r\n\r\n"):  # the last chunk: a clean end
                more = sock.recv(65536)
                assert more, f"connection dropped without the last chunk: {received[-200:]!r}"
                received += more
        assert received.startswith(b"HTTP/1.1 200")
    finally:
        server.stop()
        redis.stop()


def test_open_streams_are_capped_and_the_api_stays_responsive(runtime, web_server):  # noqa: F811
    import urllib.error

    from processes import wait_for

    from mimikit.web.events import MAX_EVENT_STREAMS, SSE_THREADS

    assert MAX_EVENT_STREAMS < SSE_THREADS
    server = web_server.start()
    streams = [EventStream(server.port) for _ in range(MAX_EVENT_STREAMS)]
    try:
        assert all(s.response.status == 200 for s in streams)
        one_more = EventStream(server.port)
        assert one_more.response.status == 503
        assert one_more.response.getheader("Retry-After") == "5"
        assert "too many open event streams" in json.loads(one_more.response.read())["error"]
        one_more.close()
        assert server.get_json("/api/status")["ok"] is True  # threads are left for the API
        streams.pop().close()

        def reopened() -> EventStream | None:
            # Writing to every stream makes the server notice the closed one.
            runtime.conversation.append(Message(role="system", text="ping"))
            again = EventStream(server.port)
            if again.response.status == 200:
                return again
            again.close()
            return None

        streams.append(wait_for(reopened, timeout=10, interval=0.2,
                                message="the closed stream's slot to be free again"))
    except urllib.error.HTTPError as error:
        raise AssertionError(error.read()) from error
    finally:
        for stream in streams:
            stream.close()
