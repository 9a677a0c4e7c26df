"""Figures that fault, load and retry tests measure, shown in the terminal summary.

A test takes the ``figures`` fixture and calls ``figures.record("what", lost=0, seconds=1.3)``;
every record is printed at the end of the run (also without ``-s``), so CI logs show the
numbers behind each guarantee.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


class Figures:
    """Collects the figures of one test, in its report (which the workers of a parallel run
    send back to the process that prints the summary)."""

    def __init__(self, node: pytest.Item) -> None:
        self.node = node

    def record(self, label: str, **values: Any) -> dict[str, Any]:
        """Keep ``values`` under ``label`` for the summary (and print them for ``-s``)."""
        self.node.user_properties.append(("figures", (label, values)))
        print(f"[figures] {label}: {_format(values)}")
        return values


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Iterator[Figures]:
    """Record measured figures; they are printed in the terminal summary."""
    yield Figures(request.node)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print every recorded figure, grouped by test."""
    recorded = [(report.nodeid, label, values)
                for reports in terminalreporter.stats.values() for report in reports
                if getattr(report, "when", None) == "call"
                for name, (label, values) in getattr(report, "user_properties", ())
                if name == "figures"]
    recorded.sort(key=lambda found: found[0])
    if not recorded:
        return
    terminalreporter.section("figures")
    last = None
    for test_id, label, values in recorded:
        if test_id != last:
            terminalreporter.write_line(test_id)
            last = test_id
        terminalreporter.write_line(f"    {label}: {_format(values)}")


def _format(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in values.items())
