"""The raw baselines: a bare Celery app, default settings, on the same Redis.

- ``raw.noop`` does nothing: the raw Celery round trip;
- ``raw.llm_call`` makes one chat completion with the OpenAI SDK against the same scripted LLM
  (``MIMIKIT_BENCH_LLM_URL``): the least any agent runtime on Celery pays for one LLM step;
- ``raw.llm_calls`` makes several, one after the other: an agent run's LLM time, nothing else.
"""

import os
from functools import cache

import openai
from celery import Celery

url = os.environ["MIMIKIT_BENCH_RAW_URL"]
app = Celery("raw", broker=url, backend=url)
app.conf.task_default_queue = "raw"


@app.task(name="raw.noop")
def noop() -> None:
    """Does nothing."""


@cache
def _client() -> openai.OpenAI:
    return openai.OpenAI(base_url=os.environ["MIMIKIT_BENCH_LLM_URL"], api_key="bench",
                         max_retries=0)


@app.task(name="raw.llm_call")
def llm_call(prompt: str) -> str | None:
    """One chat completion (the scripted Worker model), its answer's content returned."""
    answer = _client().chat.completions.create(
        model="worker", messages=[{"role": "user", "content": prompt}])
    return answer.choices[0].message.content


@app.task(name="raw.llm_calls")
def llm_calls(count: int, prompt: str) -> int:
    """``count`` chat completions one after the other (the scripted Worker model); how many."""
    for _ in range(count):
        _client().chat.completions.create(model="worker",
                                          messages=[{"role": "user", "content": prompt}])
    return count
