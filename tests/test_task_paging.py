"""Finished tasks page newest first (``/api/tasks?scope=finished&limit=&before=`` and
``mimikit tasks``); ``scope=all`` shows the active ones and a bounded page of finished ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, timedelta
from urllib.parse import quote

import pytest
from processes import ROOT

from mimikit.models import Result, Task, utcnow
from mimikit.tasks.listing import MAX_PAGE, RECENT_FINISHED


@pytest.fixture
def client(runtime):
    from mimikit.web import create_app

    return create_app(runtime.settings).test_client()


def finished(runtime, count: int, role: str = "worker", minutes_apart: float = 1.0,
             start_minutes_ago: float = 0) -> list[Task]:
    """``count`` tasks finished one after the other; returned oldest first."""
    tasks = runtime.tasks.add([Task(prompt=f"{role} job {n}", role=role)
                                     for n in range(count)])
    done = []
    for n, task in enumerate(tasks):
        when = utcnow() - timedelta(minutes=start_minutes_ago + (count - n) * minutes_apart)
        done.append(runtime.tasks.complete(
            Result(id=task.id, status="done", result={"text": "ok"}, completedAt=when),
            ))
    return done


def page(client, query: str) -> dict:
    response = client.get(f"/api/tasks?{query}")
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_finished_tasks_page_newest_first_to_the_end(client, runtime):
    tasks = finished(runtime, 7)
    seen, query = [], "scope=finished&limit=3"
    while True:
        body = page(client, query)
        seen += [t["id"] for t in body["tasks"]]
        if not body["nextBefore"]:
            break
        query = f"scope=finished&limit=3&before={body['nextBefore']}"
    assert seen == [t.id for t in reversed(tasks)]
    assert len(body["tasks"]) == 1  # 3 + 3 + 1, and the last page says there is no more


def test_a_page_can_start_before_a_time(client, runtime):
    tasks = finished(runtime, 5, minutes_apart=10)
    middle = tasks[2].completedAt
    body = page(client, f"scope=finished&before={quote(middle.isoformat())}")
    assert [t["id"] for t in body["tasks"]] == [tasks[1].id, tasks[0].id]
    assert body["nextBefore"] is None
    assert runtime.settings.timezone == "UTC"  # a naive time is read in MIMIKIT_TIMEZONE
    naive = middle.astimezone(UTC).replace(tzinfo=None).isoformat()
    assert page(client, f"scope=finished&before={naive}")["tasks"] == body["tasks"]


def test_a_role_filters_finished_tasks_across_pages(client, runtime):
    workers = finished(runtime, 4, role="worker", start_minutes_ago=0)
    planners = finished(runtime, 4, role="planner", start_minutes_ago=2, minutes_apart=2)
    body = page(client, "scope=finished&role=planner&limit=3")
    assert [t["role"] for t in body["tasks"]] == ["planner"] * 3
    rest = page(client, f"scope=finished&role=planner&limit=3&before={body['nextBefore']}")
    got = [t["id"] for t in body["tasks"] + rest["tasks"]]
    assert sorted(got) == sorted(t.id for t in planners) and rest["nextBefore"] is None
    assert not {t.id for t in workers} & set(got)


def test_scope_all_is_the_active_tasks_and_a_bounded_page_of_finished_ones(client, runtime):
    old = finished(runtime, RECENT_FINISHED + 5)
    queued, trigger = runtime.tasks.add([
        Task(prompt="waiting"),
        Task(type="conditional", prompt="when it is done",
             condition={"type": "task_done", "params": {"taskId": "task-x"}})])
    body = page(client, "")
    ids = [t["id"] for t in body["tasks"]]
    assert set(ids[:2]) == {queued.id, trigger.id}  # the active ones first
    finished_ids = [i for i in ids if i not in (queued.id, trigger.id)]
    assert finished_ids == [t.id for t in reversed(old)][:RECENT_FINISHED]
    assert body["nextBefore"] == finished_ids[-1]
    assert len(page(client, "limit=5")["tasks"]) == 2 + 5


def test_an_expired_task_left_in_the_index_is_skipped(client, runtime):
    tasks = finished(runtime, 3)
    runtime.redis.delete(runtime.keys.task(tasks[1].id))  # its time to live ran out
    body = page(client, "scope=finished")
    assert [t["id"] for t in body["tasks"]] == [tasks[2].id, tasks[0].id]


@pytest.mark.parametrize(("query", "words"), [
    ("scope=finished&limit=0", ["'limit'", f"between 1 and {MAX_PAGE}"]),
    (f"scope=finished&limit={MAX_PAGE + 1}", ["'limit'", f"between 1 and {MAX_PAGE}"]),
    ("scope=finished&limit=ten", ["'limit'", "integer"]),
    ("scope=finished&before=last%20tuesday", ["'before'", "ISO 8601", "nextBefore"]),
    ("scope=finished&before=task-unknown", ["'before'", "task-unknown", "nextBefore"]),
    ("scope=finished&before=2024-13-01T00:00:00", ["'before'", "ISO 8601"]),
    ("scope=all&before=2024-01-01T00:00:00Z", ["'before'", "scope=finished"]),
    ("scope=done", ["'scope'", "finished"]),
])
def test_a_bad_page_query_is_a_400_naming_the_parameter(client, runtime, query, words):
    finished(runtime, 2)
    response = client.get(f"/api/tasks?{query}")
    assert response.status_code == 400 and response.mimetype == "application/json"
    error = response.get_json()["error"]
    for word in words:
        assert word in error, error
    assert runtime.redis.zcard(runtime.keys.finished) == 2  # nothing changed


def _mimikit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mimikit", *args], capture_output=True,
                          text=True, timeout=30, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_mimikit_tasks_pages_finished_tasks_like_the_api(runtime):
    tasks = finished(runtime, 3)
    first = _mimikit("tasks", "--scope", "finished", "--limit", "2")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert [line.split()[0] for line in lines[:2]] == [tasks[2].id, tasks[1].id]
    assert lines[-1] == f"older: mimikit tasks --scope finished --limit 2 --before {tasks[1].id}"
    rest = _mimikit("tasks", "--scope", "finished", "--limit", "2", "--before", tasks[1].id,
                    "--json")
    assert rest.returncode == 0, rest.stderr
    assert [t["id"] for t in json.loads(rest.stdout)] == [tasks[0].id]


def test_mimikit_tasks_with_a_bad_page_says_what_to_fix(runtime):
    finished(runtime, 1)
    wrong_scope = _mimikit("tasks", "--before", "2024-01-01")
    assert wrong_scope.returncode == 1 and "--scope finished" in wrong_scope.stderr
    unknown = _mimikit("tasks", "--scope", "finished", "--before", "task-gone")
    assert unknown.returncode == 1 and "task-gone" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1
    too_many = _mimikit("tasks", "--scope", "finished", "--limit", "100000")
    assert too_many.returncode == 1 and "--limit" in too_many.stderr
