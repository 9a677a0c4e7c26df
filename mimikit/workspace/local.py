"""The Worker's file and shell actions, confined to the work directory.

Every subprocess runs in its own process group so that a timeout or a cancel can kill the
command together with everything it started in the background (the groups of this workspace,
not those of other runs of the process); shell commands run in the sandbox given
(``mimikit.workspace.sandbox``), one at a time per host slot (``mimikit.workspace.slots``).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from mimikit.exceptions import ConfigError, ToolError, WaitStopped
from mimikit.workspace.procgroup import ProcessRun, kill_groups, run_process_group
from mimikit.workspace.sandbox import Sandbox
from mimikit.workspace.slots import HostSlots
from mimikit.workspace.written import WRITTEN, small_text, stamps, written

log = logging.getLogger("mimikit.workspace")

READ_LIMIT_BYTES = 1_000_000
LIST_LIMIT_ENTRIES = 500
# A shell command run on behalf of a model gets these variables only: the runtime's own
# (API token, LLM key, Redis password, Flower auth) never reach it.
SHELL_ENV_VARS = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ",
                  "TMPDIR")
# Files the file tools never touch, relative to the work dir: secrets and Mimikit's own state.
PRIVATE_NAMES = (".env",)
UNCONFINED = Sandbox("off", None)
SLOT_WAIT_SHOWN_SECONDS = 0.1  # a longer wait for a host slot is said in the command's result


def lines_ended(text: str, several: bool) -> str:
    """``text`` with its last line ended where the file holds ``several`` lines: a line count
    (``wc -l`` counts line breaks) then says what a person counts ("eggs, bread and milk on
    separate lines", written without the last break, was reported as 2 lines)."""
    return text + "\n" if several and text and not text.endswith("\n") else text


# --- the workspace ----------------------------------------------------------------------------


class Workspace:
    """File and shell actions confined to one work directory."""

    def __init__(
        self,
        root: Path,
        shell_timeout_default: float = 120,
        shell_timeout_max: float = 3600,
        output_limit_bytes: int = 64_000,
        private: tuple[Path, ...] = (),
        sandbox: Sandbox = UNCONFINED,
        slots: HostSlots | None = None,
    ) -> None:
        root = Path(root).expanduser()
        if not root.is_dir():
            raise ConfigError(
                f"work directory {str(root)!r} does not exist or is not a directory; "
                "create it or set MIMIKIT_WORK_DIR"
            )
        self.root = root.resolve()
        self.private = tuple(Path(p).resolve() for p in private) + tuple(
            self.root / name for name in PRIVATE_NAMES)
        self.sandbox = sandbox
        self.slots = slots
        self.shell_timeout_default = shell_timeout_default
        self.shell_timeout_max = shell_timeout_max
        self.output_limit_bytes = output_limit_bytes
        self.live_pgids: set[int] = set()
        self.used = False  # a file action or a command was asked for
        self.changed = False  # a file was written or a command succeeded
        self.ran = False  # a command was asked for
        self.failing: str | None = None  # the last command run, where it failed
        self.seen: set[Path] = set()  # files this run read or wrote: it knows what they hold
        self._canceled = threading.Event()

    # -- paths --

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (relative to the root); refuses anything outside the root."""
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            raise ToolError(f"path {path!r} is not a valid file path; use e.g. 'notes/todo.md'")
        candidate = Path(path) if Path(path).is_absolute() else self.root / path
        lexical = Path(os.path.normpath(candidate))
        if not lexical.is_relative_to(self.root):
            raise ToolError(
                f"path {path!r} is outside the work directory {self.root}; use a path inside it"
            )
        real = Path(os.path.realpath(candidate))
        if any(part.is_symlink() for part in (real, *real.parents)):
            # realpath leaves a symlink it cannot resolve, i.e. a loop, as it is.
            raise ToolError(f"path {path!r} goes through a symlink loop; remove the loop "
                            "(e.g. with shell) or use another path")
        if not real.is_relative_to(self.root):
            raise ToolError(
                f"path {path!r} goes through a symlink to {real}, outside the work directory "
                f"{self.root}; use a path inside it"
            )
        if any(real == p or real.is_relative_to(p) for p in self.private):
            raise ToolError(
                f"path {path!r} is private to Mimikit (its state or secrets); the file tools "
                "cannot read or write it"
            )
        return real

    def _relative(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix() or "."

    def exists(self, path: str) -> bool:
        """Whether ``path`` is in the work directory (``ToolError`` when it cannot be)."""
        return self.resolve(path).exists()

    # -- files --

    def read(self, path: str) -> str | dict[str, Any]:
        """A file's text, or a directory's entries (a small model reads "." to show a folder)."""
        if self.resolve(path).is_dir():
            return {"directory": path, "entries": self.list_files(path)}
        return self.read_file(path)

    def read_file(self, path: str) -> str:
        """The text of a UTF-8 file of at most 1 MB."""
        self.used = True
        real = self.resolve(path)
        if not real.exists():
            raise ToolError(f"no such file: {path!r}; use list_files to see what exists")
        if real.is_dir():
            raise ToolError(f"{path!r} is a directory; use list_files to see its entries")
        size = real.stat().st_size
        if size > READ_LIMIT_BYTES:
            raise ToolError(
                f"file {path!r} is {size} bytes, over the {READ_LIMIT_BYTES} byte limit; "
                "use shell (e.g. head, grep) to read parts of it"
            )
        data = real.read_bytes()
        self.seen.add(real)
        try:
            if b"\x00" in data[:8192]:
                raise UnicodeDecodeError("utf-8", data, 0, 1, "NUL byte")
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(
                f"file {path!r} is binary (not UTF-8 text); use shell (e.g. file, xxd) to inspect it"
            ) from None

    def write_file(self, path: str, content: str) -> dict[str, Any]:
        """Write ``content`` as UTF-8, creating parent directories; returns {path, bytes}.
        A text of several lines ends its last line (``lines_ended``)."""
        self.used = True
        real = self.resolve(path)
        if real.is_dir():
            raise ToolError(f"{path!r} is a directory; give a file path to write")
        if size := self._unread_size(real):  # not replaced blindly
            raise ToolError(f"{path!r} already exists ({size} bytes): append_file adds to its "
                            "end, rename renames or moves it; to replace what it holds, "
                            "read_file it first")
        data = lines_ended(content, several="\n" in content).encode("utf-8")
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_bytes(data)
        self.changed = True
        self.seen.add(real)
        return {"path": self._relative(real), "bytes": len(data)}

    def unread_bytes(self, path: str) -> int:
        """The size of the file at ``path`` where it holds something this run has not seen,
        else 0: such a file is not written over (a small model asked to rename a file or add
        a line to it writes the file anew instead)."""
        return self._unread_size(self.resolve(path))

    def _unread_size(self, real: Path) -> int:
        return real.stat().st_size if real.is_file() and real not in self.seen else 0

    def append_file(self, path: str, content: str) -> dict[str, Any]:
        """Add ``content`` at the end of a file (made when missing), on a line of its own when
        the file does not end with a line break, its last line ended when the file then holds
        several (``lines_ended``); returns {path, bytes (the file's size)}."""
        self.used = True
        real = self.resolve(path)
        if real.is_dir():
            raise ToolError(f"{path!r} is a directory; give a file path to append to")
        real.parent.mkdir(parents=True, exist_ok=True)
        with real.open("a+b") as file:
            held = file.tell() > 0
            if held and content and not content.startswith("\n"):
                file.seek(-1, os.SEEK_END)
                if file.read(1) != b"\n":
                    content = "\n" + content
            content = lines_ended(content, several=held or "\n" in content)
            file.write(content.encode("utf-8"))
            size = file.tell()
        self.changed = True
        return {"path": self._relative(real), "bytes": size}

    def rename(self, path: str, to: str) -> dict[str, Any]:
        """Rename or move a file or folder (into ``to`` when it is a folder); never over an
        existing one."""
        real, target = self._from_to(path, to, "renamed", "moved")
        try:
            real.rename(target)
        except OSError as error:
            raise ToolError(f"cannot rename {path!r} to {to!r}: {error.strerror}") from None
        if real in self.seen:  # what it holds moved with it
            self.seen.add(target)
        self.changed = True
        return {"path": self._relative(target), "was": self._relative(real)}

    def copy(self, path: str, to: str) -> dict[str, Any]:
        """Copy a file or folder (into ``to`` when it is a folder); never over an existing
        one; returns {path, was, bytes (a file's size), text (a small text file's)}."""
        real, target = self._from_to(path, to, "copied", "copied")
        try:
            if real.is_dir():
                shutil.copytree(real, target, symlinks=True)
            else:
                shutil.copyfile(real, target)
        except OSError as error:
            raise ToolError(f"cannot copy {path!r} to {to!r}: {error.strerror}") from None
        if real in self.seen:  # what it holds is known
            self.seen.add(target)
        self.changed = True
        copied = {"path": self._relative(target), "from": self._relative(real)}
        if not target.is_file():
            return copied
        size = target.stat().st_size
        text = small_text(target, size)
        if text is None:
            return copied | {"bytes": size}
        self.seen.update((real, target))  # what they hold is shown
        return copied | {"bytes": size, "text": text}

    def _from_to(self, path: str, to: str, done: str, into: str) -> tuple[Path, Path]:
        """The real paths a file or folder goes from and to (into ``to`` when it is a folder),
        its parents made: refused when there is nothing to take, the target exists, or it
        would go into itself (``done``, ``into``: the verbs of the refusals)."""
        self.used = True
        real, target = self.resolve(path), self.resolve(to)
        if not real.exists():
            raise ToolError(f"no such file or folder: {path!r}; use list_files to see what exists")
        if real == self.root:
            raise ToolError(f"the work directory itself cannot be {done}; name a file or folder "
                            "in it")
        if target.is_dir():
            target = self.resolve(self._relative(target / real.name))
        if target.exists():
            raise ToolError(f"{self._relative(target)!r} already exists; remove or rename it "
                            "first, or choose another name")
        if target.is_relative_to(real):
            raise ToolError(f"{path!r} cannot be {into} into itself; choose a path outside it")
        target.parent.mkdir(parents=True, exist_ok=True)
        return real, target

    def remove(self, path: str) -> dict[str, Any]:
        """Delete a file, a link or an empty folder; returns {removed: path}."""
        self.used = True
        real = self.resolve(path)
        link = Path(os.path.normpath(self.root / path))
        doomed = link if link.is_symlink() else real  # the link, not what it points to
        if doomed == self.root:
            raise ToolError("the work directory itself cannot be removed; name a file or folder "
                            "in it")
        if not doomed.exists() and not doomed.is_symlink():
            raise ToolError(f"no such file or folder: {path!r}; use list_files to see what exists")
        try:
            if doomed.is_dir() and not doomed.is_symlink():
                doomed.rmdir()
            else:
                doomed.unlink()
        except OSError as error:
            raise ToolError(f"cannot remove {path!r}: {error.strerror} (a folder must be empty "
                            "first)") from None
        self.seen.discard(doomed)
        self.changed = True
        return {"removed": self._relative(doomed)}

    def make_dir(self, path: str) -> dict[str, Any]:
        """Create a folder (and its parents); returns {path, created}."""
        self.used = True
        real = self.resolve(path)
        if real.exists() and not real.is_dir():
            raise ToolError(f"{path!r} is a file; a folder cannot be made there")
        created = not real.exists()
        real.mkdir(parents=True, exist_ok=True)
        self.changed = True
        return {"path": self._relative(real) + "/", "created": created}

    def list_files(self, path: str = ".") -> list[str]:
        """Entries of a directory, relative to the root, sorted; directories end with '/'.
        Mimikit's private paths (its state dir inside the work dir) are left out: the file
        tools cannot open them, and a listing of the person's files is not theirs."""
        self.used = True
        real = self.resolve(path)
        if not real.is_dir():
            raise ToolError(f"no such directory: {path!r}; use list_files('.') to start at the top")
        entries = sorted(
            self._relative(child) + ("/" if child.is_dir() else "") for child in real.iterdir()
            if child not in self.private
        )
        if len(entries) > LIST_LIMIT_ENTRIES:
            hidden = len(entries) - LIST_LIMIT_ENTRIES
            entries = entries[:LIST_LIMIT_ENTRIES]
            entries.append(f"[{hidden} more entries not shown; list a subdirectory]")
        return entries

    # -- shell --

    def shell(self, command: str, timeout: float | None = None) -> dict[str, Any]:
        """Run ``command`` in the work directory, in the sandbox; background children die with it.

        Returns:
            {exitCode, stdout, stderr, timedOut, canceled, durationMs}, ``written`` where it
            wrote files (``mimikit.workspace.written``), ``waitedMs`` when it
            waited for a free host slot, and ``note`` when a failure looks like the sandbox's
            doing (no network).
        """
        self.used = self.ran = True
        seconds = self._check_command(command, timeout)
        try:
            with self._slot() as waited:
                before = stamps(self.root, self.private)  # after the wait: not what others wrote
                run = self._run_shell(command, seconds)
        except WaitStopped:
            raise ToolError("the task was canceled or ran out of time while its command "
                            "waited for a free shell slot; it did not run") from None
        result: dict[str, Any] = {
            "exitCode": run.exitCode,
            "stdout": run.stdout,
            "stderr": run.stderr,
            "timedOut": run.timedOut,
            "canceled": run.stopped,
            "durationMs": run.durationMs,
        }
        self.changed = self.changed or run.exitCode == 0
        self.failing = command if run.exitCode != 0 and not run.stopped else None
        if wrote := written(before, self.root, self.private):
            result[WRITTEN] = {self._relative(path): {"bytes": size} if text is None else text
                                 for path, size, text in wrote}
            self.seen.update(path for path, _, text in wrote if text is not None)
        if waited >= SLOT_WAIT_SHOWN_SECONDS:
            result["waitedMs"] = int(waited * 1000)
        if note := self.sandbox.note(run.exitCode, run.stderr + run.stdout):
            result["note"] = note
        return result

    def _slot(self) -> Any:
        """A host slot for one command (or none to wait for, without slots)."""
        if self.slots is None:
            return nullcontext(0.0)
        return self.slots.hold(self._canceled.is_set)

    def _run_shell(self, command: str, seconds: float) -> ProcessRun:
        shell = shutil.which("bash") or "/bin/sh"
        env = {k: v for k, v in os.environ.items() if k in SHELL_ENV_VARS or k.startswith("LC_")}
        # The cwd's .env is the one the runtime's settings are read from.
        hidden = (*self.private, Path.cwd() / ".env")
        with self.sandbox.command([shell, "-c", command], env, self.root, hidden) as (argv, boxed):
            return run_process_group(
                argv,
                cwd=self.root,
                timeout=seconds,
                output_limit_bytes=self.output_limit_bytes,
                stop=self._canceled.is_set,
                env=boxed,
                owner=self.live_pgids,
            )

    def _check_command(self, command: str, timeout: float | None) -> float:
        """The seconds ``command`` may take; refuses it when it cannot or must not run."""
        if self._canceled.is_set():
            raise ToolError("the task was canceled; no more commands run")
        if refusal := self.sandbox.refusal:
            log.warning("shell command refused: %s", refusal)
            raise ToolError(refusal)
        if not command.strip():
            raise ToolError("command is empty; give a shell command such as 'ls -la'")
        if timeout is not None and timeout <= 0:
            raise ToolError(f"timeout {timeout} is not positive; give seconds, e.g. 60")
        return min(timeout or self.shell_timeout_default, self.shell_timeout_max)

    @property
    def canceled(self) -> bool:
        return self._canceled.is_set()

    def cancel(self) -> None:
        """Kill the running command (from any thread) and refuse further ones."""
        self._canceled.set()
        kill_groups(self.live_pgids)

