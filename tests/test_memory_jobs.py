"""Archival and flush wired to the state store: summary Worker tasks requested exactly once."""

from __future__ import annotations

from datetime import timedelta

from mimikit.lifecycle.event import Completion
from mimikit.lifecycle.memory_sink import summary_target
from mimikit.lifecycle.pipeline import finish
from mimikit.models import Message, Result, utcnow
from mimikit.supervisor import archival as memory_jobs


def _seed_history(runtime, days: int, per_day: int = 2) -> None:
    now = utcnow()
    for day in range(days):
        for n in range(per_day):
            at = now - timedelta(days=day, minutes=n + 1)
            runtime.conversation.append(Message(role="user", text=f"day {day} note {n}",
                                                 createdAt=at))


def _summary_tasks(runtime):
    return [t for t in runtime.tasks.with_status("queued")
            if (t.title or "").startswith("Memory summary")]


def test_archival_of_200_days_requests_each_summary_once_even_when_run_twice(runtime):
    _seed_history(runtime, 200)
    first = memory_jobs.maybe_archive(runtime, force=True)
    tasks = _summary_tasks(runtime)
    daily = sorted(t.title for t in tasks if "daily" in t.title)
    monthly = sorted(t.title for t in tasks if "monthly" in t.title)
    assert len(daily) == 85  # days 6..90
    assert 3 <= len(monthly) <= 5  # the months holding days 91..199
    assert first["requested"] == len(tasks)
    copied = sorted((runtime.settings.state_dir / "memory").glob("*-chat.md"))
    assert len(copied) == 6  # today and the 5 days before

    second = memory_jobs.maybe_archive(runtime, force=True)
    assert second["requested"] == 0
    assert len(_summary_tasks(runtime)) == len(tasks)


def test_a_summary_workers_result_is_written_to_memory_summary(runtime):
    _seed_history(runtime, 10)
    memory_jobs.maybe_archive(runtime, force=True)
    task = next(t for t in _summary_tasks(runtime) if "daily" in t.title)
    result = Result(id=task.id, status="done", resultType="summary",
                    result={"summary": "Talked about deploys.", "keyPoints": ["staging first"]})
    runtime.tasks.start(task.id, "h:1:x", None, lambda _h: True)
    finish(runtime, Completion(task=task, result=result))  # its memory sink writes it
    kind, period = summary_target(runtime, task.id)
    path = runtime.settings.state_dir / "memory" / "summary" / f"{period}.md"
    assert kind == "daily" and "staging first" in path.read_text()


def test_archival_runs_only_past_its_thresholds(runtime):
    _seed_history(runtime, 1, per_day=3)
    assert memory_jobs.maybe_archive(runtime) != {}  # never ran before
    assert memory_jobs.maybe_archive(runtime) == {}  # 3 messages, just ran
    _seed_history(runtime, 1, per_day=120)
    assert memory_jobs.maybe_archive(runtime) != {}  # over 100 messages


def test_flush_happens_only_with_800_messages_and_an_hour_since_the_last(runtime):
    now = utcnow()
    for n in range(799):
        runtime.conversation.append(Message(role="user", text=f"m{n}",
                                             createdAt=now - timedelta(seconds=900 - n)))
    assert memory_jobs.maybe_archive(runtime, force=True)["flushed"] is None
    runtime.conversation.append(Message(role="user", text="m800"))
    flushed = memory_jobs.maybe_archive(runtime, force=True)["flushed"]
    assert flushed and "m800" in open(flushed).read()
    runtime.conversation.append(Message(role="user", text="m801"))
    assert memory_jobs.maybe_archive(runtime, force=True)["flushed"] is None  # < 1 h since


def test_archival_counts_the_messages_since_its_last_run_not_the_whole_history(runtime):
    _seed_history(runtime, 1, per_day=150)
    assert memory_jobs.maybe_archive(runtime) != {}
    assert memory_jobs.maybe_archive(runtime) == {}  # 150 in all, none new
    _seed_history(runtime, 1, per_day=50)
    assert memory_jobs.maybe_archive(runtime) == {}  # 50 new: under the threshold


def test_a_failed_summary_is_requested_again_after_its_claim_expires(runtime):
    _seed_history(runtime, 10)
    memory_jobs.maybe_archive(runtime, force=True)
    before = len(_summary_tasks(runtime))
    for key in runtime.redis.scan_iter(match=runtime.keys.claim("archive:daily:*")):
        assert 0 < runtime.redis.ttl(key)
        runtime.redis.delete(key)  # as if the claim had expired
    memory_jobs.maybe_archive(runtime, force=True)
    assert len(_summary_tasks(runtime)) == 2 * before
