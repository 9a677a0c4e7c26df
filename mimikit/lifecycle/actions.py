"""What a Worker's or Planner's run did, told from its calls and not from its words: the files
it wrote (and how long they came out; a short one's text) or added to, the files it renamed and
the folders it made, the folders it listed (and what they hold), the files it read, the
commands it ran (with their exit code and the start of their output), the tasks it canceled
(and what they were); and of the files its task names that no call of it names, the scripts
no command ran and the files that are not there. Shown beside its result when the Teller
reports it, so that what the person hears can be checked against what happened: a small model
reports what it meant to do."""

from __future__ import annotations

import json
import re
from typing import Any

from mimikit.roles import RUN_DID
from mimikit.store.runtime import Runtime
from mimikit.workspace.local import Workspace
from mimikit.workspace.named import NamedFiles, same_kind
from mimikit.workspace.written import WRITTEN

OUTPUT_CHARS = 300  # of a command's output shown
# A file written this short is shown whole: asked "what is 15% of 240?", the 0.5B model's
# Worker wrote "15% of 240 is 36." into result.txt and said only that it held 17 bytes.
WRITTEN_SHOWN_CHARS = 60
ACTIONS_SHOWN = 12  # the last calls that changed something, shown
# the calls that make a file, and the argument that names it
MAKING = {"write_file": "path", "append_file": "path", "rename": "to", "copy": "to"}
NO_CALL = "it made no call"
ENDING_CALLS = ("submit_result",)  # how a run ends, not what it did

_ACCOUNT = re.compile(r"\s*" + re.escape(RUN_DID), re.IGNORECASE)


def actions_of(runtime: Runtime, task_id: str) -> list[str]:
    """One line per file written, folder listed, command run or task canceled by the task's
    last run, oldest first; ``["it made no call"]`` when it made none (empty where it only
    ended, unless files a Worker's task or result names are not in the work directory: they
    are said; empty too when no run is kept)."""
    runs = runtime.runs.of(task_id)
    if not runs:
        return []
    every = runs[-1].get("toolCalls") or []
    calls = [call for call in every if call.get("name") not in ENDING_CALLS]
    lines = [line for call in calls if (line := _line(call))]
    if not calls:  # a run that only ended is told as one that made no call where it matters
        missing = _not_there(runtime, task_id)
        return [NO_CALL + missing] if missing or not every else []
    return lines[-ACTIONS_SHOWN:] + _named_left(runtime, task_id, calls)


def _named_left(runtime: Runtime, task_id: str, calls: list[dict[str, Any]]) -> list[str]:
    """What a Worker's run left of the files its task names, where no call of it names them:
    the scripts in the work directory that no command ran (the 0.5B model wrote total.py three
    times, was told once that it never ran it, and ended ``done`` with "total.py printed 69.",
    its size), and the files that are not there where it made one of their kind
    (``same_kind``: asked for dentist.txt, it wrote dental.txt and reported that written)."""
    task = runtime.tasks.get(task_id)
    if task is None or task.role != "worker":
        return []
    arguments = [json_object(call.get("arguments")) for call in calls]
    commands = "\n".join(str(args.get("command") or "") for args in arguments)
    named = named_files(runtime, task.prompt)
    unrun = [path for path in named.scripts if path not in named.absent and path not in commands]
    touched = json.dumps(arguments, ensure_ascii=False)
    made = [str(args.get(MAKING[name])) for call, args in zip(calls, arguments, strict=True)
            if call.get("ok") and (name := str(call.get("name"))) in MAKING]
    made += [path for call in calls if call.get("name") == "shell" and call.get("ok")
             for path in json_object(call.get("content")).get(WRITTEN) or {}]
    absent = [path for path in named.absent if path not in touched
              and any(same_kind(path, other) for other in made)]
    return ([f"never ran {', '.join(unrun)}"] if unrun else []) + \
        ([f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not in the work "
          "directory"] if absent else [])


def _not_there(runtime: Runtime, task_id: str) -> str:
    """The files a Worker's task or its result names that are not in the work directory, said
    after "it made no call": a small model reports the output of a script it never wrote, or
    a file it never made ("a.txt is written: 2 bytes", an example's words)."""
    task = runtime.tasks.get(task_id)
    if task is None or task.role != "worker":
        return ""
    result = runtime.tasks.result(task_id)
    said = str(result.result.get("text") or "") if result is not None else ""
    absent = absent_named(runtime, f"{task.prompt}\n{said}")
    if not absent:
        return ""
    return f", and {', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not in the " \
        "work directory"


def absent_named(runtime: Runtime, text: str) -> tuple[str, ...]:
    """The files ``text`` names that are not in the work directory."""
    return named_files(runtime, text).absent


