"""The files a task names, looked for in the work directory when its Worker says it is done.

A small model may submit ``done`` for a file it never made: it ran ``python fib.py`` before
writing fib.py, then reported the output it expected. A run that tried the work (it made a
file call or ran a command) and made nothing (no file written, no command that succeeded),
for a task that names a file that was not in the work directory when the run began and is not
there now, has not done the task whatever its result says: the Worker is told so once, and a
second ``done`` ends the task failed, naming the files that were never made. A run that made
no call at all, for a task naming files that are not there, is told so once (the 0.5B model
submitted "backup.txt holds 3 bytes." as its first answer to "Copy shopping.txt to
backup.txt"), as is one whose result names such files ("a.txt is written: 2 bytes", an
example's words, for "which files are in the work dir?"; but for work a schedule runs: a
reminder's words may name a file); a second ``done`` stands, as a run may answer from the
task's words alone (a reminder, a question), and its report says that it made no call. (Held
to a call after it, the 0.5B model ran ``touch notes.txt`` and reported "notes.txt holds
hello", ``rm -rf todo.md`` for "rename todo.md to tasks.md", ``python3 fib.py`` of a script it
never wrote: 3 of 12 everyday requests done, against 4, and less of them told truly.) A run
that wrote files and ran no command, for a task that names a script, is told once that it
never ran it (the 0.5B model reported "hello.py printed 22 bytes" of a script it wrote and
never ran); a second ``done`` stands, as a task may only ask for the script written, but keeps
no number its task does not give (``tools.worker_tools.without_output``). So is one
that made a file in the folder of one the task names, with its suffix, and not that file (the
0.5B model, asked to "make a new file dentist.txt", wrote dental.txt and reported it written);
a second ``done`` stands, and its report says which file is not there (``lifecycle.actions``).

The paths that are there are shown to the Worker before its first step (``state_lines``): a
small model asked to add a line to a file it did not know was there wrote it anew, was refused,
and gave up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from mimikit.exceptions import ToolError

if TYPE_CHECKING:
    from mimikit.workspace.local import Workspace

# A relative path with a lowercase extension: ``fib.py``, ``notes/todo.md``. Not a part of a
# URL, an e-mail address or a dotted name (``os.path.join``); four characters at least, so
# that "e.g" and "i.e" are not files.
_PATH = re.compile(r"(?<![\w/.@:~-])(?:\./)?((?:[\w-]+/)*[\w-]+\.[a-z][a-z0-9]{0,7})(?!\.?[\w/-])",
                   re.ASCII)
MIN_NAME_CHARS = 4
# The files that are programs to run: a task naming one may ask for what it prints.
SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".js", ".mjs", ".ts", ".rb", ".pl", ".php", ".lua")
SHOWN_PATHS = 8  # paths a task names whose state its Worker is shown
COUNTED_BYTES = 1_000_000  # a larger file's lines are not counted
KIN_ENTRIES = 2_000  # of a folder, looked at for the files of a named file's kind


def named_paths(text: str) -> list[str]:
    """The relative file paths ``text`` names, in order, once each."""
    names = (match.group(1) for match in _PATH.finditer(text))
    return list(dict.fromkeys(name for name in names if len(name) >= MIN_NAME_CHARS))


@dataclass
class NamedFiles:
    """The files a task names that were not in the work directory when its run began, and
    the scripts it names."""

    absent: tuple[str, ...]
    scripts: tuple[str, ...] = ()  # the programs it names
    held: tuple[str, ...] = ()  # the files it names that held something unread (not to write)
    scheduled: bool = False  # work a schedule runs (a reminder's words may name a file)
    told: set[str] = field(default_factory=set)  # what the Worker was told once (``_tell``)
    # the files of the kind of each absent one (``same_kind``) that were there
    kin: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, workspace: Workspace, text: str, scheduled: bool = False) -> NamedFiles:
        paths = named_paths(text)
        absent = tuple(path for path in paths if _absent(workspace, path))
        return cls(absent, tuple(path for path in paths if path.endswith(SCRIPT_SUFFIXES)),
                   tuple(path for path in paths if _unread(workspace, path)), scheduled,
                   kin={path: _kin(workspace, path) for path in absent})

    def check_done(self, workspace: Workspace, said: str = "") -> str | None:
        """Before a ``done`` whose result says ``said``: None when it stands; the error of a
        task that was not done when the Worker was already told (its ``done`` becomes
        ``failed``). Raises ``ToolError`` the first time, and the first time it made no call
        for files the task or its result names that are not there (for work a schedule runs,
        those the task names), made a file of the kind of one the task names instead of it
        (``same_kind``), or wrote a script it never ran."""
        missing = [path for path in self.absent if _absent(workspace, path)]
        # still missing though the run tried, and made nothing that could have made them
        unmade = missing if workspace.used and not workspace.changed else []
        files = ", ".join(unmade)
        if unmade and "unmade" in self.told:
            return (f"the task names {files}, which was never made: the worker wrote no file "
                    "and no command of its succeeded")
        if unmade:
            self._tell("unmade", f"{files} is not in the work directory: nothing this run did "
                       "made it. Make it first (write_file, then run it if the task says so) "
                       "and then call submit_result; or call submit_result with status failed "
                       "and what went wrong.")
        instead = [made for path in missing
                   for made in sorted(_kin(workspace, path) - self.kin.get(path, frozenset()))]
        if instead:
            self._tell("elsewhere", f"{', '.join(missing)} is not in the work directory, though "
                       f"the task names it: this run made {', '.join(instead)} instead. Make it "
                       "as the task says (rename what you made, or write it) and then call "
                       "submit_result; or call submit_result with status failed and what went "
                       "wrong.")
        claimed = missing or ([] if self.scheduled else absent_in(workspace, said))
        if claimed and not workspace.used:
            self._tell("untried", f"{', '.join(claimed)} is not in the work directory, and this "
                       "run made no call: do the task with the tools first, then call "
                       "submit_result; where it asks nothing of the work directory, call "
                       "submit_result again.")
        written = self.unrun(workspace)
        if written and workspace.changed:
            self._tell("unrun", f"this run never ran {', '.join(written)}: where the task asks "
                       "what it prints or does, run it (shell) and then call submit_result "
                       "with what it printed; else call submit_result again.")
        return None

    def unrun(self, workspace: Workspace) -> list[str]:
        """The scripts the task names that are in the work directory, where the run ran no
        command."""
        return [] if workspace.ran else [path for path in self.scripts
                                         if not _absent(workspace, path)]

    def unrun_when_told(self, workspace: Workspace) -> bool:
        """Whether the run was told that it never ran the scripts the task names, and still
        ran no command."""
        return "unrun" in self.told and bool(self.unrun(workspace))

    def check_folder(self, path: str) -> None:
        """Before a folder is made at ``path``: the Worker is told once where the task names
        a file there (the 1.5B model answered "make a file groceries.txt listing apples, milk
        and rice" with ``make_dir`` groceries.txt, then could not write the file, 2 of 2
        runs; told so, it wrote the file, 3 of 3). A second call makes the folder."""
        name = path.strip().removeprefix("./").rstrip("/")
        if name in self.absent:
            self._tell(f"folder {name}", f"the task names {name} as a file, not a folder: make "
                       "it with write_file.")

    def _tell(self, what: str, error: str) -> None:
        """Raise ``error`` for the Worker the first time only."""
        if what not in self.told:
            self.told.add(what)
            raise ToolError(error)


def state_lines(workspace: Workspace, text: str) -> list[str]:
    """What the work directory holds at each path ``text`` names that is there: ``tasks.md:
    exists (3 lines)``, ``photos/data.csv: exists (empty)``; paths the Worker may not touch,
    and those not there, are left out. (Told "a file of 1 line (6 bytes)", the 1.5B model
    wrote those words into the file it was to delete; told "fib.py: does not exist yet", it
    printed fib(10) alone where it printed the first ten without the line.)"""
    lines = []
    for path in named_paths(text)[:SHOWN_PATHS]:
        try:
            real = workspace.resolve(path)
        except ToolError:
            continue
        if real.exists():
            lines.append(f"{path}: {_state(real)}")
    return lines


def _state(real: Path) -> str:
    if real.is_dir():
        return "a folder"
    try:
        size = real.stat().st_size
        data = real.read_bytes() if 0 < size <= COUNTED_BYTES and real.is_file() else b""
    except OSError:  # unreadable: there, but nothing more is known
        return "exists"
    if not size:
        return "exists (empty)"
    if not data:
        return "exists"
    count = data.count(b"\n") + (not data.endswith(b"\n"))
    return f"exists ({count} line{'s' * (count != 1)})"


def same_kind(path: str, other: str) -> bool:
    """Whether ``other`` is a file of the kind of ``path``: in its folder, with its suffix."""
    one, two = PurePosixPath(path), PurePosixPath(other)
    return one != two and one.parent == two.parent and one.suffix == two.suffix


def _kin(workspace: Workspace, path: str) -> frozenset[str]:
    """The files of the kind of ``path`` (``same_kind``) in the work directory, as far as
    ``KIN_ENTRIES`` entries of its folder."""
    folder = PurePosixPath(path).parent
    try:
        entries = islice(workspace.resolve(str(folder)).iterdir(), KIN_ENTRIES)
        return frozenset(str(folder / entry.name) for entry in entries
                         if same_kind(path, str(folder / entry.name)) and entry.is_file())
    except (ToolError, OSError):
        return frozenset()


def absent_in(workspace: Workspace, text: str) -> list[str]:
    """The files ``text`` names that could be in the work directory and are not."""
    return [path for path in named_paths(text) if _absent(workspace, path)]


def _unread(workspace: Workspace, path: str) -> bool:
    """Whether ``path`` holds something a write may not replace unread
    (``Workspace.unread_bytes``)."""
    try:
        return workspace.unread_bytes(path) > 0
    except (ToolError, OSError):
        return False


def _absent(workspace: Workspace, path: str) -> bool:
    """Whether ``path`` could be in the work directory and is not (a private path, or one
    outside it, is not the Worker's to make)."""
    try:
        return not workspace.exists(path)
    except ToolError:
        return False
