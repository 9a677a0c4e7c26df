"""The Worker's workspace: paths stay inside the work directory, commands leave no process."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from processes import pid_alive

from mimikit.exceptions import ToolError
from mimikit.workspace.local import Workspace
from mimikit.workspace.procgroup import live_process_groups
from mimikit.workspace.written import SHOWN_COPY_BYTES, SHOWN_TEXT_BYTES, WATCHED_FILES


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "work"
    root.mkdir()
    return Workspace(root, shell_timeout_default=10, output_limit_bytes=1000)


def test_read_file_refuses_parent_escape(ws: Workspace) -> None:
    with pytest.raises(ToolError, match=r"'\.\./\.\./etc/passwd' is outside the work directory"):
        ws.read_file("../../etc/passwd")


def test_read_file_refuses_absolute_path_outside_root(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="outside the work directory"):
        ws.read_file("/etc/passwd")


def test_absolute_path_inside_root_is_accepted(ws: Workspace) -> None:
    ws.write_file("a.txt", "x")
    assert ws.read_file(str(ws.root / "a.txt")) == "x"


def test_symlink_pointing_outside_root_is_refused(ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (ws.root / "link").symlink_to(tmp_path)
    with pytest.raises(ToolError, match="symlink"):
        ws.read_file("link/secret.txt")
    with pytest.raises(ToolError, match="symlink"):
        ws.write_file("link/new.txt", "x")
    assert not (tmp_path / "new.txt").exists()


def test_an_existing_file_is_replaced_only_once_the_run_has_read_it(ws: Workspace) -> None:
    (ws.root / "todo.md").write_text("buy milk\n")
    with pytest.raises(ToolError, match=r"'todo.md' already exists \(9 bytes\): append_file "
                                        r"adds to its end, rename renames or moves it; to "
                                        r"replace what it holds, read_file it first"):
        ws.write_file("todo.md", "tasks.md")
    assert (ws.root / "todo.md").read_text() == "buy milk\n"
    assert ws.read_file("todo.md") == "buy milk\n"
    ws.write_file("todo.md", "buy milk\ncall mom\n")
    ws.write_file("todo.md", "buy bread\n")  # written by this run: it knows what it holds
    assert (ws.root / "todo.md").read_text() == "buy bread\n"
    (ws.root / "empty.txt").touch()
    ws.write_file("empty.txt", "now full")  # nothing to lose
    assert Workspace(ws.root).write_file("new.txt", "x") == {"path": "new.txt", "bytes": 1}


def test_append_file_adds_a_line_of_its_own_and_makes_a_missing_file(ws: Workspace) -> None:
    (ws.root / "tasks.md").write_text("buy milk\npay rent")
    assert ws.append_file("tasks.md", "walk the dog\n") == {"path": "tasks.md", "bytes": 31}
    assert (ws.root / "tasks.md").read_text() == "buy milk\npay rent\nwalk the dog\n"
    ws.append_file("tasks.md", "feed the cat")  # its last line ended: every count says 4
    assert (ws.root / "tasks.md").read_text().endswith("walk the dog\nfeed the cat\n")
    assert ws.append_file("logs/new.txt", "first") == {"path": "logs/new.txt", "bytes": 5}
    assert ws.append_file("logs/new.txt", "second") == {"path": "logs/new.txt", "bytes": 13}
    assert (ws.root / "logs/new.txt").read_text().splitlines() == ["first", "second"]
    with pytest.raises(ToolError, match="'logs' is a directory"):
        ws.append_file("logs", "x")


def test_reading_a_folder_gives_its_entries_and_a_missing_path_says_how_to_go_on(
        ws: Workspace) -> None:
    (ws.root / "notes").mkdir()
    (ws.root / "notes" / "a.txt").write_text("alpha\n")
    (ws.root / "rent.txt").write_text("pay rent\n")
    assert ws.read(".") == {"directory": ".", "entries": ["notes/", "rent.txt"]}
    assert ws.read("notes") == {"directory": "notes", "entries": ["notes/a.txt"]}
    assert ws.read("rent.txt") == "pay rent\n"
    with pytest.raises(ToolError, match="no such file: 'gone.txt'; use list_files"):
        ws.read("gone.txt")
    with pytest.raises(ToolError, match="outside|escape|work dir"):
        ws.read("..")


def test_rename_moves_a_file_or_folder_and_never_over_another(ws: Workspace) -> None:
    (ws.root / "todo.md").write_text("buy milk\n")
    assert ws.rename("todo.md", "tasks.md") == {"path": "tasks.md", "was": "todo.md"}
    assert not (ws.root / "todo.md").exists()
    with pytest.raises(ToolError, match="'tasks.md' already exists"):  # moved, still unread
        ws.write_file("tasks.md", "x")
    assert (ws.root / "tasks.md").read_text() == "buy milk\n"
    ws.make_dir("archive")
    assert ws.rename("tasks.md", "archive") == {"path": "archive/tasks.md", "was": "tasks.md"}
    assert ws.rename("archive", "old/archive") == {"path": "old/archive", "was": "archive"}
    assert (ws.root / "old/archive/tasks.md").is_file()


def test_copy_copies_a_file_or_folder(ws: Workspace) -> None:
    (ws.root / "shopping.txt").write_text("milk\nbread\n")
    assert ws.copy("shopping.txt", "backup.txt") == {"path": "backup.txt", "from": "shopping.txt",
                                                     "bytes": 11, "text": "milk\nbread\n"}
    assert (ws.root / "backup.txt").read_text() == (ws.root / "shopping.txt").read_text()
    ws.make_dir("old")
    assert ws.copy("shopping.txt", "old")["path"] == "old/shopping.txt"
    assert ws.copy("old", "older") == {"path": "older", "from": "old"}
    assert (ws.root / "older/shopping.txt").read_text() == "milk\nbread\n"


def test_a_copy_shows_what_a_small_text_file_holds_and_no_more(ws: Workspace) -> None:
    """Shown what the copy holds, the 1.5B model said it; a large or binary file is not shown,
    and a file whose text was shown may be written over as one read is."""
    (ws.root / "big.txt").write_text("x" * (SHOWN_COPY_BYTES + 1))
    (ws.root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    assert ws.copy("big.txt", "big2.txt") == {"path": "big2.txt", "from": "big.txt",
                                              "bytes": SHOWN_COPY_BYTES + 1}
    assert "text" not in ws.copy("logo.png", "logo2.png")
    with pytest.raises(ToolError, match="already exists"):
        ws.write_file("big2.txt", "y")  # never shown, never read
    (ws.root / "small.txt").write_text("hi\n")
    assert ws.copy("small.txt", "small2.txt")["text"] == "hi\n"
    ws.write_file("small2.txt", "hello\n")
    assert (ws.root / "small2.txt").read_text() == "hello\n"


@pytest.mark.parametrize(("verb", "done", "into"), [("rename", "renamed", "moved"),
                                                    ("copy", "copied", "copied")])
@pytest.mark.parametrize(("path", "to", "refusal"), [
    ("notes.md", "other.md", "'other.md' already exists"),
    ("gone.md", "x.md", "no such file or folder: 'gone.md'"),
    ("notes.md", "../escaped.md", "outside the work directory"),
    (".", "elsewhere", "the work directory itself cannot be {done}"),
    ("archive", "archive/inner", "'archive' cannot be {into} into itself"),
    (".env", "leak.txt", "private to Mimikit"),
])
def test_rename_and_copy_refuse_and_change_nothing(ws: Workspace, verb: str, done: str,
                                                   into: str, path: str, to: str,
                                                   refusal: str) -> None:
    (ws.root / "notes.md").write_text("mine")
    (ws.root / "other.md").write_text("keep me")
    (ws.root / "archive").mkdir()
    (ws.root / ".env").write_text("SECRET=1")
    before = sorted(str(p.relative_to(ws.root)) for p in ws.root.rglob("*"))
    with pytest.raises(ToolError, match=refusal.format(done=done, into=into)):
        getattr(ws, verb)(path, to)
    assert sorted(str(p.relative_to(ws.root)) for p in ws.root.rglob("*")) == before
    assert (ws.root / "other.md").read_text() == "keep me"


def test_remove_deletes_a_file_a_link_or_an_empty_folder(ws: Workspace) -> None:
    (ws.root / "backup.txt").write_text("x")
    assert ws.remove("backup.txt") == {"removed": "backup.txt"}
    assert not (ws.root / "backup.txt").exists()
    with pytest.raises(ToolError, match="no such file or folder: 'backup.txt'"):
        ws.remove("backup.txt")
    (ws.root / "kept.txt").write_text("keep me")
    (ws.root / "link.txt").symlink_to("kept.txt")
    assert ws.remove("link.txt") == {"removed": "link.txt"}
    assert (ws.root / "kept.txt").read_text() == "keep me"  # the link went, not its file
    (ws.root / "photos").mkdir()
    (ws.root / "photos/a.jpg").write_text("x")
    with pytest.raises(ToolError, match="cannot remove 'photos'.*must be empty"):
        ws.remove("photos")
    ws.remove("photos/a.jpg")
    assert ws.remove("photos") == {"removed": "photos"}
    with pytest.raises(ToolError, match="the work directory itself cannot be removed"):
        ws.remove(".")
    with pytest.raises(ToolError, match="outside the work directory"):
        ws.remove("../kept.txt")
    (ws.root / ".env").write_text("SECRET=1")
    with pytest.raises(ToolError, match="private to Mimikit"):
        ws.remove(".env")


def test_make_dir_makes_a_folder_once_and_not_over_a_file(ws: Workspace) -> None:
    assert ws.make_dir("photos/2026") == {"path": "photos/2026/", "created": True}
    assert ws.make_dir("photos") == {"path": "photos/", "created": False}
    assert (ws.root / "photos/2026").is_dir()
    (ws.root / "notes").write_text("x")
    with pytest.raises(ToolError, match="'notes' is a file"):
        ws.make_dir("notes")


def test_write_read_list_round_trip(ws: Workspace) -> None:
    assert ws.write_file("src/pkg/mod.py", "print('你好')\n") == {
        "path": "src/pkg/mod.py",
        "bytes": len("print('你好')\n".encode()),
    }
    ws.write_file("README.md", "hi")
    assert ws.read_file("src/pkg/mod.py") == "print('你好')\n"
    # several lines end their last one, as `wc -l` counts lines; one line is written as given
    assert ws.write_file("shopping.txt", "eggs\nbread\nmilk")["bytes"] == 16
    assert ws.shell("wc -l < shopping.txt")["stdout"].strip() == "3"
    assert (ws.root / "README.md").read_text() == "hi"
    assert ws.list_files() == ["README.md", "shopping.txt", "src/"]
    assert ws.list_files("src") == ["src/pkg/"]


def test_list_files_caps_entries_with_a_note(ws: Workspace) -> None:
    for i in range(510):
        (ws.root / f"f{i:03}").touch()
    entries = ws.list_files()
    assert len(entries) == 501
    assert entries[-1].startswith("[10 more entries not shown")


def test_read_file_missing_binary_and_large_are_refused(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="no such file"):
        ws.read_file("nope.txt")
    (ws.root / "img.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    with pytest.raises(ToolError, match="binary"):
        ws.read_file("img.bin")
    (ws.root / "big.txt").write_text("a" * 1_000_001)
    with pytest.raises(ToolError, match="over the 1000000 byte limit"):
        ws.read_file("big.txt")


def test_shell_runs_in_work_dir_with_empty_stdin(ws: Workspace) -> None:
    result = ws.shell("pwd; cat; echo oops >&2; exit 3")
    assert result["stdout"].strip() == str(ws.root)
    assert result["stderr"].strip() == "oops"
    assert result["exitCode"] == 3
    assert result["timedOut"] is False


def test_a_command_shows_the_files_it_wrote_small_ones_with_their_text(ws: Workspace) -> None:
    (ws.root / "dentist.txt").write_text("call the dentist")
    (ws.root / "old.txt").write_text("kept")
    (ws.root / ".git").mkdir()
    quiet = ws.shell("wc -c dentist.txt > chars.txt; head -c 300 /dev/zero > big.bin; "
                     "echo x > .git/index; cat old.txt > /dev/null")
    assert quiet["stdout"] == ""
    assert quiet["written"] == {"big.bin": {"bytes": SHOWN_TEXT_BYTES + 100},
                                "chars.txt": "16 dentist.txt\n"}
    assert "written" not in ws.shell("cat chars.txt")
    assert ws.shell("echo 17 > chars.txt; exit 1")["written"] == {"chars.txt": "17\n"}


def test_a_command_shows_nothing_it_wrote_in_mimikits_private_paths(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    workspace = Workspace(tmp_path, private=(tmp_path / "state",))
    wrote = workspace.shell("echo secret > state/keys.txt; echo hi > a.txt")["written"]
    assert wrote == {"a.txt": "hi\n"}


def test_a_command_in_a_work_dir_too_large_to_watch_shows_no_written(ws: Workspace) -> None:
    for index in range(WATCHED_FILES + 1):
        (ws.root / f"f{index}").touch()
    assert "written" not in ws.shell("echo 1 > one.txt")


def test_shell_output_is_truncated_with_marker(ws: Workspace) -> None:
    result = ws.shell("head -c 5000 /dev/zero | tr '\\0' a; echo END")
    assert "[truncated 4004 bytes]" in result["stdout"]
    assert result["stdout"].endswith("END\n")
    assert len(result["stdout"]) < 1100


def test_shell_timeout_kills_background_children(ws: Workspace) -> None:
    started = time.monotonic()
    result = ws.shell("sleep 30 & echo $! > bg.pid; sleep 30", timeout=0.5)
    assert result["timedOut"] is True
    assert time.monotonic() - started < 5
    assert not pid_alive(int((ws.root / "bg.pid").read_text()))
    assert live_process_groups() == []
    assert ws.live_pgids == set()


def test_background_child_does_not_outlive_finished_command(ws: Workspace) -> None:
    result = ws.shell("sleep 30 > /dev/null 2>&1 & echo $!")
    assert result["exitCode"] == 0
    assert not pid_alive(int(result["stdout"]))


def test_command_ignoring_sigterm_is_killed_after_grace(ws: Workspace) -> None:
    result = ws.shell("trap '' TERM; sleep 30 & echo $! > bg.pid; wait", timeout=0.3)
    assert result["timedOut"] is True
    assert 2 <= result["durationMs"] / 1000 < 5
    assert not pid_alive(int((ws.root / "bg.pid").read_text()))


def test_cancel_from_another_thread_kills_running_command(ws: Workspace) -> None:
    threading.Timer(0.3, ws.cancel).start()
    started = time.monotonic()
    result = ws.shell("sleep 30 & echo $! > bg.pid; sleep 30")
    assert result["canceled"] is True
    assert time.monotonic() - started < 3
    assert not pid_alive(int((ws.root / "bg.pid").read_text()))
    with pytest.raises(ToolError, match="canceled"):
        ws.shell("echo again")


def test_shell_timeout_is_capped_by_maximum(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, shell_timeout_max=0.3)
    result = ws.shell("sleep 30", timeout=100)
    assert result["timedOut"] is True
    assert result["durationMs"] < 3000


def test_the_runtimes_secrets_and_state_are_out_of_the_file_tools_and_the_shell(tmp_path,
                                                                              monkeypatch):
    from mimikit.exceptions import ToolError

    (tmp_path / ".env").write_text("MIMIKIT_LLM_API_KEY=sk-secret\n")
    state = tmp_path / ".mimikit"
    (state / "memory").mkdir(parents=True)
    (state / "memory.md").write_text("facts")
    ws = Workspace(tmp_path, private=(state,))
    for path in (".env", ".mimikit/memory.md", ".mimikit", "./.mimikit/../.env"):
        with pytest.raises(ToolError, match="private to Mimikit"):
            ws.read_file(path)
    with pytest.raises(ToolError, match="private to Mimikit"):
        ws.write_file(".mimikit/memory.md", "planted")
    (tmp_path / "notes.txt").write_text("mine")
    assert ws.list_files(".") == ["notes.txt"]  # not the state dir, nor the secrets
    for name in ("MIMIKIT_API_TOKEN", "OPENAI_API_KEY", "MIMIKIT_FLOWER_BASIC_AUTH",
                 "MIMIKIT_REDIS_URL"):
        monkeypatch.setenv(name, "secret-value")
    out = ws.shell("env")["stdout"]
    assert "secret-value" not in out and "PATH=" in out


# --- escapes: symlinks and ".." in every combination ---------------------------------------------


@pytest.fixture
def maze(tmp_path: Path) -> tuple[Workspace, Path]:
    return build_maze(tmp_path)


def build_maze(tmp_path: Path) -> tuple[Workspace, Path]:
    """A work dir full of traps, beside an ``outside`` dir and a ``work-evil`` sibling."""
    root, outside = tmp_path / "work", tmp_path / "outside"
    for folder in (root / "sub" / "deeper", outside, tmp_path / "work-evil"):
        folder.mkdir(parents=True)
    (outside / "secret.txt").write_text("top secret")
    (root / "sub" / "inside.txt").write_text("fine")
    links = {"out": outside, "up": Path("../.."), "dotdot": Path(".."), "loop": Path("loop"),
             "ping": Path("pong"), "pong": Path("ping"), "in": Path("sub"),
             "chain": Path("in/deeper/../../out"), "dangling": outside / "new.txt",
             "sub/deeper/back": Path("../../../outside/secret.txt"), "env": Path(".env")}
    for name, target in links.items():
        (root / name).symlink_to(target)
    (root / ".env").write_text("MIMIKIT_LLM_API_KEY=sk-secret\n")
    return Workspace(root), outside


def _outside_state(outside: Path) -> dict[str, bytes]:
    base = outside.parent
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*"))
            if p.is_file() and not p.is_relative_to(base / "work")}


@pytest.mark.parametrize("path", [
    "out/secret.txt", "up/outside/secret.txt", "dotdot/outside/secret.txt",
    "chain/secret.txt", "sub/deeper/back", "in/../out/secret.txt", "../outside/secret.txt",
    "sub/../../outside/secret.txt", "../work-evil/x", "./../work/../outside/secret.txt",
    "dangling", "env", "out", "up",
])
def test_every_way_out_through_symlinks_and_dotdot_is_refused(maze, path: str) -> None:
    ws, outside = maze
    before = _outside_state(outside)
    for action in (ws.read_file, lambda p: ws.write_file(p, "planted"), ws.list_files):
        with pytest.raises(ToolError, match="outside the work directory|private to Mimikit"):
            action(path)
    assert _outside_state(outside) == before
    assert not (outside / "new.txt").exists()


@pytest.mark.parametrize("path", ["loop", "loop/x", "ping", "pong/deeper/x"])
def test_a_symlink_loop_is_a_readable_refusal_not_an_os_error(maze, path: str) -> None:
    ws, _outside = maze
    for action in (ws.read_file, lambda p: ws.write_file(p, "x"), ws.list_files):
        with pytest.raises(ToolError, match="symlink loop"):
            action(path)


def test_symlinks_that_stay_inside_work_like_plain_paths(maze) -> None:
    ws, _outside = maze
    assert ws.read_file("in/inside.txt") == "fine"
    assert ws.write_file("in/deeper/new.txt", "x") == {"path": "sub/deeper/new.txt", "bytes": 1}
    assert ws.list_files("in") == ["sub/deeper/", "sub/inside.txt"]


SEGMENTS = ["..", ".", "", "sub", "deeper", "out", "up", "dotdot", "in", "chain", "loop",
            "ping", "back", "inside.txt", "secret.txt", "outside", "work", "work-evil", ".env",
            "env", "new.txt", "dangling"]


def test_no_composed_path_reads_or_writes_outside_the_work_dir(tmp_path_factory, figures) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    counts = {"refused": 0, "inside": 0}
    base = tmp_path_factory.mktemp("maze")
    ws, outside = build_maze(base)
    before = _outside_state(outside)

    @settings(max_examples=400, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=7),
           absolute=st.booleans(),
           action=st.sampled_from(["read", "write", "list", "append", "rename", "mkdir"]))
    def probe(parts: list[str], absolute: bool, action: str) -> None:
        path = "/".join(parts)
        if absolute:
            path = f"{ws.root}/{path}"
        try:
            real = ws.resolve(path)
        except ToolError:
            counts["refused"] += 1
            return
        assert real.is_relative_to(ws.root) and not real.is_symlink(), (path, real)
        counts["inside"] += 1
        try:
            if action == "write" and not real.is_dir():
                ws.write_file(path, "written inside")
            elif action == "read":
                ws.read_file(path)
            elif action == "append" and not real.is_dir():
                ws.append_file(path, "added inside")
            elif action == "rename":
                ws.rename(path, f"{path}-renamed")
            elif action == "mkdir":
                ws.make_dir(path)
            else:
                ws.list_files(path)
        except (ToolError, NotADirectoryError, FileExistsError):
            pass  # a refusal or a path that is a file where a folder is wanted: no escape

    probe()
    figures.record("composed workspace paths", **counts)
    assert _outside_state(outside) == before
    assert counts["refused"] and counts["inside"]
