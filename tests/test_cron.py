"""Cron as standard cron reads it: five fields, shortcuts, either-day matching, time zones."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mimikit.scheduling.cron import Cron


def test_day_of_month_or_day_of_week_when_both_are_restricted():
    cron = Cron.parse("0 9 1 * 1")  # the 1st of the month, and every Monday
    runs = cron.upcoming(datetime(2026, 6, 29, 12, 0, tzinfo=UTC), count=3)
    assert [r.date().isoformat() for r in runs] == ["2026-07-01", "2026-07-06", "2026-07-13"]
    assert cron.both_days_restricted()
    assert not Cron.parse("0 9 * * 1").both_days_restricted()


@pytest.mark.parametrize(("shortcut", "expected"), [
    ("@hourly", datetime(2026, 1, 1, 13, 0, tzinfo=UTC)),
    ("@daily", datetime(2026, 1, 2, 0, 0, tzinfo=UTC)),
    ("@weekly", datetime(2026, 1, 4, 0, 0, tzinfo=UTC)),  # Sunday
    ("@monthly", datetime(2026, 2, 1, 0, 0, tzinfo=UTC)),
    ("@yearly", datetime(2027, 1, 1, 0, 0, tzinfo=UTC)),
])
def test_shortcuts(shortcut, expected):
    assert Cron.parse(shortcut).next_after(datetime(2026, 1, 1, 12, 30, tzinfo=UTC)) == expected


def test_weekday_mornings_stay_at_nine_local_time_across_a_dst_change():
    cron = Cron.parse("0 9 * * 1-5", "Europe/Berlin")
    friday = cron.next_after(datetime(2026, 3, 26, 12, 0, tzinfo=UTC))
    monday = cron.next_after(friday)  # summer time began on Sunday 29 March
    assert friday == datetime(2026, 3, 27, 8, 0, tzinfo=UTC)  # 09:00 CET (+01:00)
    assert monday == datetime(2026, 3, 30, 7, 0, tzinfo=UTC)  # 09:00 CEST (+02:00)


def test_latest_slot_collapses_missed_runs_into_the_last_one():
    cron = Cron.parse("*/15 * * * *")
    after = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    now = datetime(2026, 1, 3, 7, 52, 10, tzinfo=UTC)
    assert cron.latest_in(after, now) == datetime(2026, 1, 3, 7, 45, tzinfo=UTC)
    assert cron.latest_in(now, now) is None


@pytest.mark.parametrize(("expression", "says"), [
    ("* * *", "five fields"),
    ("0 0 9 * * ?", "five fields"),
    ("* * * * * *", "no seconds"),
    ("61 * * * *", "invalid"),
    ("0 0 31 2 *", "invalid"),
    ("@reboot", "unknown shortcut"),
    ("every day at 9", "five fields"),
])
def test_invalid_expressions_say_what_is_wrong_and_how_to_write_one(expression, says):
    with pytest.raises(ValueError) as error:
        Cron.parse(expression)
    assert says in str(error.value) and "0 9 * * 1-5" in str(error.value)


def test_an_unknown_zone_is_refused():
    with pytest.raises(ValueError, match="IANA"):
        Cron.parse("0 9 * * *", "Mars/Olympus")
