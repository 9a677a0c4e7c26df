"""The bubblewrap command line of a Worker shell command: the whole file system read-only but
for WORK_DIR, the state dir and ``.env`` files covered, a private /tmp, its own PID namespace,
no network unless allowed."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path


def existing(paths: Sequence[Path]) -> list[Path]:
    """The real paths of those of ``paths`` that exist, once each."""
    found: list[Path] = []
    for path in paths:
        real = Path(os.path.realpath(path))
        if real.exists() and real not in found:
            found.append(real)
    return found


def programs_in_tmp(path: str) -> list[Path]:
    """Where the programs a command may run lie under /tmp, which the sandbox replaces with a
    private one: this Python environment (a virtualenv made in /tmp) and the ``PATH``
    directories there (a ``bin`` directory with the environment it belongs to)."""
    places = [Path(sys.prefix), Path(sys.base_prefix)]
    for entry in filter(None, path.split(os.pathsep)):
        place = Path(entry)
        places.append(place.parent if place.name == "bin" else place)
    return [place for place in existing(places)
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