def named_files(runtime: Runtime, text: str) -> NamedFiles:
    """The files ``text`` names, as the work directory holds them now."""
    settings = runtime.settings
    workspace = Workspace(settings.work_dir.resolve(), private=(settings.state_dir,))
    return NamedFiles.of(workspace, text)


def with_actions(runtime: Runtime, task_id: str, text: str) -> str:
    """``text`` (a task's result or error) followed by what the task's last run did, where it
    made a call or its task names files that are not there: what happened, whatever the words
    say."""
    return with_account(text, actions_of(runtime, task_id))


def with_account(text: str, did: list[str]) -> str:
    """``text`` followed by ``did``, the lines of what a run did (``actions_of``), where there
    are any beyond "it made no call"."""
    if not did or did == [NO_CALL]:
        return text
    return text.rstrip(". \n") + f". {RUN_DID} " + "; ".join(did)  # "milk\n." ends at milk


def without_account(text: str) -> str:
    """``text`` up to where it gives an account of a run in the runtime's words ("What its run
    did: ..."): a reply to a pass that reported no run copied it from an earlier report."""
    return _ACCOUNT.split(text, maxsplit=1)[0].rstrip()


def account_in(text: str) -> str:
    """The account of a run ``text`` gives in the runtime's words ('' when it gives none)."""
    parts = _ACCOUNT.split(text, maxsplit=1)
    return parts[1].strip() if len(parts) > 1 else ""


def begins_account(text: str) -> bool:
    """Whether ``text`` ends where an account of a run in the runtime's words begins: an answer
    ended there as the model began to copy one (``roles.Role.turn_text_ends``)."""
    parts = _ACCOUNT.split(text, maxsplit=1)
    return len(parts) > 1 and not parts[1].strip()


def json_object(text: str | None) -> dict[str, Any]:
    """``text`` read as a JSON object ({} when it is none: a file's text, an error)."""
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _lines(count: Any) -> str:
    return "1 line" if count == 1 else f"{count} lines"


def _line(call: dict[str, Any]) -> str | None:
    arguments = json_object(call.get("arguments"))
    content = json_object(call.get("content")) if call.get("ok") else {}
    if call.get("name") == "list_files" and call.get("ok") or \
            call.get("name") == "read_file" and call.get("ok") and "directory" in content:
        entries = [str(entry) for entry in content.get("entries", [])
                   if not str(entry).startswith(".")]
        return f"listed {arguments.get('path', '.')}: {', '.join(entries) or 'nothing'}"
    if call.get("name") == "read_file" and call.get("ok"):  # its size, measured: a Worker
        # asked "what's the file size of colors.txt?" read the file and reported its text
        size = f"{content['bytes']} bytes, {_lines(content.get('lines'))}" \
            if "bytes" in content else f"{len(str(call.get('content')).encode())} bytes"
        return f"read {arguments.get('path')} ({size})"
    if call.get("name") == "write_file":
        written = f"{content['bytes']} bytes" if "bytes" in content else "failed"
        text = str(arguments.get("content") or "")
        shown = f": {json.dumps(text, ensure_ascii=False)}" \
            if "bytes" in content and 0 < len(text) <= WRITTEN_SHOWN_CHARS else ""
        return f"wrote {arguments.get('path')} ({written}){shown}"
    if call.get("name") == "append_file" and call.get("ok"):
        return f"added to {arguments.get('path')} (now {content.get('bytes')} bytes)"
    if call.get("name") == "rename" and call.get("ok"):
        return f"renamed {content.get('was')} to {content.get('path')}"
    if call.get("name") == "copy" and call.get("ok"):
        source = content.get("from", content.get("was"))  # "was": a run kept before
        return f"copied {source} to {content.get('path')} ({source} stays)"
    if call.get("name") == "remove" and call.get("ok"):
        return f"removed {content.get('removed')}"
    if call.get("name") == "make_dir" and call.get("ok"):
        return f"made the folder {content.get('path')}"
    if call.get("name") == "cancel_task" and call.get("ok") and "canceled" in content:
        return f"canceled {content.get('taskId', arguments.get('taskId'))}: {content['canceled']}"
    if call.get("name") == "shell":
        if not call.get("ok"):
            return f"ran `{arguments.get('command')}`: refused"
        output = (content.get("stdout") or content.get("stderr") or "").strip()
        wrote = "".join(f", wrote {path} ({held['bytes']} bytes)" if isinstance(held, dict)
                        else f", wrote {path}: {json.dumps(held[:OUTPUT_CHARS], ensure_ascii=False)}"
                        for path, held in (content.get(WRITTEN) or {}).items())
        return (f"ran `{arguments.get('command')}`: exit {content.get('exitCode')}"
                + (f", output: {output[:OUTPUT_CHARS]!r}" if output else ", no output") + wrote)
    return None
