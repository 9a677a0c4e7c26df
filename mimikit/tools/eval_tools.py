"""The ``llm_eval`` batch's tools: ``submit_verdicts`` and read-only looks at the work dir."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from mimikit.exceptions import ToolError
from mimikit.llm.registry import Registry, StopRun
from mimikit.scheduling.llm_eval import parse
from mimikit.tools.args import Args
from mimikit.tools.context import ToolContext


class Verdict(Args):
    id: str = Field(min_length=1, description="the condition id as given")
    satisfied: bool
    reason: str | None = Field(None, max_length=2000)


class VerdictsArgs(Args):
    verdicts: list[Verdict] = Field(min_length=1)


class PathArgs(Args):
    path: str = Field(min_length=1, max_length=4096, description="relative to the work dir")


class ListArgs(Args):
    path: str = Field(".", max_length=4096)


def register(registry: Registry) -> None:
    roles = {"llm_eval"}

    @registry.tool("submit_verdicts", roles=roles, alone=True, idempotent=True)
    def submit_verdicts(ctx: ToolContext, args: VerdictsArgs) -> StopRun:
        """Give one verdict per condition id (satisfied true/false, a short reason); ends the run."""
        wanted = {c["id"] for c in parse(ctx.task.prompt)} if ctx.task else set()
        given = [v.id for v in args.verdicts]
        missing = sorted(wanted - set(given))
        unknown = sorted(set(given) - wanted)
        if missing or unknown or len(given) != len(set(given)):
            raise ToolError(
                "submit exactly one verdict per condition id; "
                f"missing: {missing or 'none'}; unknown: {unknown or 'none'}; "
                f"ids: {sorted(wanted)}")
        return StopRun({"verdicts": [v.model_dump(exclude_none=True) for v in args.verdicts]})

    @registry.tool("read_file", roles=roles, idempotent=True, reads=True)
    def read_file(ctx: ToolContext, args: PathArgs) -> str | dict[str, Any]:
        """Read a text file inside the work directory (a folder: its entries)."""
        return ctx.workspace.read(args.path)

    @registry.tool("list_files", roles=roles, idempotent=True, reads=True)
    def list_files(ctx: ToolContext, args: ListArgs) -> dict[str, Any]:
        """List a directory inside the work directory (directories end with /)."""
        return {"entries": ctx.workspace.list_files(args.path)}
