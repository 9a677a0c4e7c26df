"""How Landlock keeps the state dir and .env out of reach where they lie in the work dir: in a
mount namespace of the command's own, covered, so that the work dir is granted whole (where
one can be made: root, or user namespaces allowed), or by granting the work dir's entries one by
one, all but them (where none can: an unprivileged container), which leaves no entry to be
added or removed beside them; and how the sandbox's label and limits say which is in force."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_landlock import (
    ABI,
    ENTRIES,
    LANDLOCK,
    NAMESPACE,
    _default_layout,
    needs_landlock,
    needs_namespace,
)
from test_sandbox import MEMORY

from mimikit.workspace.grants import carve, landlock_limits
from mimikit.workspace.local import Workspace
from mimikit.workspace.sandbox import ENTRIES_NOTE, LANDLOCK_NOTE, NETWORK_NOTE

pytestmark = needs_landlock


@pytest.fixture
def entries(tmp_path: Path) -> Workspace:
    """The default layout under Landlock granting entries one by one."""
    return _default_layout(tmp_path, ENTRIES)


@pytest.fixture
def hiding(tmp_path: Path) -> Workspace:
    """The default layout under Landlock with a mount namespace of its own."""
    return _default_layout(tmp_path, LANDLOCK)


# --- the two ways -------------------------------------------------------------------------------


def test_entry_by_entry_nothing_is_added_beside_the_state_dir_but_by_write_file_and_a_note_says_so(
        entries):
    result = entries.shell("echo x > made-here.txt")
    assert result["exitCode"] != 0 and not (entries.root / "made-here.txt").exists()
    assert result["note"] == f"{LANDLOCK_NOTE}{ENTRIES_NOTE}; {NETWORK_NOTE}"
    entries.write_file("made-here.txt", "by write_file\n")
    again = entries.shell("echo by shell >> made-here.txt && cat made-here.txt")
    assert again["stdout"] == "by write_file\nby shell\n" and "note" not in again


@needs_namespace
def test_in_a_mount_namespace_files_and_folders_are_made_and_removed_beside_the_hidden_state_dir(
        hiding):
    result = hiding.shell(
        "echo hello > new.txt && mkdir build && python3 -c 'print(6 * 7)' > out.txt && "
        "python3 -m venv --without-pip .venv && rm notes.txt && mv src source && ls -A && "
        "ls -A .mimikit && echo listed; cat .mimikit/memory.md; echo planted > .mimikit/memory.md; "
        "rm -rf .mimikit; echo x > /tmp/x-$$; echo x > ~/x-$$; echo pid=$$")
    pid = result["stdout"].rsplit("pid=", 1)[1].strip()
    assert result["stdout"].startswith(".env\n.mimikit\n.venv\nbuild\nnew.txt\nout.txt\nsource\n"
                                       "listed\n"), result  # .mimikit seen empty
    assert (hiding.root / "new.txt").read_text() == "hello\n"
    assert (hiding.root / "out.txt").read_text() == "42\n"
    assert (hiding.root / "build").is_dir() and (hiding.root / ".venv" / "bin").is_dir()
    assert not (hiding.root / "notes.txt").exists() and (hiding.root / "source").is_dir()
    assert MEMORY not in result["stdout"]
    assert "cat: .mimikit/memory.md: No such file or directory" in result["stderr"]
    assert ".mimikit/memory.md: Read-only file system" in result["stderr"]
    assert "cannot remove '.mimikit': Device or resource busy" in result["stderr"]
    assert f"/tmp/x-{pid}: Permission denied" in result["stderr"]
    assert f"{Path.home()}/x-{pid}: Permission denied" in result["stderr"]
    assert not Path(f"/tmp/x-{pid}").exists() and not (Path.home() / f"x-{pid}").exists()
    assert (hiding.root / ".mimikit" / "memory.md").read_text() == MEMORY
    assert sorted(p.name for p in (hiding.root / ".mimikit").iterdir()) == ["memory", "memory.md"]
    with open("/proc/self/mountinfo", encoding="utf-8") as mounts:  # the host's stay as they were
        assert str(hiding.root) not in mounts.read()


# Root giving up its capabilities but those of ``argv[2]`` (bits): without CAP_SYS_ADMIN it
# cannot make a mount namespace directly; with CAP_SETFCAP it may map itself (uid 0) into a user
# namespace and make one there. ``argv[3]`` "chosen": the sandbox found; "forced": Landlock with
# a mount namespace whether one can be made or not.
WITHOUT_SYS_ADMIN = """
import ctypes, json, os, sys
from pathlib import Path
libc = ctypes.CDLL(None, use_errno=True)
kept, PR_SET_NO_NEW_PRIVS = int(sys.argv[2]), 38
libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # so that no program it runs gets the rest back
header = (ctypes.c_uint32 * 2)(0x20080522, 0)
assert libc.capset(header, (ctypes.c_uint32 * 6)(kept, kept, 0, 0, 0, 0)) == 0
from mimikit.workspace.landlock import abi_version
from mimikit.workspace.local import Workspace
from mimikit.workspace.sandbox import Sandbox, choose_sandbox
work = Path(sys.argv[1], "work")
(work / ".mimikit").mkdir(parents=True)
(work / ".mimikit" / "memory.md").write_text("secret")
box = choose_sandbox("landlock") if sys.argv[3] == "chosen" else \\
    Sandbox("landlock", "landlock", sys.executable, abi=abi_version())
