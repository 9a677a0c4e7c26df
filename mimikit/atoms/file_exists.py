"""``file_exists``: some file matches the path or glob now (a firing is claimed once per
evidence, so the same files do not fire a lone ``file_exists`` twice)."""

from __future__ import annotations

from mimikit.atoms.base import AtomKind, Evaluation, Reader
from mimikit.atoms.files import PathParams, check_path, mark


def evaluate(params: PathParams, path: str, reader: Reader) -> Evaluation:
    current = reader.fingerprint(params.path)
    return Evaluation(bool(current), [f"{params.path}={current}"])


KIND = AtomKind(name="file_exists", params=PathParams, watch="tick", evaluate=evaluate,
                check=check_path, mark=mark)
