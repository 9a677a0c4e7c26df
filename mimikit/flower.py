"""``mimikit flower``: Flower on the same broker, loopback by default, auth when configured."""

from __future__ import annotations

import os

from mimikit.config import Settings, is_loopback
from mimikit.exceptions import ConfigError


def flower_argv(settings: Settings, address: str, port: int) -> list[str]:
    """The Celery command line that starts Flower for this instance."""
    basic_auth = os.environ.get("MIMIKIT_FLOWER_BASIC_AUTH")
    if not is_loopback(address) and not basic_auth:
        raise ConfigError(
            f"refusing to serve Flower on {address} without auth: set "
            "MIMIKIT_FLOWER_BASIC_AUTH=user:password, or bind 127.0.0.1"
        )
    argv = ["flower", f"--address={address}", f"--port={port}"]
    if basic_auth:
        argv.append(f"--basic-auth={basic_auth}")
    elif is_loopback(address):
        # Flower's HTTP API answers 401 without auth unless this is set; loopback only.
        os.environ["FLOWER_UNAUTHENTICATED_API"] = "true"
    return argv


def run_flower(settings: Settings, address: str = "127.0.0.1", port: int = 5555) -> int:
    from mimikit.celery_app import app

    app.start(flower_argv(settings, address, port))
    return 0
