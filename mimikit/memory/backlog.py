"""The backlog: a markdown checkbox list in ``STATE_DIR/backlog.md``."""

from __future__ import annotations

import re
from pathlib import Path

from mimikit.exceptions import ToolError

_ITEM = re.compile(r"^- \[( |x)\] (.+)$")


def read(state_dir: Path) -> list[dict[str, object]]:
    """The items as ``{item, done}``, in file order."""
    path = state_dir / "backlog.md"
    if not path.exists():
        return []
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _ITEM.match(line.strip())
        if match:
            items.append({"item": match.group(2), "done": match.group(1) == "x"})
    return items


def update(state_dir: Path, action: str, item: str) -> list[dict[str, object]]:
    """Add, check off (``done``) or remove one item; returns the new list."""
    item = " ".join(item.split())
    items = read(state_dir)
    names = [str(entry["item"]) for entry in items]
    if action == "add":
        if item in names:
            raise ToolError(f"backlog already has {item!r}")
        items.append({"item": item, "done": False})
    elif item not in names:
        raise ToolError(f"backlog has no item {item!r}; items: {names}")
    elif action == "done":
        items[names.index(item)]["done"] = True
    else:
        items.pop(names.index(item))
    lines = ["# Backlog", ""] + [f"- [{'x' if e['done'] else ' '}] {e['item']}" for e in items]
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "backlog.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return items
