"""Archival (copy / daily / monthly summary requests, each once) and flush thresholds."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest

from mimikit.memory import archive, flush, should_archive, summary_path
from mimikit.models import Message

NOW = datetime(2026, 7, 20, 12, 0, tzinfo=UTC)


def day_history(days: int = 200, per_day: int = 2) -> list[Message]:
    """``per_day`` messages on each of the last ``days`` days (today included)."""
    history = []
    for age in range(days):
        day = NOW - timedelta(days=age)
        for n in range(per_day):
            at = day.replace(hour=9 + n, minute=0)
            history.append(Message(role="user" if n % 2 == 0 else "assistant",
                                   text=f"note {age}-{n}", createdAt=at))
    return history


class Recorder:
    """The callbacks archive() takes: a set-backed claim and a list of requests."""

    def __init__(self) -> None:
        self.claimed: set[str] = set()
        self.requests: list[tuple[str, str, int]] = []

    def claim(self, key: str) -> bool:
        if key in self.claimed:
            return False
        self.claimed.add(key)
        return True

    def request(self, kind: str, period: str, messages: list[Message]) -> None:
        self.requests.append((kind, period, len(messages)))


def expected_periods() -> tuple[set[str], set[str], set[date]]:
    today = NOW.date()
    days = [today - timedelta(days=age) for age in range(200)]
    copied = {d for d in days if (today - d).days <= 5}
    daily = {f"{d:%Y-%m-%d}" for d in days if 5 < (today - d).days <= 90}
    monthly = {f"{d:%Y-%m}" for d in days if (today - d).days > 90}
    return daily, monthly, copied


def test_archive_of_200_days_copies_recent_days_and_requests_each_summary_once(tmp_path):
    history, recorder = day_history(), Recorder()
    first = archive(history, tmp_path, NOW, recorder.claim, recorder.request)
    second = archive(history, tmp_path, NOW, recorder.claim, recorder.request)

    daily, monthly, copied = expected_periods()
    assert len(daily) == 85 and len(monthly) == 4
    kinds = Counter((kind, period) for kind, period, _ in recorder.requests)
    assert set(kinds) == {("daily", p) for p in daily} | {("monthly", p) for p in monthly}
    assert set(kinds.values()) == {1}
    assert all(n == 2 for kind, _, n in recorder.requests if kind == "daily")
    assert sorted(first.copied) == sorted(tmp_path / f"memory/{d:%Y-%m-%d}-chat.md" for d in copied)
    assert second.copied == [] and second.requested == []
    assert len(second.skipped) == len(daily) + len(monthly)


def test_copied_day_holds_the_messages_as_is_and_is_not_rewritten(tmp_path):
    history = day_history(days=3)
    archive(history, tmp_path, NOW, Recorder().claim, Recorder().request)
    path = tmp_path / f"memory/{NOW:%Y-%m-%d}-chat.md"
    text = path.read_text(encoding="utf-8")
    assert "note 0-0" in text and "note 0-1" in text and "user" in text and "assistant" in text
    before = path.stat().st_mtime_ns
    again = archive(history, tmp_path, NOW, Recorder().claim, Recorder().request)
    assert again.copied == [] and path.stat().st_mtime_ns == before
    later = [*history, Message(role="user", text="one more today", createdAt=NOW)]
    assert archive(later, tmp_path, NOW, Recorder().claim, Recorder().request).copied == [path]
    assert "one more today" in path.read_text(encoding="utf-8")


def test_existing_summary_file_prevents_a_new_request_even_with_a_fresh_claim(tmp_path):
    history = [Message(role="user", text="old", createdAt=NOW - timedelta(days=30))]
    period = f"{NOW - timedelta(days=30):%Y-%m-%d}"
    path = summary_path(tmp_path, "daily", period)
    path.parent.mkdir(parents=True)
    path.write_text("summary", encoding="utf-8")
    recorder = Recorder()
    report = archive(history, tmp_path, NOW, recorder.claim, recorder.request)
    assert recorder.requests == [] and report.skipped == [("daily", period)]


def test_a_period_claimed_elsewhere_is_not_requested_again(tmp_path):
    history = [Message(role="user", text="old", createdAt=NOW - timedelta(days=200))]
    recorder = Recorder()
    recorder.claimed.add(f"archive:monthly:{NOW - timedelta(days=200):%Y-%m}")
    archive(history, tmp_path, NOW, recorder.claim, recorder.request)
    assert recorder.requests == []


def test_summary_path_lays_out_daily_and_monthly_files(tmp_path):
    assert summary_path(tmp_path, "daily", "2026-01-28") == tmp_path / "memory/summary/2026-01-28.md"
    assert summary_path(tmp_path, "monthly", "2026-01") == tmp_path / "memory/summary/2026-01.md"
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        summary_path(tmp_path, "daily", "2026-01")
    with pytest.raises(ValueError, match="'weekly'"):
        summary_path(tmp_path, "weekly", "2026-01")


@pytest.mark.parametrize(("length", "hours_since", "expected"), [
    (101, 0.1, True), (100, 5.9, False), (100, 6, True), (10, None, True), (0, 1, False),
])
def test_should_archive_after_100_messages_or_6_hours(length, hours_since, expected):
    last = None if hours_since is None else NOW - timedelta(hours=hours_since)
    assert should_archive(length, last, NOW) is expected


def long_history(count: int, start: datetime = NOW - timedelta(days=1)) -> list[Message]:
    return [Message(role="user", text=f"line {i}", createdAt=start + timedelta(seconds=i))
            for i in range(count)]


def test_flush_needs_800_messages_and_an_hour_since_the_last(tmp_path):
    assert flush(long_history(799), tmp_path, NOW, None) is None
    assert flush(long_history(800), tmp_path, NOW, NOW - timedelta(minutes=59)) is None
    assert not (tmp_path / "memory").exists()
    path = flush(long_history(800), tmp_path, NOW, NOW - timedelta(hours=1))
    assert path == tmp_path / f"memory/{NOW:%Y-%m-%d}.md"
    text = path.read_text(encoding="utf-8")
    assert text.count("line ") == 800 and "line 799" in text


def test_flush_never_appends_a_message_twice(tmp_path):
    history = long_history(800)
    path = flush(history, tmp_path, NOW, None)
    assert flush(history, tmp_path, NOW + timedelta(hours=2), NOW) is None
    more = history + long_history(5, start=NOW)
    assert flush(more, tmp_path, NOW + timedelta(hours=4), NOW) == path
    text = path.read_text(encoding="utf-8")
    assert text.count("line ") == 805 and text.count("line 0\n") == 2  # old and new "line 0"


def test_flush_on_a_later_day_writes_only_new_messages_to_that_days_file(tmp_path):
    history = long_history(800)
    first = flush(history, tmp_path, NOW, None)
    tomorrow = NOW + timedelta(days=1)
    more = history + [Message(role="assistant", text="fresh reply", createdAt=tomorrow)]
    second = flush(more, tmp_path, tomorrow, NOW)
    assert second == tmp_path / f"memory/{tomorrow:%Y-%m-%d}.md" != first
    assert "fresh reply" in second.read_text(encoding="utf-8")
    assert "line " not in second.read_text(encoding="utf-8")
