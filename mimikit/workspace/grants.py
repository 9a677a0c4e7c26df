"""What a shell command confined by Landlock may touch, and the command line that confines it.

It may write in the work dir and in a private temporary directory made for it; read and run
the system's files, this Python's and the programs on ``PATH``; read /proc, /sys and git's
configuration; use /dev/null and the like. Nothing else: not the rest of ``$HOME``, not /tmp
or /dev/shm, not the state dir, not the ``.env`` files.

Landlock only grants, and a right granted on a folder holds for everything beneath it. Where
the command can have a mount namespace of its own (root, or user namespaces allowed), the
hidden paths (the state dir inside the work dir, as by default; a ``.env`` there) are covered
in it (``mountns``) and every place is granted whole. Where it cannot (an unprivileged
container), a folder that holds a hidden path is not granted as a whole: each of its entries
is, but the hidden one, and the folder itself may only be listed. What this leaves out, said
where the sandbox is reported: an entry such a folder gains while the command runs gets no
right (the command can neither make a new file or folder at that level nor remove one; inside
the entries it found, it can), and the names in the hidden folder can be listed, though not
read.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mimikit.workspace.landlock import ABI_ADDS

LAUNCHER = str(Path(__file__).with_name("landlock.py"))
RULES_FILE = ".landlock-rules.json"  # in the private temporary directory; read and deleted
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
          "/nix", "/snap")
VIEWED = ("/proc", "/sys")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
TOOL_FOLDERS = ("bin", "sbin", "shims")  # a PATH entry so named brings the folder it lies in
# The only files of $HOME a command reads: git stops at a configuration it cannot read.
HOME_READ = (".gitconfig", ".config/git")
# What a ruleset covers from which ABI on, and what an older one leaves open.
COVERED = ((1, "files"), (4, "TCP connect and bind"), (6, "signals and abstract UNIX sockets"))
GAPS = ((2, "moving files between folders, which is refused"), (3, "truncating files"),
        (4, "TCP"), (5, "device ioctls"),
        (6, "signals to this user's other processes and abstract UNIX sockets"))


Rule = tuple[str, str]  # (path, a name of ``landlock.ACCESS``)


def carve(place: Path, access: str, hidden: Sequence[Path]) -> list[Rule]:
    """Rules giving ``access`` to all of ``place`` but the ``hidden`` paths beneath it.

    A folder holding a hidden path gets ``list`` only, and each of its other entries the
    access, in turn carved; symbolic links among them are left out (a rule would follow one
    out of the folder).
    """
    if any(place == path or place.is_relative_to(path) for path in hidden):
        return []
    inside = [path for path in hidden if path.is_relative_to(place)]
    if not inside:
        return [(str(place), access)]
    try:
        entries = sorted(place.iterdir())
    except OSError:  # cannot be listed: nothing in it is granted
        return []
    rules = [(str(place), "list")]
    for entry in entries:
        if not entry.is_symlink():
            rules += carve(entry, access, inside)
    return rules


def readable_places(work: Path, path_env: str) -> list[Path]:
    """The folders a command reads and runs programs from: the system, this Python (its
    environment and the installation it was made from), and the ``PATH`` entries, with the
    folder of a ``bin`` among them (a tool's libraries lie beside its programs) unless that is
    ``$HOME``, ``/`` or holds the work dir; and git's configuration in ``$HOME``."""
    places = [Path(p) for p in (*SYSTEM, sys.prefix, sys.base_prefix, sys.exec_prefix,
                                sys.base_exec_prefix)]
    barred = {Path.home().resolve(), Path("/")}
    for entry in path_env.split(os.pathsep):
        if not os.path.isabs(entry):
            continue  # "." and the like would follow the working directory
        place = Path(os.path.realpath(entry))
        places.append(place)
        if place.name in TOOL_FOLDERS and place.parent not in barred \
                and not work.is_relative_to(place.parent):
            places.append(place.parent)
    places.append(Path(os.path.realpath("/etc/resolv.conf")))  # often a link into /run
    places += [Path.home() / name for name in HOME_READ]
    found: list[Path] = []
    for place in places:
        real = Path(os.path.realpath(place))
        if real.exists() and real not in found:
            found.append(real)
    return found


def landlock_rules(work: Path, tmp: Path, hidden: Sequence[Path], path_env: str) -> list[Rule]:
    """Every rule of a command run in ``work`` with the private temporary directory ``tmp``."""
    rules = carve(work, "write", hidden) + carve(tmp, "write", hidden)
    for place in readable_places(work, path_env):
        rules += carve(place, "read", hidden)
    for viewed in VIEWED:
        rules += carve(Path(viewed), "view", hidden)
    return rules + [(device, "device") for device in DEVICES]


def outermost(paths: Sequence[Path]) -> list[Path]:
    """Those of ``paths`` that lie in none of the others (covering a folder covers them)."""
    return [path for path in paths
            if not any(path != other and path.is_relative_to(other) for other in paths)]


def landlock_argv(argv: list[str], work: Path, tmp: Path, hidden: Sequence[Path],
                  path_env: str, network: bool, namespace: bool) -> list[str]:
    """The command line running ``argv`` confined, the ``hidden`` paths covered in a mount
    namespace of its own (``namespace``) or left out of the grants; its rules go in a file in
    ``tmp`` (a long list would not fit in one argument)."""
    rules_file = tmp / RULES_FILE
    rules = landlock_rules(work, tmp, () if namespace else hidden, path_env)
    hide = [str(path) for path in outermost(hidden)] if namespace else None
    rules_file.write_text(json.dumps({"parent": os.getpid(), "network": network,
                                      "rules": rules, "hide": hide}), encoding="utf-8")
    # -I -S: no environment variable, user site or site-packages slows or changes its start.
    return [sys.executable, "-I", "-S", LAUNCHER, str(rules_file), "--", *argv]


def landlock_label(abi: int, namespace: bool) -> str:
    """The sandbox's name as shown: "Landlock ABI 7 with a private mount namespace", or "Landlock
    ABI 7 (entries granted one by one)" where commands cannot have one."""
    return f"Landlock ABI {abi} " + ("with a private mount namespace" if namespace
                                     else "(entries granted one by one)")


def _hiding(no_namespace: str | None, held: str | None) -> list[str]:
    """How the state dir and .env are kept out of reach, in words (see ``landlock_limits``)."""
    if no_namespace is None:
        return ["the state dir and .env files are covered in the commands' own mount namespace "
                "(by an empty read-only folder, by a file that cannot be opened), so that the "
                "work dir is granted whole"]
    parts = [f"no private mount namespace ({no_namespace}): a folder holding the state dir or "
             "a .env is granted entry by entry"]
    if held:
        parts.append(f"{held} lies in the work dir, so commands cannot add or remove entries "
                     "beside it (write_file can)")
    return parts


def landlock_limits(abi: int, network: bool, no_namespace: str | None,
                    held: str | None) -> dict[str, Any]:
    """What Landlock ``abi`` confines, in words: {state, detail, fix?} of the sandbox report.

    Args:
        abi: the kernel's Landlock ABI.
        network: whether commands may use the network.
        no_namespace: why commands get no mount namespace of their own (None: they do).
        held: the hidden path the work dir holds, such as "the state dir", if any.
    """
    covered = ", ".join(what for since, what in COVERED if abi >= since)
    parts = [f"{landlock_label(abi, no_namespace is None)}, covering {covered}: shell commands "
             "write only to the work dir and a private temporary directory, read only those "
             "and the system's, Python's and PATH's files, cannot read the state dir or .env, "
             "and what they start ends with them", *_hiding(no_namespace, held)]
    if network:
        parts.append("network on")
    elif abi >= 4:
        parts.append("network off: TCP connect and bind are refused (UDP and UNIX sockets "
                     "with a path are not covered; MIMIKIT_SHELL_NETWORK=on allows it)")
    else:
        parts.append("the network is NOT off: closing TCP needs Landlock ABI 4 (Linux 6.7)")
    gaps = [f"{what} (ABI {since}, Linux {ABI_ADDS[since][0]})" for since, what in GAPS
            if abi < since]
    if gaps:
        parts.append(f"not covered by ABI {abi}: {', '.join(gaps)}")
    limits: dict[str, Any] = {"state": "ok", "detail": "; ".join(parts)}
    if not network and abi < 4:
        limits.update(state="warn", fix="install bubblewrap (`apt-get install bubblewrap`) or "
                      "run Linux 6.7 or later, or set MIMIKIT_SHELL_NETWORK=on to accept it")
    return limits
