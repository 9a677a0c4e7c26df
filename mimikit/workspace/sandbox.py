"""The Worker's shell commands in a sandbox: writes only to WORK_DIR and a private temporary
directory, the state dir and ``.env`` files out of reach, no network unless allowed, and every
process of a command dying with it.

The kinds, in the order ``auto`` tries them: bubblewrap (``bwrap``, Linux: the whole file system
read-only, a PID namespace of its own), Landlock (the Linux kernel's own sandbox, where
bubblewrap is missing or cannot make a namespace: with a mount namespace of its own hiding the
state dir and .env where one can be made, else granting entries one by one) and
``sandbox-exec`` (macOS, a small profile).
``MIMIKIT_SHELL_SANDBOX`` chooses: ``auto`` the first this host has, ``on`` the same but refusing
commands where none can be made, a kind's name that kind alone (refusing commands without it),
``off`` none. ``MIMIKIT_SHELL_NETWORK=on`` lets sandboxed commands reach the network.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from mimikit.workspace.bwrap import bwrap_argv, existing, programs_in_tmp
from mimikit.workspace.grants import landlock_argv, landlock_label, landlock_limits
from mimikit.workspace.landlock import abi_version
from mimikit.workspace.seatbelt import seatbelt_argv

if TYPE_CHECKING:
    from mimikit.config import Settings

SandboxMode = Literal["auto", "on", "off", "bwrap", "landlock", "sandbox-exec"]
Kind = Literal["bwrap", "landlock", "sandbox-exec"]
KINDS: tuple[Kind, ...] = ("bwrap", "landlock", "sandbox-exec")  # the order auto tries them in
PLATFORMS: dict[Kind, str] = {"bwrap": "linux", "landlock": "linux", "sandbox-exec": "darwin"}
LABELS: dict[str, str] = {"bwrap": "bubblewrap", "landlock": "Landlock",
                           "sandbox-exec": "sandbox-exec"}
PROBE_TIMEOUT_SECONDS = 10.0
NETWORK_NOTE = "the network is off in the sandbox (MIMIKIT_SHELL_NETWORK=on allows it)"
LANDLOCK_NOTE = ("the sandbox (Landlock) may have refused it: a command writes only in the "
                 "work dir and $TMPDIR, and reads only there and in the system's, Python's and "
                 "PATH's files")
ENTRIES_NOTE = ("; where the state dir or a .env lies in the work dir, nothing can be added or "
                "removed beside it: make a new file or folder there with write_file")
LANDLOCK_SETUP_FAILED = re.compile(r"could not be set up \((.*)\); the command did not run$")
# What curl, git, wget, Python, Node and the resolver say when they cannot reach a host.
NETWORK_FAILURE = re.compile(
    r"could not resolve|temporary failure in name resolution|name or service not known|"
    r"nodename nor servname|getaddrinfo|eai_again|enotfound|network is unreachable|enetunreach|"
    r"connection refused|econnrefused|couldn't connect|failed to connect|no route to host|"
    r"failed to establish a new connection|unable to resolve|urlopen error|connect eacces",
    re.IGNORECASE)
INSTALL_BWRAP = ("install bubblewrap (`apt-get install bubblewrap`; `dnf install bubblewrap` "
                 "on Fedora)")


@dataclass(frozen=True)
class Sandbox:
    """The sandbox this host's Worker shell commands run in (``kind`` None: none is)."""

    mode: SandboxMode
    kind: Kind | None
    program: str | None = None
    network: bool = False
    missing: str | None = None  # why none is in force
    fix: str | None = None  # how to get one
    abi: int = 0  # Landlock's
    no_namespace: str | None = None  # Landlock: why commands get no mount namespace (None: do)

    @property
    def label(self) -> str | None:
        """Its name as shown: "bubblewrap", "Landlock ABI 7 with a private mount namespace",
        "Landlock ABI 7 (entries granted one by one)", "sandbox-exec"."""
        if self.kind is None:
            return None
        if self.kind == "landlock":
            return landlock_label(self.abi, self.no_namespace is None)
        return LABELS[self.kind]

    @property
    def refusal(self) -> str | None:
        """The error a shell command gets when a sandbox is required and there is none."""
        if self.kind is not None or self.mode in ("auto", "off"):
            return None
        wanted = "a sandbox" if self.mode == "on" else LABELS[self.mode]
        return (f"shell commands cannot run here: MIMIKIT_SHELL_SANDBOX={self.mode} requires "
                f"{wanted} and {self.missing}; {self.fix}, or set MIMIKIT_SHELL_SANDBOX=auto or "
                "off. The file tools (read_file, write_file, list_files) still work.")

    @contextmanager
    def command(self, argv: list[str], env: dict[str, str], root: Path,
                hidden: Sequence[Path]) -> Iterator[tuple[list[str], dict[str, str]]]:
        """``argv`` and ``env`` as they run in the sandbox (unchanged without one).

        Args:
            argv: the command, e.g. ``["bash", "-c", "make"]``.
            env: its environment.
            root: the work directory (resolved), the one writable place.
            hidden: paths the command may neither read nor write (the state dir, .env files).
        """
        masked = existing(hidden)
        if self.kind == "bwrap" and self.program:
            boxed = bwrap_argv(self.program, argv, root, masked, self.network,
                               shown=programs_in_tmp(env.get("PATH", "")))
            yield boxed, {**env, "TMPDIR": "/tmp"}  # the private one
        elif self.kind is not None and self.program:
            with tempfile.TemporaryDirectory(prefix="mimikit-shell-",
                                             ignore_cleanup_errors=True) as made:
                tmp = Path(os.path.realpath(made))
                if self.kind == "landlock":
                    boxed = landlock_argv(argv, root, tmp, masked, env.get("PATH", ""),
                                          self.network, self.no_namespace is None)
                else:
                    boxed = seatbelt_argv(self.program, argv, root, str(tmp), masked,
                                          self.network)
                yield boxed, {**env, "TMPDIR": str(tmp)}
        else:
            yield argv, env

    def note(self, exit_code: int | None, output: str) -> str | None:
        """A note for the model when a failed command looks like the sandbox's doing: the
        network it lacks, or (Landlock) a path it may not use."""
        if self.kind is None or exit_code in (0, None):
            return None
        if not self.network and NETWORK_FAILURE.search(output):
            return NETWORK_NOTE
        if self.kind == "landlock" and "permission denied" in output.lower():
            entries = "" if self.no_namespace is None else ENTRIES_NOTE
            return LANDLOCK_NOTE + entries + ("" if self.network else f"; {NETWORK_NOTE}")
        return None


