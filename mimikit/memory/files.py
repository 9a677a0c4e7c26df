"""Where memory lives under the state dir, and the ``remember`` write path."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mimikit.exceptions import InvalidValue
from mimikit.models import utcnow

LONG_TERM_FILE = "memory.md"
RECENT_DIR = "memory"
SUMMARY_DIR = "memory/summary"
SLUG_MAX_CHARS = 40

_SLUG_WORDS = re.compile("[a-z0-9]+|[\u4e00-\u9fff]+", re.IGNORECASE)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAME_DATE = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?(?=$|[-_.])")


def as_utc(moment: datetime) -> datetime:
    """Treat a naive datetime as UTC so that all comparisons are between aware values."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def slugify(content: str) -> str:
    """A short, readable file-name slug from the first words of the first line of ``content``.

    Chinese characters are kept (they are valid in file names); anything else that is not
    a letter or digit becomes a hyphen. Falls back to ``note``.
    """
    first_line = next((line for line in content.splitlines() if line.strip()), "")
    words = _SLUG_WORDS.findall(first_line.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > SLUG_MAX_CHARS:
            slug = slug or word[:SLUG_MAX_CHARS]
            break
        slug = candidate
    return slug or "note"


def _create_unique(path: Path, text: str) -> Path:
    """Write ``text`` to ``path``, or to ``stem-2``, ``stem-3``... if it exists; never overwrite.
    One of them holding ``text`` already is the file (a fact kept again, once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    candidate, n = path, 1
    while True:
        try:
            with candidate.open("x", encoding="utf-8") as handle:
                handle.write(text)
            return candidate
        except FileExistsError:
            if candidate.read_text(encoding="utf-8", errors="replace") == text:
                return candidate
            n += 1
            candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")


def remember(
    state_dir: Path, content: str, long_term: bool = False, now: datetime | None = None
) -> Path:
    """Store a memory.

    Args:
        state_dir: The Mimikit state dir (``MIMIKIT_STATE_DIR``).
        content: What to remember (markdown).
        long_term: Append to ``memory.md`` instead of writing a new recent-memory file.
            The same text kept again (the day's file of it, the last entry of ``memory.md``)
            is kept once.
        now: The time to date the memory with (default: now, UTC).

    Returns:
        The file written: ``memory.md`` or ``memory/YYYY-MM-DD-slug.md``.

    Raises:
        InvalidValue: When ``content`` is empty.
    """
    text = content.strip()
    if not text:
        raise InvalidValue("remember: 'content' is empty; pass the text to remember")
    moment = as_utc(now or utcnow())
    if long_term:
        path = Path(state_dir) / LONG_TERM_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = f"{text}\n\n"  # a blank line after each keeps it its own search passage
        kept = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        if kept == entry or kept.endswith("\n" + entry):
            return path  # the last entry kept again: once
        with path.open("a", encoding="utf-8") as handle:
            handle.write(entry)
        return path
    name = f"{moment:%Y-%m-%d}-{slugify(text)}.md"
    return _create_unique(Path(state_dir) / RECENT_DIR / name, f"{text}\n")


def file_period(path: Path) -> tuple[datetime, datetime]:
    """The time span a memory file covers, for time filters.

    ``YYYY-MM-DD*`` names cover that day, ``YYYY-MM*`` names that month (UTC); any other
    file (``memory.md``, docs) covers the instant of its mtime.
    """
    return name_period(path.name) or mtime_period(path.stat().st_mtime_ns)


def name_period(name: str) -> tuple[datetime, datetime] | None:
    """The day or month a ``YYYY-MM-DD*`` or ``YYYY-MM*`` file name covers; None otherwise."""
    match = _NAME_DATE.match(name)
    if not match:
        return None
    year, month = int(match.group(1)), int(match.group(2))
    day = int(match.group(3)) if match.group(3) else None
    try:
        if day is not None:
            start = datetime(year, month, day, tzinfo=UTC)
            return start, start + timedelta(days=1)
        start = datetime(year, month, 1, tzinfo=UTC)
        return start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    except ValueError:
        return None  # not a real date (e.g. 2026-13-40-notes.md): dated by mtime instead


def mtime_period(mtime_ns: int) -> tuple[datetime, datetime]:
    """The instant ``mtime_ns`` (nanoseconds), as a period, to the microsecond."""
    moment = _EPOCH + timedelta(microseconds=(mtime_ns + 500) // 1000)  # exact, no float
    return moment, moment


def file_date(path: Path) -> datetime:
    """The date of a memory file: from its name when it starts with one, else its mtime."""
    return file_period(path)[0]


def in_span(period: tuple[datetime, datetime], span: tuple) -> bool:
    """True when ``period`` overlaps ``span`` = (after, before); either bound may be None."""
    start, end = period
    after, before = span
    if after is not None and end <= after and start < after:
        return False
    return before is None or start <= before
