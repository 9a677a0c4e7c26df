"""The project's import graph, read from the source: circles and floors.

A module's floor is one above the highest floor among the project modules it imports (every
import counts: at module level, inside functions, or for type checking only); a module that
imports none of them stands on floor 1.
"""

from __future__ import annotations

import ast
import os
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# mimikit/ links the top-level web/, prompts/ and celeryconfig.py in: walked through those
# links, every module has the name it is installed and imported under.
SOURCES = ("mimikit", "bench")


def _python_files(base: Path) -> list[Path]:
    return sorted(Path(folder, name) for folder, _, names in os.walk(base, followlinks=True)
                  for name in names if name.endswith(".py"))


def modules() -> dict[str, Path]:
    """Every project module by dotted name (packages by their ``__init__``)."""
    found: dict[str, Path] = {}
    for source in SOURCES:
        for path in _python_files(ROOT / source):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules that module ``name`` imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = _absolute(name, path, node)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in known else base)
    return {target for target in found if target in known and target != name}


def _absolute(name: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return str(node.module)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = package[: len(package) - node.level + 1]
    return ".".join([*package, node.module] if node.module else package)


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def floors(edges: dict[str, set[str]]) -> dict[str, int]:
    """Each module's floor (the graph must have no circle)."""

    @cache
    def floor(node: str) -> int:
        return 1 + max((floor(target) for target in edges[node]), default=0)

    return {node: floor(node) for node in edges}


def highest_chain(edges: dict[str, set[str]], levels: dict[str, int]) -> list[str]:
    """A chain of imports from the highest module down to floor 1."""
    node = max(levels, key=lambda name: (levels[name], name))
    chain = [node]
    while edges[node]:
        node = max(edges[node], key=lambda name: (levels[name], name))
        chain.append(node)
    return chain


def packages(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph of packages: a sub-package of ``mimikit`` (with everything in it) or a
    top-level module is one node."""

    def node(name: str) -> str:
        parts = name.split(".")
        return ".".join(parts[:2]) if parts[0] == "mimikit" else parts[0]

    grouped: dict[str, set[str]] = {}
    for name, targets in edges.items():
        grouped.setdefault(node(name), set()).update(
            node(target) for target in targets if node(target) != node(name))
    return grouped
