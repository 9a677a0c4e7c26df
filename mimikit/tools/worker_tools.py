"""The Worker's tools (``llm`` backend): shell and file access confined to WORK_DIR."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mimikit.exceptions import ToolError
from mimikit.llm.registry import Registry, StopRun
from mimikit.models import ResultBody, ResultType
from mimikit.tools.args import Args, Seconds, finish_with_result
from mimikit.tools.context import ToolContext
from mimikit.tools.example_copies import copied_result
from mimikit.tools.reply_checks import without_sentences
from mimikit.tools.unseen_facts import LEFT_OUT, held_to_seen, numbers, says_nothing_of, unseen
from mimikit.workspace.named import SCRIPT_SUFFIXES, absent_in


class ShellArgs(Args):
    command: str = Field(min_length=1, max_length=20_000)
    timeout: Seconds | None = Field(None, gt=0, description="seconds (default 120)")


class PathArgs(Args):
    path: str = Field(min_length=1, max_length=4096, description="relative to the work dir")


class WriteArgs(PathArgs):
    content: str = Field(max_length=5_000_000)


class AppendArgs(PathArgs):
    content: str = Field(max_length=5_000_000)


class RenameArgs(PathArgs):
    to: str = Field(min_length=1, max_length=4096, description="the new path")


class CopyArgs(PathArgs):
    to: str = Field(min_length=1, max_length=4096, description="the path of the copy")


class ListArgs(Args):
    path: str = Field(".", max_length=4096)


class WorkerResultArgs(Args):
    status: Literal["done", "failed"]
    resultType: ResultType = "text"
    result: ResultBody = Field(default_factory=dict)
    error: str | None = None


def measured(path: str, text: str) -> dict[str, Any]:
    """A file's text as ``read_file`` returns it, with its size: asked "what's the size of
    dentist.txt?", the 1.5B model's Worker read the file's bare text and reported "1 line"."""
    return {"path": path, "bytes": len(text.encode()), "lines": len(text.splitlines()),
            "content": text}


def register(registry: Registry) -> None:
    worker = {"worker"}

    @registry.tool("shell", roles=worker, reads=True)
    def shell(ctx: ToolContext, args: ShellArgs) -> dict[str, Any]:
        """Run a shell command in the work directory (no stdin; killed at its timeout)."""
        return ctx.workspace.shell(args.command, args.timeout)

    @registry.tool("read_file", roles=worker, reads=True, idempotent=True)
    def read_file(ctx: ToolContext, args: PathArgs) -> dict[str, Any]:
        """Read a text file inside the work directory, with its size (a folder: its
        entries)."""
        read = ctx.workspace.read(args.path)
        return read if isinstance(read, dict) else measured(args.path, read)

    @registry.tool("write_file", roles=worker, idempotent=True)
    def write_file(ctx: ToolContext, args: WriteArgs) -> dict[str, Any]:
        """Create or overwrite a file inside the work directory."""
        return ctx.workspace.write_file(args.path, args.content)

    @registry.tool("append_file", roles=worker)
    def append_file(ctx: ToolContext, args: AppendArgs) -> dict[str, Any]:
        """Add text at the end of a file inside the work directory (made when missing)."""
        return ctx.workspace.append_file(args.path, args.content)

    @registry.tool("rename", roles=worker)
    def rename(ctx: ToolContext, args: RenameArgs) -> dict[str, Any]:
        """Rename or move a file or folder inside the work directory."""
        return ctx.workspace.rename(args.path, args.to)

    @registry.tool("copy", roles=worker, idempotent=True)
    def copy(ctx: ToolContext, args: CopyArgs) -> dict[str, Any]:
        """Copy a file or folder inside the work directory."""
        return ctx.workspace.copy(args.path, args.to)

    @registry.tool("remove", roles=worker)
    def remove(ctx: ToolContext, args: PathArgs) -> dict[str, Any]:
        """Delete a file or an empty folder inside the work directory."""
        return ctx.workspace.remove(args.path)

    @registry.tool("make_dir", roles=worker, idempotent=True)
    def make_dir(ctx: ToolContext, args: PathArgs) -> dict[str, Any]:
        """Create a folder inside the work directory."""
        if ctx.named is not None:
            ctx.named.check_folder(args.path)
        return ctx.workspace.make_dir(args.path)

    @registry.tool("list_files", roles=worker, reads=True, idempotent=True)
    def list_files(ctx: ToolContext, args: ListArgs) -> dict[str, Any]:
        """List a directory inside the work directory (directories end with /)."""
        return {"entries": ctx.workspace.list_files(args.path)}

    @registry.tool("submit_result", roles=worker, alone=True, idempotent=True)
    def submit_result(ctx: ToolContext, args: WorkerResultArgs) -> StopRun:
        """Finish the task with its structured result (must match resultType's schema)."""
        return _finished(ctx, args)


def _finished(ctx: ToolContext, args: WorkerResultArgs) -> StopRun:
    """The end of a Worker's run with ``args``: a ``done`` that does not stand ends failed,
    and one that does keeps no sentence giving an example's number or file name its run never
    showed (``unseen_facts``; told once first), nor, after it was told that it never ran the
    scripts its task names, a number its task does not give (``without_output``); one that
    says nothing of what its last call showed is sent back once (``_unsaid``), as is a
    ``failed`` right after its own command or call failed (``_given_up``)."""
    said = str(args.result.get("text") or "")
    if args.status == "done" and (error := _not_done(ctx, said)):
        return StopRun({"status": "failed", "resultType": "text", "result": {}, "error": error})
    if args.status == "done" and said and (unsaid := _unsaid(ctx, said)):
        raise ToolError(unsaid)
    if args.status == "failed" and (retry := _given_up(ctx)):
        told, ctx.next_withheld = retry  # its next answer runs or writes something
        raise ToolError(told)
    if args.status == "done" and said:  # no example's number its run never showed
        seen = [ctx.task.prompt if ctx.task else "", *ctx.seen]
        if unshown := _unshown(ctx, said, seen):
            ctx.next_withheld = ("submit_result",)  # its next answer finds it out
            raise ToolError(unshown)
        held = held_to_seen(said, seen, ctx.system)
        if ctx.named is not None and ctx.named.unrun_when_told(ctx.workspace):
            held = without_output(held, ctx.task.prompt if ctx.task else "")
        args.result = {**args.result, "text": held}
    return finish_with_result(args, ctx.corrected)


