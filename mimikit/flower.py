"""``mimikit flower``: Flower on the same broker, loopback by default, auth when configured.

Flower's HTTP API answers 401 unless it has auth or ``FLOWER_UNAUTHENTICATED_API=true``. So
``mimikit flower`` uses basic auth from ``MIMIKIT_FLOWER_BASIC_AUTH`` (``user:password``) when
set, enables the unauthenticated API only on a loopback address without auth, and refuses a
non-loopback address without auth. Flower lists ``mimikit.*`` tasks because the workers send
task events (``worker_send_task_events`` and ``task_send_sent_event`` in celeryconfig.py).
"""

from __future__ import annotations

import os

from mimikit import logs
from mimikit.config import Settings, is_loopback, secret_text
from mimikit.exceptions import ConfigError

BASIC_AUTH_VARIABLE = "MIMIKIT_FLOWER_BASIC_AUTH"
UNAUTHENTICATED_VARIABLE = "FLOWER_UNAUTHENTICATED_API"


def flower_argv(settings: Settings, address: str, port: int) -> list[str]:
    """The Celery command line that starts Flower for this instance.

    Also sets or clears ``FLOWER_UNAUTHENTICATED_API`` in this process's environment, which
    Flower reads on every API request.
    """
    basic_auth = secret_text(settings.flower_basic_auth)  # validated as user:password
    loopback = is_loopback(address)
    if not loopback and not basic_auth:
        raise ConfigError(
            f"refusing to serve Flower on {address} without auth: set "
            f"{BASIC_AUTH_VARIABLE}=user:password, or bind 127.0.0.1"
        )
    argv = ["flower", f"--address={address}", f"--port={port}",
            f"--logging={settings.log_level.lower()}"]  # tornado sets the root level from it
    if settings.log_format == "json":
        argv.insert(0, "--quiet")  # its start-up banner is not JSON
    if basic_auth:
        argv.append(f"--basic-auth={basic_auth}")
    if loopback and not basic_auth:
        os.environ[UNAUTHENTICATED_VARIABLE] = "true"
    else:
        # Never inherit an open API on a public address or next to configured auth.
        os.environ.pop(UNAUTHENTICATED_VARIABLE, None)
    return argv


def run_flower(settings: Settings, address: str = "127.0.0.1", port: int = 5555) -> int:
    """Run Flower in the foreground against the instance's broker."""
    argv = flower_argv(settings, address, port)
    logs.configure_from(settings)
    from mimikit.celery_app import app

    app.start(argv)
    return 0
