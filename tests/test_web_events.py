"""GET /api/events against a real ``mimikit web`` process, read as a stream with http.client."""

from __future__ import annotations

import json

from web_helpers import EventStream, web_server  # noqa: F401  (fixture)

from mimikit.models import Message, PendingQuestion, Task


def test_a_client_connected_before_a_message_is_written_receives_it(runtime, web_server):  # noqa: F811
    runtime.state.append_message(Message(role="user", text="already there"))
    server = web_server.start()
    stream = EventStream(server.port)
    try:
        assert stream.response.status == 200
        assert stream.response.getheader("Content-Type").startswith("text/event-stream")
        status = stream.next_of("status")  # sent on connect
        assert json.loads(status["data"])["teller"]["state"] == "idle"
        message = Message(role="assistant", text="Hello <b>live</b>")
        runtime.state.append_message(message)
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
    runtime.state.append_message(first)
    seen = stream.next_of("message")
    stream.close()
    missed = [Message(role="assistant", text=f"missed {n}") for n in range(3)]
    for message in missed:
        runtime.state.append_message(message)
    runtime.state.add_tasks([Task(prompt="a task while away")])
    runtime.state.set_question(PendingQuestion(question="still there?"))

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
    runtime.state.append_message(Message(role="user", text="old news"))
    server = web_server.start()
    stream = EventStream(server.port)
    try:
        stream.next_of("status")
        runtime.state.append_message(Message(role="assistant", text="fresh"))
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
