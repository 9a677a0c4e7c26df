"""Host and Origin checks for an instance without ``MIMIKIT_API_TOKEN``.

Without a token the app trusts whoever can reach it, which is only safe on loopback. A page on
another site can still reach it through DNS rebinding (its own name resolving to 127.0.0.1),
so the ``Host`` header must name loopback; and a write (POST, PATCH, ...) from another origin is
refused.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import jsonify, request

from mimikit.config import Settings
from mimikit.web.context import runtime

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_PORTS = {"http": "80", "https": "443"}
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Served whatever the Host: they say nothing a foreign page could use (see ``mimikit.web.health``).
OPEN_ENDPOINTS = frozenset({"health.health"})


def check_host_and_origin() -> Any:
    """``before_request``: a 403 JSON answer for a foreign Host or a cross-origin POST."""
    settings = runtime().settings
    if settings.api_token or request.endpoint in OPEN_ENDPOINTS:
        return None
    host_header = request.headers.get("Host", "")
    if split_host(host_header)[0] not in allowed_hosts(settings):
        return _forbidden(
            f"Host {host_header!r} is not a loopback name: without MIMIKIT_API_TOKEN only "
            "127.0.0.1, localhost and [::1] are served; open the page through one of them "
            "or set MIMIKIT_API_TOKEN")
    origin = request.headers.get("Origin")
    if request.method not in SAFE_METHODS and origin is not None and not same_origin(origin, host_header):
        return _forbidden(f"Origin {origin!r} does not match Host {host_header!r}: "
                          "cross-site requests are refused")
    return None


def allowed_hosts(settings: Settings) -> set[str]:
    """The loopback names, plus the configured bind address when it is loopback too."""
    allowed = set(LOOPBACK_NAMES)
    if settings.host_is_loopback:
        allowed.add(split_host(settings.host)[0])
    return allowed


def split_host(value: str) -> tuple[str, str]:
    """``("::1", "8787")`` from ``"[::1]:8787"``; the name is lower-cased, the port may be ""."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else ""
    if value.count(":") > 1:  # a bare IPv6 address, no port
        return value, ""
    name, _, port = value.partition(":")
    return name, port


def same_origin(origin: str, host_header: str) -> bool:
    """True when the Origin's host and port are the request's Host (default ports filled in)."""
    parts = urlsplit(origin.strip().lower())
    if parts.scheme not in DEFAULT_PORTS or not parts.netloc:
        return False  # "null" (sandboxed frames, file: pages) and other schemes
    default = DEFAULT_PORTS[parts.scheme]
    origin_name, origin_port = split_host(parts.netloc)
    host_name, host_port = split_host(host_header)
    return (origin_name, origin_port or default) == (host_name, host_port or default)


def _forbidden(message: str) -> Any:
    return jsonify(error=message, status=403), 403