# --- choosing -----------------------------------------------------------------------------------


class Found(NamedTuple):
    """What looking for one kind found: its program, or why it cannot be used and the fix."""

    program: str | None
    missing: str | None = None
    fix: str | None = None
    abi: int = 0
    no_namespace: str | None = None


def choose_sandbox(mode: SandboxMode, network: bool = False, namespace: bool = True) -> Sandbox:
    """The sandbox ``mode`` gives on this host (``off``: none, without looking); ``namespace``
    False keeps Landlock from a mount namespace where one could be made (it grants entries one
    by one, as where none can)."""
    if mode == "off":
        return Sandbox(mode, None, network=network)
    missing, fixes = [], []
    for kind in KINDS if mode in ("auto", "on") else tuple(k for k in KINDS if k == mode):
        if not sys.platform.startswith(PLATFORMS[kind]):
            if kind == mode:
                missing.append(f"{LABELS[kind]} is not available on {sys.platform}")
                fixes.append("run Workers on " + ("macOS" if kind == "sandbox-exec" else "Linux"))
            continue
        found = FINDERS[kind]()
        if found.missing is None:
            no_namespace = found.no_namespace if namespace else "turned off"
            return Sandbox(mode, kind, found.program, network, abi=found.abi,
                           no_namespace=no_namespace if kind == "landlock" else None)
        missing.append(found.missing)
        fixes.append(found.fix or "")
    if not missing:
        return Sandbox(mode, None, None, network, f"no sandbox is known on {sys.platform}",
                       "run Workers on Linux or macOS, or use MIMIKIT_WORKER_BACKEND=codex")
    return Sandbox(mode, None, None, network, " and ".join(missing), "; or ".join(fixes))


def sandbox_for(settings: Settings) -> Sandbox:
    """The sandbox of ``MIMIKIT_SHELL_SANDBOX`` and ``MIMIKIT_SHELL_NETWORK`` on this host."""
    return choose_sandbox(settings.shell_sandbox, settings.shell_network)


def _find_bwrap() -> Found:
    program = shutil.which("bwrap")
    if program is None:
        return Found(None, "bubblewrap (bwrap) is not installed", INSTALL_BWRAP)
    return _working("bwrap", program, "allow user namespaces (in a container: run it with a "
                    "seccomp profile that permits them), or use MIMIKIT_WORKER_BACKEND=codex")


def _find_landlock() -> Found:
    abi = abi_version()
    if abi < 1:
        return Found(None, "the kernel offers no Landlock (Linux 5.13 or later, with landlock "
                     "among its LSMs)", "boot a kernel with Landlock enabled (e.g. "
                     "lsm=landlock,... on its command line)")
    problem = _probe("landlock", sys.executable, namespace=True)
    if problem is None:
        return Found(sys.executable, abi=abi)
    found = _working("landlock", sys.executable, "check that Landlock works for this user "
                     "(a seccomp filter may refuse its system calls)")
    cause = LANDLOCK_SETUP_FAILED.search(problem)
    return found._replace(abi=abi, no_namespace=cause.group(1) if cause else problem)


