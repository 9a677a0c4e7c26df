"""``file_changed``: the files matching the path or glob (their names, mtimes and sizes) differ
from what the trigger last acted on, or from the baseline noted when it was installed."""

from __future__ import annotations

from mimikit.atoms.base import AtomKind, Evaluation, Reader
from mimikit.atoms.files import PathParams, check_path, mark


def evaluate(params: PathParams, path: str, reader: Reader) -> Evaluation:
    current = reader.fingerprint(params.path)
    last = reader.file_mark(path, current)
    changed = last is not None and current != last
    return Evaluation(changed, [f"{params.path}={current}"])


KIND = AtomKind(name="file_changed", params=PathParams, watch="tick", evaluate=evaluate,
                check=check_path, mark=mark)
