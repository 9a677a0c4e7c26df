"""A mount namespace of its own for a command confined by Landlock, in which the state dir and
the ``.env`` files are covered: Landlock can then grant the work dir whole, though they lie in it.

Landlock only grants; a mount namespace hides. Covered, a folder is an empty read-only one and
a file is /dev/null on a mount without devices, which cannot be opened. The command cannot
uncover them: it has no capabilities left, and Landlock refuses mounts to whoever it confines.
The standard library alone: the Landlock program (``landlock.py``) loads this file by path.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterable
from functools import cache
from typing import Any

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 1 << 10, 1 << 11, 1 << 12, 1 << 14
MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1 << 18, 1 << 21, 1 << 24
SEALED = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC  # nodev: no device there can be opened


@cache
def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _unshare(flags: int, what: str) -> None:
    if _libc().unshare(ctypes.c_int(flags)) < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"unshare({what}): {os.strerror(code)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    encoded = [None if text is None else text.encode() for text in (source, target, fstype, data)]
    if _libc().mount(*encoded[:3], ctypes.c_ulong(flags), encoded[3]) < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount on {target}: {os.strerror(code)}")


def _atime_flags(path: str) -> int:
    """The access time flags of the mount holding ``path``, which a bind remount repeats (in a
    user namespace it may not change them)."""
    held = os.statvfs(path).f_flag
    flags = held & (MS_NOATIME | MS_NODIRATIME)  # their ST_ and MS_ values agree
    if not held & MS_NOATIME:
        flags |= MS_RELATIME if held & os.ST_RELATIME else MS_STRICTATIME
    return flags


def _cover(path: str) -> None:
    """Put an empty read-only folder over the folder ``path``, or over the file ``path`` one
    that cannot be opened."""
    if os.path.isdir(path):
        _mount("tmpfs", path, "tmpfs", SEALED, "mode=0755")
    else:
        _mount("/dev/null", path, None, MS_BIND)
        _mount(None, path, None, MS_BIND | MS_REMOUNT | SEALED | _atime_flags("/dev/null"))


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="ascii") as file:
            file.write(text)
    except OSError as error:  # root without CAP_SETFCAP, for one, may not map itself
        raise OSError(error.errno, f"writing {text!r} to {path}: {error.strerror}") from None


def private_mounts(hide: Iterable[str]) -> None:
    """Give this (single-threaded) process a mount namespace of its own in which each path of
    ``hide`` is covered; the host's mounts stay as they are.

    With the privilege (root) the namespace is made directly; without it, in a user namespace
    that maps this process's user and group to themselves.

    Raises:
        OSError: the kernel refused the namespace or a mount.
    """
    uid, gid = os.geteuid(), os.getegid()
    try:
        _unshare(CLONE_NEWNS, "CLONE_NEWNS")
    except OSError as error:
        if error.errno != errno.EPERM:
            raise
        _unshare(CLONE_NEWUSER | CLONE_NEWNS, "CLONE_NEWUSER|CLONE_NEWNS")
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):
            _write(f"/proc/self/{name}", text)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # so that no mount made here reaches the host
    for path in hide:
        _cover(path)
