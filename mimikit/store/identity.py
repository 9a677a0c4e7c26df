"""Who holds a lease or runs a delivery: ``host:pid:id``, and whether that holder still lives."""

from __future__ import annotations

import os
import socket

HOSTNAME = socket.gethostname()


def owner_token(instance_id: str | None) -> str:
    """Who runs a delivery or holds a lease: ``host:pid:instance-id``."""
    return f"{HOSTNAME}:{os.getpid()}:{instance_id or '-'}"


def owner_alive(holder: str) -> bool:
    """False only when the holder ran on this host and its process is gone."""
    host, _, rest = holder.partition(":")
    pid_text = rest.split(":", 1)[0]
    if host != HOSTNAME or not pid_text.isdigit():
        return True
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
