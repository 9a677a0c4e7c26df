"""Landlock, the Linux kernel's own sandbox, over its three system calls; and the small program
that runs a Worker shell command under it where bubblewrap is missing.

The shell runs ``python -I -S landlock.py RULES -- bash -c COMMAND``: this file, run by path
with the standard library alone (and ``mountns.py`` beside it) so that it starts in
milliseconds whatever the environment.
The program

- starts the command in a child that, before it runs it, takes a private mount namespace where
  RULES ask for one (the paths to hide covered there: a folder by an empty read-only one, a
  file by one that cannot be opened), gives up every capability, so that a command run by
  root cannot undo the rest (load a kernel module, make a device node for the disk), and
  restricts itself with a Landlock ruleset: each path of RULES gets the access it names, the
  rest of the file system none; TCP connect and bind are refused unless the network is on (ABI
  4); signals and abstract UNIX sockets do not reach out of the sandbox (ABI 6), to this
  program neither;
- is the reaper of what the command starts, so that orphans (``setsid``, double forks) come
  back to it and are killed when the command ends, when the program is stopped (a timeout or
  a cancel), or when the worker that started it dies.
"""

from __future__ import annotations

import ctypes
import errno
import importlib.util
import json
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, NoReturn

# These numbers are the same on every architecture (they came after the tables were unified).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 36, 38
CAPABILITY_VERSION_3 = 0x20080522

# File system rights: ABI 1 has the first 13; REFER comes with ABI 2, TRUNCATE 3, IOCTL_DEV 5.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
MAKE_CHAR, MAKE_BLOCK = 1 << 6, 1 << 11
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # those a file can hold
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
ACCESS = {
    "read": READ_FILE | READ_DIR | EXECUTE,  # the system, Python, the programs on PATH
    "view": READ_FILE | READ_DIR,  # /proc, /sys
    "list": READ_DIR,  # a folder holding a hidden path: the names in it, nothing more
    "device": READ_FILE | WRITE_FILE | TRUNCATE,  # /dev/null and the like
    # All but making device nodes: a node for the disk would read around every rule.
    "write": ((1 << 16) - 1) & ~(MAKE_CHAR | MAKE_BLOCK),
}
# What each ABI adds, and the first Linux release that has it.
ABI_ADDS = {1: ("5.13", "files"), 2: ("5.19", "moving files between folders"),
            3: ("6.2", "truncating files"), 4: ("6.7", "TCP connect and bind"),
            5: ("6.10", "device ioctls"), 6: ("6.12", "signals and abstract UNIX sockets"),
            7: ("6.15", "audit logging")}
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


# --- the kernel interface -----------------------------------------------------------------------


@cache
def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _checked(result: int) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def _syscall(number: int, *args: Any) -> int:
    return _checked(_libc().syscall(ctypes.c_long(number), *args))


def _prctl(option: int, value: int) -> None:
    _checked(_libc().prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                           ctypes.c_ulong(0)))


def abi_version() -> int:
    """The Landlock ABI this kernel offers; 0 where it has none (not Linux, a kernel before
    5.13 or without Landlock among its LSMs, or a seccomp filter that refuses the call)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                        ctypes.c_long(CREATE_RULESET_VERSION))
    except OSError:
        return 0


def handled_rights(abi: int) -> int:
    """The file system rights a ruleset of ``abi`` controls (every one that ABI knows)."""
    rights = (1 << 13) - 1
    for since, right in ((2, REFER), (3, TRUNCATE), (5, IOCTL_DEV)):
        if abi >= since:
            rights |= right
    return rights


def _ruleset(abi: int, network: bool) -> int:
    """A new ruleset's descriptor: the file system, TCP unless ``network``, the scopes."""
    attr = _RulesetAttr(handled_rights(abi), 0, 0)
    size = 8  # ABI 1 to 3 know the first field only
    if abi >= 4:
        attr.handled_access_net = 0 if network else NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_SIGNAL | (0 if network else SCOPE_ABSTRACT_UNIX_SOCKET)
        size = 24
    return _syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                    ctypes.c_long(0))


