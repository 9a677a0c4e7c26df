"""The raw baseline: a bare Celery app, default settings, one no-op task, on the same Redis."""

import os

from celery import Celery

url = os.environ["MIMIKIT_BENCH_RAW_URL"]
app = Celery("raw", broker=url, backend=url)
app.conf.task_default_queue = "raw"


@app.task(name="raw.noop")
def noop() -> None:
    """Does nothing: the raw Celery round trip."""
