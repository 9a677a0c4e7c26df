"""The house rules that tools can check: ruff (style, complexity <= 13) and mypy (types)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff_finds_nothing():
    done = _run("ruff", "check", "mimikit", "web", "tests", "bench", "celeryconfig.py")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing():
    done = _run("mypy", "--cache-dir", str(ROOT / ".mypy_cache"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_import_circle_among_the_project_modules():
    from import_graph import circles, graph

    assert circles(graph()) == [], "modules that import each other in a loop"


def test_no_import_circle_among_the_packages():
    from import_graph import circles, graph, packages

    assert circles(packages(graph())) == [], (
        "sub-packages (or top-level modules) that import each other in a loop")


def test_every_package_stands_on_one_of_at_most_12_floors():
    """Floors of the packages (a sub-package of ``mimikit`` or a top-level module is one
    node), as ``farm-studio look`` draws them."""
    from import_graph import circles, floors, graph, highest_chain, packages

    edges = packages(graph())
    assert circles(edges) == [], "floors are only defined without an import circle"
    levels = floors(edges)
    chain = " -> ".join(f"{name} ({levels[name]})" for name in highest_chain(edges, levels))
    assert max(levels.values()) <= 12, f"too many import floors: {chain}"


def test_every_sub_package_says_what_concept_it_holds():
    missing = [str(init.relative_to(ROOT)) for init in sorted((ROOT / "mimikit").rglob("__init__.py"))
               if not ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))]
    assert missing == [], "sub-packages without a docstring"


def test_no_module_is_over_400_lines():
    long = {str(path.relative_to(ROOT)): n for path in sorted(ROOT.glob("[mw]*/**/*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}, "split these modules by concept"