def _find_seatbelt() -> Found:
    program = shutil.which("sandbox-exec") or "/usr/bin/sandbox-exec"
    if not os.access(program, os.X_OK):
        return Found(None, "sandbox-exec is missing", "restore /usr/bin/sandbox-exec (macOS)")
    return _working("sandbox-exec", program, "check that sandbox-exec works for this user")


FINDERS: dict[Kind, Callable[[], Found]] = {"bwrap": _find_bwrap, "landlock": _find_landlock,
                                            "sandbox-exec": _find_seatbelt}


def _working(kind: Kind, program: str, fix: str) -> Found:
    problem = _probe(kind, program)
    if problem:
        return Found(program, f"{LABELS[kind]} cannot make a sandbox here ({problem})", fix)
    return Found(program)


@lru_cache(maxsize=8)
def _probe(kind: Kind, program: str, namespace: bool = False) -> str | None:
    """Why ``kind`` cannot run ``true`` in a sandbox, or None when it can (asked once); Landlock
    with ``namespace`` in a mount namespace of its own covering a folder and a file."""
    true = shutil.which("true") or "/usr/bin/true"
    with tempfile.TemporaryDirectory(prefix="mimikit-probe-") as made:
        here = Path(os.path.realpath(made))
        if kind == "bwrap":
            argv = bwrap_argv(program, [true], here, [], network=False)
        elif kind == "landlock":
            (here / "state").mkdir()  # a state dir and a .env to hide, as in the default layout
            (here / ".env").touch()
            argv = landlock_argv([true], here, here, [here / "state", here / ".env"],
                                 os.environ.get("PATH", ""), False, namespace)
        else:
            argv = seatbelt_argv(program, [true], here, str(here), [], network=False)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                  timeout=PROBE_TIMEOUT_SECONDS, start_new_session=True)
        except (OSError, subprocess.TimeoutExpired) as error:
            return str(error)
    if done.returncode != 0:
        return (done.stderr.strip() or f"exit status {done.returncode}").splitlines()[-1]
    return None


# --- the report ---------------------------------------------------------------------------------


def sandbox_report(settings: Settings) -> dict[str, Any]:
    """Which sandbox Worker shell commands run in on this host, and its limits, for ``mimikit
    up``, status, doctor and the page.

    Returns:
        {mode, kind (bwrap|landlock|sandbox-exec|codex|off|none), label (e.g. "Landlock ABI
        7 with a private mount namespace", None without a sandbox), network (whether commands
        reach it), state (ok|off|warn|fail), detail, fix?}.
    """
    if settings.worker_backend == "codex":
        return {"mode": settings.shell_sandbox, "kind": "codex", "label": "codex",
                "network": None, "state": "ok",
                "detail": "the codex backend runs commands in codex exec's own workspace-write "
                          "sandbox (MIMIKIT_SHELL_SANDBOX applies to the llm backend)"}
    box = sandbox_for(settings)
    report: dict[str, Any] = {"mode": box.mode, "kind": box.kind or ("off" if box.mode == "off"
                                                                     else "none"),
                              "label": box.label, "network": box.network}
    if box.kind == "landlock":
        held = _held_in_work(settings) if box.no_namespace else None
        return {**report, "network": box.network or box.abi < 4,  # ABI 4 closes TCP
                **landlock_limits(box.abi, box.network, box.no_namespace, held)}
    if box.kind is not None:
        network = "network on" if box.network else \
            "network off (MIMIKIT_SHELL_NETWORK=on allows it)"
        return {**report, "state": "ok", "detail": f"{box.kind} ({box.program}): shell commands "
                "write only to the work dir and a private /tmp, cannot read the state dir or "
                f".env; {network}"}
    if box.mode == "off":
        return {**report, "state": "off", "detail": "off (MIMIKIT_SHELL_SANDBOX=off): shell "
                "commands run unconfined as this user"}
    if box.mode != "auto":
        return {**report, "state": "fail", "detail": f"none: {box.missing}, so shell commands "
                f"are refused (MIMIKIT_SHELL_SANDBOX={box.mode})",
                "fix": f"{box.fix}, or set MIMIKIT_SHELL_SANDBOX=auto or off"}
    return {**report, "state": "warn", "detail": f"none: {box.missing}, so shell commands run "
            "unconfined as this user", "fix": f"{box.fix}, or set MIMIKIT_SHELL_SANDBOX=off to "
            "silence this"}


def _held_in_work(settings: Settings) -> str | None:
    """Which hidden path (the state dir, a .env) lies inside the work dir, if one does: Landlock
    without a mount namespace cannot let commands add or remove entries of the folder holding
    it."""
    work = settings.work_dir.resolve()
    for name, path in (("the state dir", settings.state_dir.resolve()),
                       *(("a .env", env) for env in existing([work / ".env",
                                                             Path.cwd() / ".env"]))):
        if path != work and path.is_relative_to(work):
            return name
    return None
