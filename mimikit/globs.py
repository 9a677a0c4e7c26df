"""The one glob engine: what a condition's path may be, and which files it matches.

The same rules decide at tool time (``check``: is this a path or glob the tick can evaluate?)
and at tick time (``matches``), so whatever a tool accepts, the tick evaluates.

- A path or glob is relative to the work directory, with ``/`` between parts; an absolute
  path inside the work directory is made relative; ``..`` that climbs out is refused.
- ``*`` matches within one part, ``?`` one character, ``[abc]`` / ``[!abc]`` one of a set.
- ``**`` matches across parts: ``src/**/*.ts`` (any depth, the top of ``src`` included),
  ``**.md`` and ``reports/**.md`` (any ``.md`` below), ``logs/**`` (everything below).
- ``*.log`` matches at the top only, as a shell does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path, PurePosixPath

from mimikit.exceptions import InvalidValue

GLOB_CHARS = frozenset("*?[")
MAX_MATCHES = 20_000
EXAMPLES = "e.g. 'reports/today.md', '*.log', 'src/**/*.py' or 'notes/**.md'"


def check(pattern: str, work_dir: Path) -> str:
    """``pattern`` relative to ``work_dir`` and normalised (``a/../b`` is ``b``).

    Raises:
        InvalidValue: The pattern is empty, absolute outside the work dir, climbs out of it,
            or is not a glob this engine reads (an unclosed ``[``); the message says how to
            write one.
    """
    if not isinstance(pattern, str) or not pattern.strip() or "\x00" in pattern:
        raise InvalidValue(f"path {pattern!r} is empty; give a path or glob relative to the "
                           f"work directory, {EXAMPLES}")
    root = PurePosixPath(os.path.abspath(work_dir))
    raw = PurePosixPath(pattern.strip().replace("\\", "/"))
    if raw.is_absolute():
        if not _is_within(raw, root):
            raise InvalidValue(_outside(pattern, work_dir))
        raw = PurePosixPath(os.path.relpath(raw, root))
    normal = PurePosixPath(os.path.normpath(raw))
    if normal.parts[:1] == ("..",) or str(normal) in ("", "."):
        raise InvalidValue(_outside(pattern, work_dir))
    text = str(normal)
    _compiled(text)  # refuses what cannot be read, now rather than at every tick
    return text


def is_glob(pattern: str) -> bool:
    """True when ``pattern`` has glob characters (else it names one file)."""
    return bool(GLOB_CHARS & set(pattern))


def matches(root: Path, pattern: str, limit: int = MAX_MATCHES) -> list[Path]:
    """The files under ``root`` that ``pattern`` (as ``check`` returns it) matches, at most
    ``limit`` of them, in a stable order."""
    if not is_glob(pattern):
        candidate = root / pattern
        return [candidate] if candidate.is_file() else []
    regex = _compiled(pattern)
    found = []
    for relative in _walk(root, _fixed_prefix(pattern)):
        if regex.fullmatch(relative):
            found.append(root / relative)
            if len(found) >= limit:
                break
    return found


def _walk(root: Path, prefix: str) -> Iterator[str]:
    """Relative paths of the files under ``root/prefix``, sorted, symlinked dirs not followed."""
    start = root / prefix if prefix else root
    if not start.is_dir():
        return
    for folder, dirs, files in os.walk(start):
        dirs.sort()
        base = os.path.relpath(folder, root)
        for name in sorted(files):
            yield name if base == "." else f"{base}/{name}".replace(os.sep, "/")


def _fixed_prefix(pattern: str) -> str:
    """The leading parts of ``pattern`` without glob characters (where the walk starts)."""
    parts = []
    for part in pattern.split("/")[:-1]:
        if is_glob(part):
            break
        parts.append(part)
    return "/".join(parts)


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    """The regular expression of a glob (see the module docstring)."""
    out, index = [], 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif char == "*":
            out.append("[^/]*")
            index += 1
        elif char == "?":
            out.append("[^/]")
            index += 1
        elif char == "[":
            cls, index = _char_class(pattern, index)
            out.append(cls)
        else:
            out.append(re.escape(char))
            index += 1
    return re.compile("".join(out))


def _char_class(pattern: str, start: int) -> tuple[str, int]:
    end = pattern.find("]", start + 2 if pattern[start + 1:start + 2] in ("!", "]") else start + 1)
    if end < 0:
        raise InvalidValue(f"glob {pattern!r} opens a '[' set it never closes; close it with "
                           f"']' or drop the '[', {EXAMPLES}")
    body = pattern[start + 1:end]
    negate = body.startswith("!")
    body = body[1:] if negate else body
    escaped = body.replace("\\", "\\\\").replace("^", "\\^")
    return (f"[^/{escaped}]" if negate else f"[{escaped}]"), end + 1


def _is_within(path: PurePosixPath, root: PurePosixPath) -> bool:
    normal = PurePosixPath(os.path.normpath(path))
    return normal == root or root in normal.parents


def _outside(pattern: str, work_dir: Path) -> str:
    return (f"path {pattern!r} is outside the work directory {work_dir}; give a path or glob "
            f"relative to it, {EXAMPLES}")
