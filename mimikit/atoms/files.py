"""What the atoms on files share (``file_changed``, ``file_exists``): a path or glob relative to
the work directory, checked and matched by the one glob engine (``mimikit.globs``)."""

from __future__ import annotations

from pydantic import Field

from mimikit import globs
from mimikit.atoms.base import Checker, Params, Reader


class PathParams(Params):
    path: str = Field(min_length=1, description="file path or glob, relative to WORK_DIR "
                                                "(e.g. 'reports/*.md', 'src/**/*.py')")


def check_path(params: PathParams, checker: Checker) -> PathParams:
    """The params with the path made relative to the work dir (refused when it leaves it or
    is not a glob the tick can evaluate)."""
    return params.model_copy(update={"path": globs.check(params.path, checker.work_dir)})


def mark(params: PathParams, reader: Reader) -> str:
    """What a firing acted on: the fingerprint of the files matching now."""
    return reader.fingerprint(params.path)
