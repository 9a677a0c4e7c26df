"""The files a shell command wrote in the work directory, shown in its result.

A command that sends its output into a file prints nothing: after ``wc -c dentist.txt >
chars.txt`` (exit 0, no output) the 1.5B model ended its task failed, "the command did not
print anything", though chars.txt held the count. Shown what the command wrote
(``"written": {"chars.txt": "16 dentist.txt\\n"}``; a larger or binary file by its size,
``{"bytes": 1200}``), the same request ended done, telling 16.
The work directory is looked at before and after the command (each file's modification time
and size), as far as ``WATCHED_FILES`` files; hidden folders and Mimikit's private paths are
left out. A file another run wrote in the same work directory meanwhile is among them.
"""

from __future__ import annotations

import os
from pathlib import Path

WRITTEN = "written"  # the key of a command's result that holds what it wrote
WATCHED_FILES = 2_000  # a larger work directory is not looked at (no "written")
SHOWN_WRITTEN = 5  # files named in one result, the first by name
SHOWN_TEXT_BYTES = 200  # a written text file this small is shown; a larger one by its size
# A copied text file this small is shown in the copy's result: asked to "copy shopping.txt to
# backup.txt and tell me what backup.txt contains", the 1.5B model reported "3 lines" after
# the copy; shown its text, "eggs, bread, milk".
SHOWN_COPY_BYTES = 500

Stamps = dict[Path, tuple[int, int]]


def stamps(root: Path, private: tuple[Path, ...]) -> Stamps | None:
    """Each file's modification time and size under ``root``; None past ``WATCHED_FILES``."""
    found: Stamps = {}
    folders = [root]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.name.startswith(".") or path in private:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(path)
                elif entry.is_file(follow_symlinks=False):
                    stat = entry.stat(follow_symlinks=False)
                    found[path] = (stat.st_mtime_ns, stat.st_size)
            except OSError:
                continue
            if len(found) > WATCHED_FILES:
                return None
    return found


def written(before: Stamps | None, root: Path,
            private: tuple[Path, ...]) -> list[tuple[Path, int, str | None]]:
    """The files under ``root`` new or changed since ``before`` (at most ``SHOWN_WRITTEN``),
    each with its size and its text where it is small."""
    if before is None or (after := stamps(root, private)) is None:
        return []
    changed = sorted(path for path, stamp in after.items() if before.get(path) != stamp)
    return [(path, after[path][1], small_text(path, after[path][1], SHOWN_TEXT_BYTES))
            for path in changed[:SHOWN_WRITTEN]]


def small_text(path: Path, size: int, most: int = SHOWN_COPY_BYTES) -> str | None:
    """What a UTF-8 file of at most ``most`` bytes holds; None for any other."""
    if size > most:
        return None
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
