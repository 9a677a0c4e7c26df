"""Log files rotate by size: ``log.jsonl`` (every process appends to it), the process logs of
``mimikit up`` (copied from each child's output) and the embedded Redis's own log."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from processes import ROOT, RedisServer, free_port, wait_for

from mimikit.logfiles import LOG_FILE_MAX_BYTES, pump, rotate_if_over

WRITER = textwrap.dedent("""
    import sys, time
    from mimikit.logfiles import SharedRotatingFileHandler
    path, name, count, max_bytes, backups, start_at = sys.argv[1:]
    handler = SharedRotatingFileHandler(path, int(max_bytes), int(backups))
    time.sleep(max(float(start_at) - time.time(), 0))  # both writers at once
    for n in range(int(count)):
        handler.write_lines([f"{name} {n:05d} " + "x" * 80])
""")
LINE_BYTES = 89


def rotated(path: Path) -> list[Path]:
    """``path`` and its backups, newest first."""
    backups = sorted(path.parent.glob(path.name + ".*[0-9]"), key=lambda p: int(p.suffix[1:]))
    return [p for p in [path, *backups] if p.exists()]


def _writers(path: Path, count: int, max_bytes: int, backups: int) -> None:
    start_at = str(time.time() + 2)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(count),
                               str(max_bytes), str(backups), start_at], cwd=ROOT)
             for name in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]


def test_two_processes_appending_at_once_rotate_without_losing_a_line(tmp_path):
    path = tmp_path / "log.jsonl"
    _writers(path, count=5000, max_bytes=20_000, backups=100)
    files = rotated(path)
    assert len(files) > 10
    # each rotated file was filled up to the limit: no process rotated a file another had
    # just started, nor went on writing to one another had rotated away
    assert all(20_000 - LINE_BYTES <= f.stat().st_size < 20_000 for f in files[1:])
    lines = [line for f in files for line in f.read_text().splitlines()]
    assert len(lines) == 10_000 and len(set(lines)) == 10_000
    assert all(len(line) == 88 for line in lines)  # none torn or interleaved
    for name in ("a", "b"):  # each writer's lines in order, oldest in the highest backup
        mine = [line for f in reversed(files) for line in f.read_text().splitlines()
                if line.startswith(name)]
        assert mine == sorted(mine)


def test_only_the_configured_number_of_backups_is_kept(tmp_path):
    path = tmp_path / "log.jsonl"
    _writers(path, count=1000, max_bytes=10_000, backups=3)
    assert [f.name for f in rotated(path)] == ["log.jsonl", "log.jsonl.1", "log.jsonl.2",
                                               "log.jsonl.3"]
    kept = "".join(f.read_text() for f in rotated(path))
    assert path.read_text().splitlines()[-1].split()[1] == "00999"  # the newest line is kept
    assert "a 00000" not in kept and "b 00000" not in kept  # the oldest ones are gone


def test_log_jsonl_over_its_size_is_rotated_at_the_next_event(runtime):
    state_dir = runtime.settings.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / "log.jsonl"
    with log.open("w") as handle:  # a log.jsonl grown for months before rotation existed
        line = '{"type": "old"}' + " " * 1000 + "\n"
        handle.write(line * (LOG_FILE_MAX_BYTES // len(line) + 1))
    old_size = log.stat().st_size
    runtime.events.log("after_rotation")
    assert log.with_name("log.jsonl.1").stat().st_size == old_size
    assert '"after_rotation"' in log.read_text() and len(log.read_text().splitlines()) == 1


def test_a_childs_output_is_copied_to_its_log_and_rotated(tmp_path):
    child = subprocess.Popen([sys.executable, "-c",
                              "for n in range(3000): print(f'line {n:05d} ' + 'y' * 90)"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    thread = pump(child.stdout, tmp_path / "logs" / "worker.log", max_bytes=50_000, backups=2)
    child.wait(timeout=30)
    thread.join(timeout=30)
    files = rotated(tmp_path / "logs" / "worker.log")
    assert [f.name for f in files] == ["worker.log", "worker.log.1", "worker.log.2"]
    assert all(f.stat().st_size < 50_000 for f in files)
    assert files[0].read_text().splitlines()[-1].startswith("line 02999 ")


def test_up_copies_each_childs_output_to_its_rotated_log(tmp_path, monkeypatch):
    from mimikit.config import load_settings
    from mimikit.launcher import Child, Launcher

    monkeypatch.setenv("MIMIKIT_STATE_DIR", str(tmp_path / "state"))
    launcher = Launcher(load_settings())
    child = Child("talker", [sys.executable, "-c", "print('hello from a child')"])
    launcher._start(child)
    child.process.wait(timeout=30)
    for thread in child.pumps:
        thread.join(timeout=10)
    assert (tmp_path / "state" / "logs" / "talker.log").read_text() == "hello from a child\n"


def test_the_embedded_redis_log_is_rotated_and_redis_goes_on_logging(tmp_path):
    log = tmp_path / "redis" / "redis.log"
    server = RedisServer(free_port(), tmp_path / "redis").start()
    try:
        assert log.stat().st_size > 0
        assert rotate_if_over(log, max_bytes=1) is True
        assert not log.exists() and log.with_name("redis.log.1").exists()
        server.client().bgrewriteaof()
        wait_for(lambda: log.exists() and "rewriting" in log.read_text(), timeout=10,
                 message="redis-server to write its log again")
        assert rotate_if_over(log, max_bytes=10**9) is False
    finally:
        server.stop()
