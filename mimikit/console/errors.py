"""How a failed ``mimikit`` command says so: one line on stderr, naming what to fix."""

from __future__ import annotations

import sys

import click
from pydantic import ValidationError

from mimikit.config import load_settings


def fail(message: str) -> None:
    """Print ``mimikit: message`` as one line on stderr."""
    print("mimikit: " + " ".join(message.split()), file=sys.stderr)


def describe_usage(error: click.UsageError) -> str:
    """A command-line mistake and where to read the usage, e.g. ``Invalid value for ...``."""
    path = error.ctx.command_path if error.ctx is not None else "mimikit"
    return f"{error.format_message().rstrip('.')}; see `{path} --help`"


def describe_validation(error: ValidationError) -> str:
    """One line naming each invalid field, e.g. ``invalid text: String should have ...``."""
    return "; ".join(
        f"invalid {'.'.join(str(part) for part in item['loc']) or 'value'}: {item['msg']}"
        for item in error.errors())


def redis_url() -> str:
    """The configured Redis URL with any credentials hidden."""
    from mimikit.status import safe_url

    return safe_url(load_settings())
