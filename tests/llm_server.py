"""A scripted OpenAI-compatible LLM server on loopback: the one fake of the test suite.

Usage::

    server = ScriptedLLM().start()
    server.script("gpt-test", tool_call("reply", text="hi"), text("done"))
    client = LLMClient(server.url, None)          # http://127.0.0.1:PORT/v1
    ...
    server.requests[1]["messages"][-1]            # what the model was sent
    server.shutdown()

A response is a plain dict built by the helpers below (``text``, ``tool_call``, ``tool_calls``,
``raw_arguments``, ``error``, ``delay``, ``steps``, ``with_usage``, ``without_usage``,
``streamed``, ``cut_off``, ``object_arguments``), or a callable
``fn(request_body) -> response``. A request with ``stream: true`` is answered as server-sent
chunks (unless ``server.streams`` is False: then whole, as some servers do).
Fault modes: ``error(429, headers={"Retry-After": "1"})`` or ``{"retry-after-ms": "300"}``,
``malformed(body)`` (a 200 whose body is not a chat completion), ``hang(seconds)`` (no answer,
then the connection is closed) and ``disconnect()`` (closed at once). ``server.arrivals`` has the
``time.monotonic()`` of each request, for measuring the client's backoff.
When a model's script is exhausted the server answers its default (``server.default``), else
HTTP 500 "script exhausted for model X", so a test that under-scripts fails loudly.

Run as a process: ``python tests/llm_server.py --port 8700 [--script script.json]`` where the
JSON file maps a model name to a list of responses in their dict form (e.g.
``{"m": [{"content": "hello"}]}``); a key ``"*"`` gives the default for every model, and
``"defaults"`` one per model (``{"defaults": {"m": {"delay": 1, "then": {...}}}}``: a model with
latency).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Response = dict[str, Any] | Callable[[dict[str, Any]], Any]


# --- response helpers ---------------------------------------------------------------------------


def text(content: str) -> dict[str, Any]:
    """A plain assistant answer without tool calls."""
    return {"content": content, "tool_calls": []}


def turn(**fields: Any) -> dict[str, Any]:
    """A scripted answer that is one JSON object, as a server holding it to a schema sends."""
    return text(json.dumps(fields, ensure_ascii=False))


def raw_arguments(name: str, arguments: str, content: str | None = None) -> dict[str, Any]:
    """One tool call whose arguments are sent verbatim (e.g. broken JSON)."""
    return {"content": content, "tool_calls": [{"name": name, "arguments": arguments}]}


def tool_call(name: str, **args: Any) -> dict[str, Any]:
    """One tool call with JSON-encoded keyword arguments."""
    return raw_arguments(name, json.dumps(args, ensure_ascii=False))


def tool_calls(calls: list[Any], content: str | None = None) -> dict[str, Any]:
    """Several tool calls in one message: items are ``(name, args_dict)`` or helper results."""
    merged: list[dict[str, Any]] = []
    for item in calls:
        if isinstance(item, dict):
            merged.extend(item["tool_calls"])
        else:
            name, args = item
            merged.append({"name": name, "arguments": json.dumps(args, ensure_ascii=False)})
    return {"content": content, "tool_calls": merged}


def error(status: int, body: Any = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """An HTTP error answer (e.g. 429 with ``{"Retry-After": "0"}``, 500, 401)."""
    if body is None:
        body = {"error": {"message": f"scripted HTTP {status}", "type": "scripted_error",
                          "code": status}}
    return {"status": status, "body": body, "headers": headers or {}}


def with_usage(response: dict[str, Any], prompt_tokens: int, completion_tokens: int,
               cached_tokens: int | None = None) -> dict:
    """``response`` reporting exactly these token counts instead of the estimate (and, given
    ``cached_tokens``, the prompt tokens served from the cache, as OpenAI reports them)."""
    usage: dict[str, Any] = {"prompt_tokens": prompt_tokens,
                             "completion_tokens": completion_tokens,
                             "total_tokens": prompt_tokens + completion_tokens}
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {**response, "usage": usage}


def streamed(response: dict[str, Any], pause: float, chunk_chars: int = 8) -> dict[str, Any]:
    """``response`` streamed in pieces of ``chunk_chars`` characters, ``pause`` seconds apart."""
    return {**response, "stream_delay": pause, "chunk_chars": chunk_chars}


def cut_off(response: dict[str, Any]) -> dict[str, Any]:
    """``response`` ending with ``finish_reason`` ``length`` (it reached ``max_tokens``)."""
    return {**response, "finish": "length"}


def object_arguments(response: dict[str, Any]) -> dict[str, Any]:
    """``response`` with its calls' arguments sent as JSON objects, not strings (as TGI and
    some llama-server builds do)."""
    return {**response, "object_arguments": True}


def name_in_every_chunk(response: dict[str, Any]) -> dict[str, Any]:
    """``response`` streamed with each call's name in every delta of it, not only the first
    (as llama-cpp-python's server does)."""
    return {**response, "name_in_every_chunk": True}


def without_usage(response: dict[str, Any]) -> dict[str, Any]:
    """``response`` sent without token counts (as llama-cpp-python's streams)."""
    return {**response, "usage": False}


def delay(seconds: float, response: Response) -> dict[str, Any]:
    """Sleep ``seconds`` before answering ``response``."""
    return {"delay": seconds, "then": response}


def steps(*responses: Response) -> dict[str, Any]:
    """The ``n``-th response for a request whose transcript has ``n - 1`` answers of the model
    already (the last one for every later request): one script for every run of a model, as
    JSON too, e.g. ``steps(tool_call("list_files"), tool_call("submit_result", ...))``."""
    return {"steps": list(responses)}


def malformed(body: str = '{"id": "chatcmpl-1", "choices": [{"index": 0, "mess',
              content_type: str = "application/json") -> dict[str, Any]:
    """A 200 answer whose body is sent verbatim (default: JSON cut off mid-way)."""
    return {"status": 200, "raw": body, "content_type": content_type}


def disconnect() -> dict[str, Any]:
    """Close the connection without answering."""
    return {"disconnect": True}


def hang(seconds: float) -> dict[str, Any]:
    """Answer nothing for ``seconds`` (past the client's timeout), then close the connection."""
    return delay(seconds, disconnect())


# --- the server ---------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    # Many clients connect at once (a hundred runs in flight): the default backlog of 5 would
    # drop connections, which the clients then see as errors or second-long delays.
    request_queue_size = 1024

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a stopped worker's kept-alive connection) is not an error."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ScriptedLLM:
    """A real HTTP server on 127.0.0.1 answering chat completions from per-model scripts."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._lock = threading.Lock()
        self._scripts: dict[str, deque[Response]] = {}
        self._defaults: dict[str, Response] = {}
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._arrivals: list[float] = []
        self._peers: list[int] = []
        self._httpd = _Server((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._httpd.scripted = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None
        self.streams = True  # False: answer a streamed request whole, as some servers do
        # False: GET /v1/models answers 404, like servers that list no models
        self.lists_models = True
        self.owner = "scripted"  # the models' owned_by: "llamacpp" lists them as llama.cpp does
        # GET /slots says its one slot is working until this time.monotonic() (llama.cpp's)
        self.busy_until = 0.0

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The base URL to give an OpenAI client: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A copy of every chat request body received, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers of each request (lower-case names), parallel to ``requests``."""
        with self._lock:
            return list(self._headers)

    @property
    def arrivals(self) -> list[float]:
        """The ``time.monotonic()`` at which each request arrived, parallel to ``requests``."""
        with self._lock:
            return list(self._arrivals)

    @property
    def peers(self) -> list[int]:
        """The client port each request came from, parallel to ``requests``: one port for
        several requests is one connection kept open for them."""
        with self._lock:
            return list(self._peers)

    def arrivals_for(self, model: str) -> list[float]:
        """When each request for one model arrived (``time.monotonic()``)."""
        with self._lock:
            return [at for body, at in zip(self._requests, self._arrivals, strict=True)
                    if body.get("model") == model]

    def requests_for(self, model: str) -> list[dict[str, Any]]:
        """The chat request bodies sent for one model."""
        return [body for body in self.requests if body.get("model") == model]

    def start(self) -> ScriptedLLM:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name=f"scripted-llm-{self.port}", daemon=True,
        )
        self._thread.start()
        return self

    def script(self, model: str, *responses: Response) -> ScriptedLLM:
        """Queue responses for ``model``; each request takes the next one."""
        with self._lock:
            self._scripts.setdefault(model, deque()).extend(responses)
        return self

    def default(self, model: str, response: Response | None) -> ScriptedLLM:
        """The answer once ``model``'s script is empty (``"*"``: every model; None: remove)."""
        with self._lock:
            if response is None:
                self._defaults.pop(model, None)
            else:
                self._defaults[model] = response
        return self

    def pending(self, model: str) -> int:
        """How many scripted responses ``model`` has not consumed yet."""
        with self._lock:
            return len(self._scripts.get(model, ()))

    def reset(self) -> None:
        """Forget scripts, defaults and recorded requests."""
        with self._lock:
            self._scripts.clear()
            self._defaults.clear()
            self._requests.clear()
            self._headers.clear()
            self._arrivals.clear()
            self._peers.clear()

    def shutdown(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _next(self, body: dict[str, Any], headers: dict[str, str], peer: int = 0) -> Response:
        model = str(body.get("model"))
        with self._lock:
            self._peers.append(peer)
            self._requests.append(body)
            self._headers.append(headers)
            self._arrivals.append(time.monotonic())
            queue = self._scripts.get(model)
            if queue:
                return queue.popleft()
            found = self._defaults.get(model, self._defaults.get("*"))
        if found is not None:
            return found
        return error(500, {"error": {"message": f"script exhausted for model {model}",
                                     "type": "script_exhausted"}})


def resolve(response: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Apply delays and callables until a concrete response dict remains."""
    while True:
        if callable(response):
            response = response(body)
        elif isinstance(response, str):
            response = text(response)
        elif "then" in response:
            time.sleep(response["delay"])
            response = response["then"]
        elif "steps" in response:
            answered = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
            response = response["steps"][min(answered, len(response["steps"]) - 1)]
        else:
            return response


def completion(model: str, response: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI ``chat.completion`` JSON for a scripted answer."""
    calls = [
        {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
         "function": {"name": call["name"], "arguments": _arguments_text(call)}}
        for call in response.get("tool_calls") or []
    ]
    if response.get("object_arguments"):
        for call in calls:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"] or "{}")
    message: dict[str, Any] = {"role": "assistant", "content": response.get("content"),
                               "refusal": None}
    if calls:
        message["tool_calls"] = calls
    # Roughly four characters a token, as real tokenizers average on English text.
    prompt_tokens = max(len(json.dumps(body.get("messages", []))) // 4, 1)
    produced = (response.get("content") or "") + "".join(
        _arguments_text(c["function"]) for c in calls
    )
    completion_tokens = max(len(produced) // 4, 1) + 3 * len(calls)
    answer = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:29]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_scripted",
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": response.get("finish")
                     or ("tool_calls" if calls else "stop")}],
        "usage": response.get("usage") or {
            "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens},
    }
    if response.get("usage") is False:
        answer["usage"] = None
    return answer


def stream_chunks(answer: dict[str, Any], size: int, name_every_time: bool = False
                  ) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of an answer: content and arguments in pieces
    (``name_every_time``: each piece of a call's arguments with the call's name)."""
    message = answer["choices"][0]["message"]
    base = {"id": answer["id"], "object": "chat.completion.chunk", "created": answer["created"],
            "model": answer["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    content = message.get("content") or ""
    chunks += [chunk({"content": content[i:i + size]}) for i in range(0, len(content), size)]
    for index, call in enumerate(message.get("tool_calls") or []):
        head = {"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""}}
        chunks.append(chunk({"tool_calls": [head]}))
        arguments = call["function"]["arguments"]
        if not isinstance(arguments, str):  # an object: in one piece
            chunks.append(chunk({"tool_calls": [{"index": index,
                                                 "function": {"arguments": arguments}}]}))
            continue
        named = {"name": call["function"]["name"]} if name_every_time else {}
        chunks += [chunk({"tool_calls": [{"index": index, "function": {
                       **named, "arguments": arguments[i:i + size]}}]})
                   for i in range(0, len(arguments), size)]
    chunks.append(chunk({}, answer["choices"][0]["finish_reason"]))
    return chunks


def _arguments_text(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", "{}")
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's algorithm and
    # the client's delayed ACK add ~40 ms to every answer.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # keep test output clean

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        scripted: ScriptedLLM = self.server.scripted  # type: ignore[attr-defined]
        if self.path.rstrip("/") in ("/v1/models", "/models") and scripted.lists_models:
            with scripted._lock:
                names = sorted(set(scripted._scripts) | set(scripted._defaults) - {"*"})
            data = [{"id": name, "object": "model", "created": 0, "owned_by": scripted.owner}
                    for name in names]
            return self._send(200, {"object": "list", "data": data})
        if self.path.rstrip("/") == "/slots" and scripted.owner == "llamacpp":
            busy = time.monotonic() < scripted.busy_until
            return self._send(200, [{"id": 0, "is_processing": busy}])
        return self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            return self._send(400, {"error": {"message": f"request body is not JSON: {exc}"}})
        scripted: ScriptedLLM = self.server.scripted  # type: ignore[attr-defined]
        headers = {key.lower(): value for key, value in self.headers.items()}
        response = resolve(scripted._next(body, headers, self.client_address[1]), body)
        if response.get("disconnect"):
            self.close_connection = True
            return None
        if "raw" in response:
            return self._send_raw(response["raw"].encode(), response["content_type"])
        status = response.get("status", 200)
        if status != 200:
            payload = response.get("body") or error(status)["body"]
            return self._send(status, payload, response.get("headers"))
        answer = completion(str(body.get("model")), response, body)
        if body.get("stream") and scripted.streams:
            return self._send_stream(answer, body, response)
        return self._send(200, answer)

    def _send_stream(self, answer: dict[str, Any], body: dict[str, Any],
                     response: dict[str, Any]) -> None:
        """The answer as server-sent chunks, ``stream_delay`` seconds apart."""
        pause = float(response.get("stream_delay", 0))
        events = [f"data: {json.dumps(c)}\n\n" for c in
                  stream_chunks(answer, int(response.get("chunk_chars", 8)),
                                bool(response.get("name_in_every_chunk")))]
        if (body.get("stream_options") or {}).get("include_usage") and answer.get("usage"):
            events.append(f"data: {json.dumps({**answer, 'choices': [], 'object': 'chat.completion.chunk'})}\n\n")
        events.append("data: [DONE]\n\n")
        try:  # chunked, as real servers stream: the connection stays open for the next request
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for index, event in enumerate(events):
                data = event.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                if pause and index < len(events) - 2:
                    time.sleep(pause)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(json.dumps(payload).encode(), "application/json", status, headers)

    def _send_raw(self, data: bytes, content_type: str, status: int = 200,
                  headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (e.g. its timeout in a test): nothing to answer


def main(argv: list[str] | None = None) -> None:
    """Serve scripted answers from a JSON file until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="JSON file: {model: [response, ...], '*': response, "
                                          "'defaults': {model: response}}")
    options = parser.parse_args(argv)
    server = ScriptedLLM(port=options.port)
    if options.script:
        with open(options.script, encoding="utf-8") as handle:
            spec = json.load(handle)
        for model, responses in spec.items():
            if model == "*":
                server.default("*", responses)
            elif model == "defaults":
                for name, response in responses.items():
                    server.default(name, response)
            else:
                server.script(model, *responses)
    server.start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