# What a Worker that gives up right after its own command or call failed is told, once, and
# its next answer may not be submit_result: the 1.5B model's ``python3 -c`` for a sum of
# numbers.txt lacked a bracket, and it ended failed at the syntax error (2 of 2 runs of that
# request); told only, it sent the same failed again. Asked to show a folder, it read "." and
# ended failed at "'.' is a directory; use list_files to see its entries". (Not after a call
# that changes something: a write refused over a file it never read stays refused.)
RETRY = "Your last command failed"
RETRY_CALL = "Your last call failed"
GIVING_UP = ("submit_result",)
# Told that a script its command named is not in the work directory, the 1.5B model ran the
# same command again (f5): its next answer may not run a command either.
RUNNING_UNWRITTEN = ("submit_result", "shell")


def _given_up(ctx: ToolContext) -> tuple[str, tuple[str, ...]] | None:
    """What to tell a Worker that ends failed after a command or a call of its failed and
    nothing ran after it, the first time, and the calls its next answer may not make (None
    otherwise)."""
    if any(RETRY in words or RETRY_CALL in words for words in ctx.told):
        return None
    then = "; call submit_result with status failed only if the task cannot be done."
    if failing := getattr(ctx.workspace, "failing", None):
        if unwritten := _unwritten_scripts(ctx, failing):
            return (f"{RETRY} (`{failing[:200]}`): {', '.join(unwritten)} is not in the work "
                    "directory. Write it first (write_file) and then run it, or do the task "
                    f"with a command that needs no such file{then}", RUNNING_UNWRITTEN)
        return (f"{RETRY} (`{failing[:200]}`): fix what its error says and run it again{then}",
                GIVING_UP)
    if ctx.failed and not ctx.failed.startswith("submit_result:"):
        return f"{RETRY_CALL} ({ctx.failed[:300]}): do what its error says{then}", GIVING_UP
    return None


def without_output(said: str, task: str) -> str:
    """``said``, of a run that never ran the scripts its ``task`` names, without its sentences
    giving a number the task does not (``LEFT_OUT`` where none is left): no command printed
    it. Told once that it never ran total.py, the 0.5B model ended done with "total.py printed
    69." (69 was its size)."""
    given = set(numbers(task))
    kept = without_sentences(said, lambda sentence: not set(numbers(sentence)) <= given)
    return kept or LEFT_OUT


def _unwritten_scripts(ctx: ToolContext, command: str) -> list[str]:
    """The scripts ``command`` names that are not in the work directory: the 1.5B model wrote
    nums.txt, ran ``python3 sum_nums.py nums.txt`` of a script it never wrote, was told to fix
    what the error said, and ran it again (3 of 3 household runs; told this instead, it still
    ran it again in the one run measured)."""
    return [path for path in absent_in(ctx.workspace, command) if path.endswith(SCRIPT_SUFFIXES)]


# What a Worker whose ``done`` gives an example's number or file name its run never showed is
# told, once (``unseen_facts``).
UNSHOWN = "Your result gives"


def _unshown(ctx: ToolContext, said: str, seen: list[str]) -> str | None:
    """What to tell a Worker whose result ``said`` gives numbers or names of its examples that
    nothing its run was given or shown holds, the first time, where it made a call (None
    otherwise)."""
    if any(UNSHOWN in words for words in ctx.told) or not ctx.workspace.used:
        return None  # a run that made no call is told so where it matters (``NamedFiles``)
    copied = unseen(said, seen, ctx.system)
    if not copied:
        return None
    return (f"{UNSHOWN} {', '.join(copied)}, which nothing your run showed: find it out with "
            "a call first (read_file, list_files or shell), then call submit_result with what "
            "that shows.")


# What a Worker whose ``done`` says nothing of what its last call showed is told, once.
UNSAID = "Your result says nothing of what your last call showed"


def _unsaid(ctx: ToolContext, said: str) -> str | None:
    """What to tell a Worker whose result ``said`` shares no word with what its last call
    showed, the first time (None otherwise). Its last call may have shown that the work is
    wrong: the 1.5B model's total.py printed 1 to 100 where the task asked for their sum, and
    its result gave the sum, 5050, that nothing had printed."""
    if ctx.shown is None or any(UNSAID in words for words in ctx.told) or \
            not says_nothing_of(said, ctx.shown):
        return None
    return (f"{UNSAID} ({ctx.shown[:300]}): submit your result again, saying what that shows "
            "for the task; where it is not what the task asks for, change what you made and "
            "run it again.")


def _not_done(ctx: ToolContext, said: str) -> str | None:
    """Why a ``done`` whose result says ``said`` does not stand (None when it does): files the
    task names that were never made (``NamedFiles.check_done``, which may tell the Worker once
    instead), or a result in the words of one of the examples it was shown."""
    if ctx.named is not None and (unmade := ctx.named.check_done(ctx.workspace, said)):
        return unmade
    if ctx.task is not None and copied_result(ctx.task.prompt, said, ctx.system):
        return (f"the worker's result was an example's words from its instructions ({said!r}), "
                "not what it did")
    return None