def _allow(ruleset: int, path: str, rights: int) -> None:
    """Grant ``rights`` on ``path`` and all beneath it (a path gone meanwhile is left out)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_RIGHTS  # the kernel refuses folder rights on a file
        if rights:
            rule = _PathBeneathAttr(rights, fd)
            _syscall(SYS_ADD_RULE, ctypes.c_long(ruleset), ctypes.c_long(RULE_PATH_BENEATH),
                     ctypes.byref(rule), ctypes.c_long(0))
    finally:
        os.close(fd)


def ruleset(rules: Iterable[tuple[str, str]], network: bool) -> int:
    """A ruleset (a descriptor) granting ``rules``: (path, an ``ACCESS`` name) pairs.

    Raises:
        OSError: the kernel has no Landlock, or refused a rule.
    """
    abi = abi_version()
    if abi < 1:
        raise OSError(errno.EOPNOTSUPP, "this kernel offers no Landlock")
    handled = handled_rights(abi)
    made = _ruleset(abi, network)
    try:
        for path, access in rules:
            _allow(made, path, ACCESS[access] & handled)
    except OSError:
        os.close(made)
        raise
    return made


def enforce(made: int) -> None:
    """Confine this process, and all it starts from now on, to the ruleset ``made``."""
    _prctl(PR_SET_NO_NEW_PRIVS, 1)  # also: no exec ever gives capabilities back
    _syscall(SYS_RESTRICT_SELF, ctypes.c_long(made), ctypes.c_long(0))


def restrict(rules: Iterable[tuple[str, str]], network: bool) -> None:
    """Confine this process and all it starts to ``rules`` (see ``ruleset``)."""
    made = ruleset(rules, network)
    try:
        enforce(made)
    finally:
        os.close(made)


def drop_capabilities() -> None:
    """Give up every capability (root's included); with no_new_privs, for good."""
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    header, data = _CapHeader(CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    _checked(_libc().capset(ctypes.byref(header), data))


# --- the program --------------------------------------------------------------------------------


class _Stopped(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_stopping: list[int] = []


def _on_stop(signum: int, _frame: Any) -> None:
    # Once only: a second stop (the worker dying after a cancel) must not cut the cleanup short.
    if not _stopping:
        _stopping.append(signum)
        raise _Stopped(signum)


def _children() -> list[int]:
    """This process's children (read from /proc: not every kernel lists them per task)."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as file:
                    fields = file.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):  # it ended meanwhile
                continue
            if int(fields[1]) == me:
                found.append(int(name))
    return found


def _end_descendants() -> None:
    """Kill every descendant: each one killed hands its own children over to this reaper."""
    while True:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _hiding(hide: list[str] | None) -> Callable[[], None]:
    """What the child does first: take a mount namespace of its own hiding ``hide`` (nothing
    when None); ``mountns.py`` is loaded by path, as this program runs without its package."""
    if hide is None:
        return lambda: None
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mountns.py")
    spec = importlib.util.spec_from_file_location("mountns", path)
    if spec is None or spec.loader is None:
        raise OSError(errno.ENOENT, f"cannot load {path}")
    mountns = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mountns)
    return lambda: mountns.private_mounts(hide)


def _exec(command: list[str], made: int, hiding: Callable[[], None]) -> NoReturn:
    """In the child: hide what ``hiding`` hides, give up every capability, confine itself,
    then become ``command`` (exit status 126 when it cannot be confined, 127 when it cannot
    start)."""
    try:
        hiding()
        drop_capabilities()
        enforce(made)
    except OSError as error:
        _refuse(error)
    try:
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; a shell must not
            signal.signal(signum, signal.SIG_DFL)
        os.execvp(command[0], command)
    except OSError as error:
        os.write(2, f"mimikit: cannot run {command[0]}: {error.strerror}\n".encode())
    finally:
        os._exit(127)


def _refuse(error: OSError) -> NoReturn:
    os.write(2, f"mimikit: the Landlock sandbox could not be set up ({error}); the command "
                "did not run\n".encode())
    os._exit(126)


def _run(command: list[str], made: int, hiding: Callable[[], None]) -> int:
    """Run ``command`` confined to the ruleset ``made`` (after ``hiding``) to its end, reaping
    the orphans handed over meanwhile; returns its wait status.

    Only the child is confined: this program stays outside the sandbox, where (from ABI 6) the
    command's signals cannot reach it to escape its reaping. It keeps its capabilities until
    the child is started, which needs them for a mount namespace (root).
    """
    pid = os.fork()
    if pid == 0:
        _exec(command, made, hiding)
    os.close(made)
    drop_capabilities()
    while True:
        found, status = os.waitpid(-1, 0)
        if found == pid:
            return status


def _die_like(status: int) -> NoReturn:
    """Exit as the command did: with its code, or killed by its signal."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(os.waitstatus_to_exitcode(status))


def _prepare(spec: dict[str, Any]) -> int:
    """Become the reaper that dies with the worker; the ruleset made."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # the worker's death stops this program
    if os.getppid() != spec["parent"]:  # it died before that was set
        raise _Stopped(signal.SIGTERM)
    return ruleset(((path, access) for path, access in spec["rules"]), spec["network"])


def main(args: list[str]) -> NoReturn:
    """``RULES_FILE -- COMMAND...``: run COMMAND confined to the rules of the JSON file
    (``{"parent": pid, "network": bool, "rules": [[path, access], ...], "hide": [path, ...]
    or null for no mount namespace}``, deleted once read)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _on_stop)
    status = int(signal.SIGTERM)  # a wait status: killed by it, unless the command ran
    try:
        with open(args[0], encoding="utf-8") as file:
            spec = json.load(file)
        os.unlink(args[0])
        try:
            made, hiding = _prepare(spec), _hiding(spec["hide"])
        except OSError as error:
            _refuse(error)
        status = _run(args[2:], made, hiding)
    except _Stopped as stopped:
        status = stopped.signum  # a wait status too
    finally:
        _end_descendants()
    _die_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
