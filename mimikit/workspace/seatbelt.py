"""The ``sandbox-exec`` (Seatbelt, macOS) command line of a Worker shell command."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# A sandbox-exec (Seatbelt) profile: later rules win over earlier ones. Not tested here (no
# macOS host runs the tests), so it stays small: writes only to the work dir and a private
# TMPDIR, the hidden paths neither readable nor writable, the network per the setting.
SEATBELT_PROFILE = """(version 1)
(allow default)
(deny file-write*)
(allow file-write* (subpath (param "WORK")) (subpath (param "TMP"))
       (regex #"^/dev/(null|zero|tty.*|fd/.*)$"))
"""


def seatbelt_argv(program: str, argv: list[str], root: Path, tmp: str, hidden: Sequence[Path],
                  network: bool) -> list[str]:
    """The ``sandbox-exec`` command line running ``argv`` (paths are passed as parameters)."""
    profile = SEATBELT_PROFILE + "".join(
        f'(deny file-read* file-write* (subpath (param "HIDE{i}")))\n' for i in range(len(hidden)))
    if not network:
        profile += "(deny network*)\n"
    params = [f"WORK={root}", f"TMP={tmp}", *(f"HIDE{i}={p}" for i, p in enumerate(hidden))]
    return [program, "-p", profile, *(part for p in params for part in ("-D", p)), *argv]
