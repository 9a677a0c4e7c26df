"""What a failed LLM request means: worth another attempt (``Retryable``), or a refusal."""

from __future__ import annotations

import openai

from mimikit.exceptions import LLMUnavailable
from mimikit.llm.responses import detail, server_delay


class Retryable(Exception):
    """A transient failure: worth another attempt after ``delay`` seconds (None: backoff).
    ``answered``: the server was there and failed on this request (HTTP 500, an empty or
    unreadable body), not away (unreachable, slow, 429, 502-504)."""

    def __init__(self, reason: str, delay: float | None = None, answered: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.delay = delay
        self.answered = answered


def status_failure(url: str, error: openai.APIStatusError, model: str) -> Exception:
    """What an HTTP error answer means: worth retrying (429, 5xx) or not (and why)."""
    status = error.status_code
    detail_text = detail(error)
    if status == 429 or status >= 500:
        return Retryable(
            f"the LLM at {url} answered HTTP {status}: {detail_text}",
            server_delay(error.response.headers), answered=status in (500, 501),
        )
    if status in (401, 403):
        return LLMUnavailable(
            f"the LLM at {url} rejected the API key (HTTP {status}: {detail_text}); "
            "set MIMIKIT_LLM_API_KEY"
        )
    if status == 404:
        return LLMUnavailable(
            f"the LLM at {url} does not know model {model!r} or the chat endpoint "
            f"(HTTP 404: {detail_text}); check MIMIKIT_MODEL and MIMIKIT_LLM_BASE_URL"
        )
    return LLMUnavailable(f"the LLM at {url} refused the request (HTTP {status}: {detail_text})")