ran = Workspace(work, private=(work / ".mimikit",), sandbox=box).shell(
    "echo hello > new.txt && cat new.txt && id -u; cat .mimikit/memory.md; "
    "readlink /proc/self/ns/user >&2")
print(json.dumps({"label": box.label, "exit": ran["exitCode"], "stdout": ran["stdout"],
                  "stderr": ran["stderr"]}))
"""
CAP_SETFCAP = 31
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="it gives up root's capabilities")


def _without_sys_admin(tmp_path: Path, kept: int, sandbox: str) -> dict:
    done = subprocess.run([sys.executable, "-c", WITHOUT_SYS_ADMIN, str(tmp_path), str(kept),
                           sandbox], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_namespace
@needs_root
def test_without_cap_sys_admin_the_mount_namespace_is_made_in_a_user_namespace(tmp_path):
    seen = _without_sys_admin(tmp_path, 1 << CAP_SETFCAP, "chosen")
    assert seen["label"] == f"Landlock ABI {ABI} with a private mount namespace"
    assert seen["stdout"] == "hello\n0\n" and (tmp_path / "work" / "new.txt").exists()
    assert "cat: .mimikit/memory.md: No such file or directory" in seen["stderr"]
    assert seen["stderr"].splitlines()[-1] != os.readlink("/proc/self/ns/user")


@needs_root
def test_a_command_whose_mount_namespace_cannot_be_made_does_not_run(tmp_path):
    seen = _without_sys_admin(tmp_path, 0, "forced")  # root without CAP_SETFCAP cannot map itself
    assert seen["exit"] == 126 and seen["stdout"] == ""
    assert seen["stderr"].startswith("mimikit: the Landlock sandbox could not be set up")
    assert "/proc/self/uid_map: Operation not permitted" in seen["stderr"]
    assert not (tmp_path / "work" / "new.txt").exists()
    without = _without_sys_admin(tmp_path / "again", 0, "chosen")  # so entries are granted
    assert without["label"] == f"Landlock ABI {ABI} (entries granted one by one)"
    assert "new.txt: Permission denied" in without["stderr"]


def test_a_folder_holding_a_hidden_path_is_granted_entry_by_entry(tmp_path):
    work = tmp_path / "work"
    for folder in ("a/deep/.mimikit", "a/side", "b"):
        (work / folder).mkdir(parents=True)
    (work / ".env").write_text("x")
    (work / "top.txt").write_text("x")
    (work / "link").symlink_to("/")
    rules = carve(work, "write", [work / "a" / "deep" / ".mimikit", work / ".env"])
    assert rules == [(str(work), "list"), (str(work / "a"), "list"),
                     (str(work / "a" / "deep"), "list"), (str(work / "a" / "side"), "write"),
                     (str(work / "b"), "write"), (str(work / "top.txt"), "write")]


def test_the_label_and_the_limits_say_which_way_the_state_dir_is_hidden():
    assert LANDLOCK.label == f"Landlock ABI {ABI} " + (
        "with a private mount namespace" if NAMESPACE else "(entries granted one by one)")
    assert ENTRIES.label == f"Landlock ABI {ABI} (entries granted one by one)"
    hidden = landlock_limits(ABI, False, None, None)["detail"]
    assert hidden.startswith(f"Landlock ABI {ABI} with a private mount namespace, covering files")
    assert "the state dir and .env files are covered in the commands' own mount namespace" in hidden
    granted = landlock_limits(ABI, False, "turned off", "the state dir")["detail"]
    assert granted.startswith(f"Landlock ABI {ABI} (entries granted one by one), covering files")
    assert "no private mount namespace (turned off): a folder holding the state dir or a .env " \
           "is granted entry by entry; the state dir lies in the work dir, so commands cannot " \
           "add or remove entries beside it (write_file can)" in granted
