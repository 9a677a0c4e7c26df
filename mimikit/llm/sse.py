"""The events of a streamed answer, read from its HTTP body to the end.

The SDK's stream stops reading at ``data: [DONE]`` and closes the response with the end of the
body unread, which closes its connection: every streamed request then opened a new one (a TCP
connect to a local server, a TLS handshake to a remote one). Read to its end, the connection
goes back to the pool for the next request.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from typing import Any

import openai

DONE = "[DONE]"


def events(response: Any) -> Generator[Any, None, None]:
    """The decoded JSON of each ``data:`` event of ``response`` (an ``httpx`` response in the
    server-sent events format), until its body ends; the response is closed after, or when
    the caller stops reading.

    Raises:
        openai.APIError: An event that reports an error (the server failed mid-answer).
        json.JSONDecodeError: An event that is not JSON.
    """
    try:
        data: list[str] = []
        for line in response.iter_lines():
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:  # a blank line ends an event
                yield from _decoded("\n".join(data), response)
                data = []
        if data:
            yield from _decoded("\n".join(data), response)
    finally:
        response.close()


def _decoded(data: str, response: Any) -> Iterator[Any]:
    if data.startswith(DONE):
        return
    value = json.loads(data)
    if isinstance(value, dict) and value.get("error"):
        error = value["error"]
        message = error.get("message") if isinstance(error, dict) else None
        raise openai.APIError(message if isinstance(message, str) and message else
                              "the server failed while streaming its answer",
                              request=response.request, body=error)
    yield value
