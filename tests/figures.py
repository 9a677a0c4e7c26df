"""Figures that fault, load and retry tests measure, shown in the terminal summary.

A test takes the ``figures`` fixture and calls ``figures.record("what", lost=0, seconds=1.3)``;
every record is printed at the end of the run (also without ``-s``), so CI logs show the
numbers behind each guarantee.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

_RECORDED: list[tuple[str, str, dict[str, Any]]] = []


class Figures:
    """Collects the figures of one test."""

    def __init__(self, test_id: str) -> None:
        self.test_id = test_id

    def record(self, label: str, **values: Any) -> dict[str, Any]:
        """Keep ``values`` under ``label`` for the summary (and print them for ``-s``)."""
        _RECORDED.append((self.test_id, label, values))
        print(f"[figures] {label}: {_format(values)}")
        return values


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Iterator[Figures]:
    """Record measured figures; they are printed in the terminal summary."""
    yield Figures(request.node.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print every recorded figure, grouped by test."""
    if not _RECORDED:
        return
    terminalreporter.section("figures")
    last = None
    for test_id, label, values in _RECORDED:
        if test_id != last:
            terminalreporter.write_line(test_id)
            last = test_id
        terminalreporter.write_line(f"    {label}: {_format(values)}")


def _format(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in values.items())
