"""The Worker's shell commands in a sandbox: the whole file system read-only but for WORK_DIR,
the state dir and ``.env`` files hidden, a private /tmp, no network unless allowed, and every
process of a command dying with it.

Linux uses bubblewrap (``bwrap``); macOS uses ``sandbox-exec`` with a small profile.
``MIMIKIT_SHELL_SANDBOX`` chooses: ``auto`` uses one when this host has it, ``on`` refuses to
run commands without one, ``off`` runs them unconfined. ``MIMIKIT_SHELL_NETWORK=on`` lets
sandboxed commands reach the network.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from mimikit.config import Settings

SandboxMode = Literal["auto", "on", "off"]
Kind = Literal["bwrap", "sandbox-exec"]
PROBE_TIMEOUT_SECONDS = 10.0
NETWORK_NOTE = "the network is off in the sandbox (MIMIKIT_SHELL_NETWORK=on allows it)"
# What curl, git, wget, Python, Node and the resolver say when they cannot reach a host.
NETWORK_FAILURE = re.compile(
    r"could not resolve|temporary failure in name resolution|name or service not known|"
    r"nodename nor servname|getaddrinfo|eai_again|enotfound|network is unreachable|enetunreach|"
    r"connection refused|econnrefused|couldn't connect|failed to connect|no route to host|"
    r"failed to establish a new connection|unable to resolve", re.IGNORECASE)
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

    @property
    def refusal(self) -> str | None:
        """The error a shell command gets when a sandbox is required and there is none."""
        if self.mode != "on" or self.kind is not None:
            return None
        return (f"shell commands cannot run here: MIMIKIT_SHELL_SANDBOX=on requires a sandbox "
                f"and {self.missing}; {self.fix}, or set MIMIKIT_SHELL_SANDBOX=auto or off. "
                "The file tools (read_file, write_file, list_files) still work.")

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
        masked = _existing(hidden)
        if self.kind == "bwrap" and self.program:
            boxed = bwrap_argv(self.program, argv, root, masked, self.network,
                               shown=programs_in_tmp(env.get("PATH", "")))
            yield boxed, {**env, "TMPDIR": "/tmp"}  # the private one
        elif self.kind == "sandbox-exec" and self.program:
            with tempfile.TemporaryDirectory(prefix="mimikit-shell-") as tmp:
                real_tmp = os.path.realpath(tmp)
                yield (seatbelt_argv(self.program, argv, root, real_tmp, masked, self.network),
                       {**env, "TMPDIR": real_tmp})
        else:
            yield argv, env

    def note(self, exit_code: int | None, output: str) -> str | None:
        """A note for the model when a failed command looks like it needed the network."""
        if self.kind is None or self.network or exit_code in (0, None):
            return None
        return NETWORK_NOTE if NETWORK_FAILURE.search(output) else None


# --- choosing -----------------------------------------------------------------------------------


def choose_sandbox(mode: SandboxMode, network: bool = False) -> Sandbox:
    """The sandbox ``mode`` gives on this host (``off``: none, without looking)."""
    if mode == "off":
        return Sandbox(mode, None, network=network)
    kind, program, missing, fix = _find()
    return Sandbox(mode, kind, program, network, missing, fix)


def sandbox_for(settings: Settings) -> Sandbox:
    """The sandbox of ``MIMIKIT_SHELL_SANDBOX`` and ``MIMIKIT_SHELL_NETWORK`` on this host."""
    return choose_sandbox(settings.shell_sandbox, settings.shell_network)


def _find() -> tuple[Kind | None, str | None, str | None, str | None]:
    """(kind, program, why there is none, how to get one) on this platform."""
    if sys.platform.startswith("linux"):
        program = shutil.which("bwrap")
        if program is None:
            return None, None, "bubblewrap (bwrap) is not installed", INSTALL_BWRAP
        return _working("bwrap", program, "allow user namespaces (in a container: run it with "
                        "a seccomp profile that permits them), or use MIMIKIT_WORKER_BACKEND=codex")
    if sys.platform == "darwin":
        program = shutil.which("sandbox-exec") or "/usr/bin/sandbox-exec"
        if not os.access(program, os.X_OK):
            return None, None, "sandbox-exec is missing", "restore /usr/bin/sandbox-exec (macOS)"
        return _working("sandbox-exec", program, "check that sandbox-exec works for this user")
    return (None, None, f"no sandbox is known on {sys.platform}",
            "run Workers on Linux (bubblewrap) or macOS, or use MIMIKIT_WORKER_BACKEND=codex")


def _working(kind: Kind, program: str, fix: str) -> tuple[Kind | None, str, str | None,
                                                          str | None]:
    problem = _probe(kind, program)
    if problem:
        return None, program, f"{program} cannot make a sandbox here ({problem})", fix
    return kind, program, None, None


@lru_cache(maxsize=8)
def _probe(kind: Kind, program: str) -> str | None:
    """Why ``program`` cannot run ``true`` in a sandbox, or None when it can (asked once)."""
    true = shutil.which("true") or "/usr/bin/true"
    here = Path(os.path.realpath(tempfile.gettempdir()))
    if kind == "bwrap":
        argv = bwrap_argv(program, [true], here, [], network=False)
    else:
        argv = seatbelt_argv(program, [true], here, str(here), [], network=False)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if done.returncode != 0:
        return (done.stderr.strip() or f"exit status {done.returncode}").splitlines()[-1]
    return None


def _existing(paths: Sequence[Path]) -> list[Path]:
    """The real paths of those of ``paths`` that exist, once each."""
    found: list[Path] = []
    for path in paths:
        real = Path(os.path.realpath(path))
        if real.exists() and real not in found:
            found.append(real)
    return found


# --- command lines ------------------------------------------------------------------------------


def programs_in_tmp(path: str) -> list[Path]:
    """Where the programs a command may run lie under /tmp, which the sandbox replaces with a
    private one: this Python environment (a virtualenv made in /tmp) and the ``PATH``
    directories there (a ``bin`` directory with the environment it belongs to)."""
    places = [Path(sys.prefix), Path(sys.base_prefix)]
    for entry in filter(None, path.split(os.pathsep)):
        place = Path(entry)
        places.append(place.parent if place.name == "bin" else place)
    return [place for place in _existing(places)
            if place.is_relative_to("/tmp") and place != Path("/tmp")]


def bwrap_argv(program: str, argv: list[str], root: Path, hidden: Sequence[Path],
               network: bool, shown: Sequence[Path] = ()) -> list[str]:
    """The bubblewrap command line running ``argv`` in the work directory ``root``.

    Mounts are applied in order: the programs ``shown`` from the real /tmp read-only over the
    private one, the work dir bound writable over the read-only root and the private /tmp, then
    the hidden paths covered (the state dir often lies inside it).
    A new PID namespace with its own /proc keeps the other processes, and the runtime's
    environment in /proc/PID/environ, out of sight; when bwrap dies (the process group is
    killed on a timeout or a cancel) the kernel kills everything left in that namespace, even
    a process that left the group with ``setsid``.
    """
    args = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp"]
    for place in shown:
        args += ["--ro-bind", str(place), str(place)]
    if not network and Path("/run").is_dir():
        args += ["--tmpfs", "/run"]  # its sockets (docker, dbus) would be a way around no network
    args += ["--bind", str(root), str(root)]
    for path in hidden:
        if path.is_dir():
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            args += ["--ro-bind", "/dev/null", str(path)]  # nodev: opening it is refused
    # --cap-drop ALL: run by root, bwrap would otherwise leave the capabilities that undo it all.
    args += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL",
             "--chdir", str(root)]
    if not network:
        args.append("--unshare-net")
    return [*args, "--", *argv]


# A sandbox-exec (Seatbelt) profile: later rules win over earlier ones. Not tested here (no
# macOS host runs the tests), so it stays small: writes only to the work dir and a private
# TMPDIR, the hidden paths neither readable nor writable, the network per the setting.
SEATBELT_PROFILE = """(version 1)
(allow default)
(deny file-write*)
(allow file-write* (subpath (param "WORK")) (subpath (param "TMP"))
       (regex #"^/dev/(null|zero|tty.*|fd/.*)$"))
"""


def seatbelt_argv(program: str, argv: list[str], root: Path, tmp: str, hidden: Sequence[Path],
                  network: bool) -> list[str]:
    """The ``sandbox-exec`` command line running ``argv`` (paths are passed as parameters)."""
    profile = SEATBELT_PROFILE + "".join(
        f'(deny file-read* file-write* (subpath (param "HIDE{i}")))\n' for i in range(len(hidden)))
    if not network:
        profile += "(deny network*)\n"
    params = [f"WORK={root}", f"TMP={tmp}", *(f"HIDE{i}={p}" for i, p in enumerate(hidden))]
    return [program, "-p", profile, *(part for p in params for part in ("-D", p)), *argv]


# --- the report ---------------------------------------------------------------------------------


def sandbox_report(settings: Settings) -> dict[str, Any]:
    """Which sandbox Worker shell commands run in on this host, for status and doctor.

    Returns:
        {mode, kind (bwrap|sandbox-exec|codex|off|none), network, state (ok|off|warn|fail),
        detail, fix?}.
    """
    if settings.worker_backend == "codex":
        return {"mode": settings.shell_sandbox, "kind": "codex", "network": None, "state": "ok",
                "detail": "the codex backend runs commands in codex exec's own workspace-write "
                          "sandbox (MIMIKIT_SHELL_SANDBOX applies to the llm backend)"}
    box = sandbox_for(settings)
    report: dict[str, Any] = {"mode": box.mode, "kind": box.kind or ("off" if box.mode == "off"
                                                                     else "none"),
                              "network": box.network}
    if box.kind is not None:
        network = "network on" if box.network else \
            "network off (MIMIKIT_SHELL_NETWORK=on allows it)"
        return {**report, "state": "ok", "detail": f"{box.kind} ({box.program}): shell commands "
                "write only to the work dir and a private /tmp, cannot read the state dir or "
                f".env; {network}"}
    if box.mode == "off":
        return {**report, "state": "off", "detail": "off (MIMIKIT_SHELL_SANDBOX=off): shell "
                "commands run unconfined as this user"}
    if box.mode == "on":
        return {**report, "state": "fail", "detail": f"none: {box.missing}, so shell commands "
                "are refused (MIMIKIT_SHELL_SANDBOX=on)",
                "fix": f"{box.fix}, or set MIMIKIT_SHELL_SANDBOX=auto or off"}
    return {**report, "state": "warn", "detail": f"none: {box.missing}, so shell commands run "
            "unconfined as this user", "fix": f"{box.fix}, or set MIMIKIT_SHELL_SANDBOX=off to "
            "silence this"}
