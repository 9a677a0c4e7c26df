"""The everyday requests of the task benchmark, each with the check of its outcome in the
world: a file on disk and what it holds, a trigger with the right cron or time, a line in
memory, a number or name in the reply, a question asked and answered.

A check returns (done, why): why says what was found, in a few words.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from stack import Client

Check = Callable[["World"], tuple[bool, str]]
CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass
class World:
    """What a check may look at: the work dir, the instance's API, and the replies since the
    request was sent."""

    work: Path
    client: Client
    since: str | None
    sent_at: datetime = datetime.now(UTC)

    def __post_init__(self) -> None:
        self.sent_at = datetime.now(UTC)

    def replies(self) -> list[str]:
        """The assistant messages since the request, oldest first."""
        messages = self.client.call("GET", "/api/messages?limit=200")["messages"]
        ids = [m["id"] for m in messages]
        start = ids.index(self.since) + 1 if self.since in ids else 0
        return [m["text"] for m in messages[start:] if m["role"] == "assistant"]

    def said(self) -> str:
        return "\n".join(self.replies())

    def question(self) -> bool:
        return bool(self.client.call("GET", "/api/question").get("question"))

    def asked(self) -> bool:
        """The newest reply asks something (a question in words, not a pending question)."""
        replies = self.replies()
        return bool(replies) and replies[-1].rstrip().endswith(("?", "？"))

    def triggers(self) -> list[dict[str, Any]]:
        """The instance's triggers, whole (with their schedule)."""
        found = self.client.call("GET", "/api/tasks?scope=triggers")["tasks"]
        return [self.client.call("GET", f"/api/tasks/{t['id']}")["task"] for t in found]

    def memory(self) -> str:
        state = self.work / ".mimikit"
        files = [state / "memory.md", *sorted((state / "memory").glob("**/*.md"))]
        return "\n".join(f.read_text(encoding="utf-8") for f in files if f.is_file())


@dataclass
class Request:
    """One everyday request, the check of its outcome, and the answer to give if it asks."""

    name: str
    text: str
    check: Check
    answer: str | None = None


def _replied(world: World) -> tuple[bool, str]:
    said = world.said()
    return (bool(said.strip()), f"replied {said[:60]!r}" if said else "no reply")


def _says(*needles: str) -> Check:
    def check(world: World) -> tuple[bool, str]:
        said = world.said()
        missing = [n for n in needles if n.lower() not in said.lower()]
        return (not missing, f"reply lacks {missing}: {said[:80]!r}" if missing
                else f"reply has {list(needles)}")
    return check


def _kept(label: str, *words: str) -> Check:
    """Memory holds one of ``words`` (any case): what the person asked to keep."""
    def check(world: World) -> tuple[bool, str]:
        memory = world.memory().lower()
        kept = any(word in memory for word in words)
        return kept, f"memory {'has' if kept else 'lacks'} {label}"
    return check


def _recalled(label: str, *words: str) -> Check:
    """A reply names one of ``words`` (any case): a kept fact asked for."""
    def check(world: World) -> tuple[bool, str]:
        said = world.said()
        told = any(word in said.lower() for word in words)
        return told, f"reply {'names' if told else 'lacks'} {label}: {said[:60]!r}"
    return check


def _named_after(answer: str) -> Check:
    """A file or folder named after ``answer``, the person's answer when asked (no model's
    guess)."""
    def check(world: World) -> tuple[bool, str]:
        made = [p.name for p in world.work.rglob("*") if answer.lower() in p.name.lower()]
        return bool(made), f"made {made}" if made else f"nothing named after {answer}"
    return check


def _bytes_told(name: str) -> Check:
    """The file ``name`` is there, and a reply gives its size in bytes."""
    def check(world: World) -> tuple[bool, str]:
        path = world.work / name
        if not path.is_file():
            return False, f"{name} not there"
        size = str(path.stat().st_size)
        told = size in world.said()
        return told, f"{name} is {size} bytes; the reply " + (
            "says so" if told else f"lacks it: {world.said()[:60]!r}")
    return check


def _notes(world: World) -> tuple[bool, str]:
    path = world.work / "notes.txt"
    if not path.is_file():
        return False, "notes.txt not written"
    size = path.stat().st_size
    if "hello" not in path.read_text(errors="replace").lower():
        return False, f"notes.txt holds {path.read_text(errors='replace')[:40]!r}"
    said = world.said()
    if str(size) not in said:
        return False, f"notes.txt ({size} bytes) written, the reply does not say {size}"
    return True, f"notes.txt written, {size} bytes reported"


def script_output(world: World, name: str) -> str | None:
    """What the script ``name`` of the work dir prints when run, by Python or, for a ``.sh``,
    by bash (None: it was not written)."""
    path = world.work / name
    if not path.is_file():
        return None
    runner = "bash" if path.suffix == ".sh" else sys.executable
    return subprocess.run([runner, str(path)], capture_output=True, text=True,
                          timeout=30, cwd=world.work).stdout


def _fib(world: World) -> tuple[bool, str]:
    printed = script_output(world, "fib.py")
    if printed is None:
        return False, "fib.py not written"
    if "34" not in printed or "13" not in printed:
        return False, f"fib.py prints {printed[:60]!r}"
    if "34" not in world.said():
        return False, "fib.py works, the reply lacks its output"
    return True, "fib.py written, runs, output reported"


def _daily_water(world: World) -> tuple[bool, str]:
    for trigger in world.triggers():
        cron = (trigger.get("schedule") or {}).get("cron")
        if cron and _about_water(trigger["prompt"]):
            fields = [f.lstrip("0") or "0" for f in cron.split()]
            return fields == ["0", "9", "*", "*", "*"], f"cron {cron!r}"
    return False, "no recurring trigger about water"


def _about_water(prompt: str) -> bool:
    return "water" in prompt.lower() or "\u6c34" in prompt  # \u6c34: water, as in "喝水"


def _in_ten_minutes(world: World) -> tuple[bool, str]:
    for trigger in world.triggers():
        run_at = (trigger.get("schedule") or {}).get("runAt")
        if run_at and "stretch" in trigger["prompt"].lower():
            at = datetime.fromisoformat(run_at)
            late = (at - world.sent_at) / timedelta(minutes=1)
            return 8 <= late <= 12, f"runs {late:.1f} min after the request"
    return False, "no scheduled trigger about stretching"


def _pnpm_kept(world: World) -> tuple[bool, str]:
    kept = "pnpm" in world.memory().lower()
    chinese = bool(CJK.search(world.said()))
    return kept and chinese, f"memory {'has' if kept else 'lacks'} pnpm; reply " \
                             f"{'in Chinese' if chinese else 'not in Chinese'}"


def _listed(world: World) -> tuple[bool, str]:
    names = sorted(p.name for p in world.work.iterdir() if not p.name.startswith("."))
    said = world.said()
    missing = [name for name in names if name not in said]
    return not missing and bool(names), f"reply lacks {missing}" if missing else \
        f"all of {names} named"


def _water_cancelled(world: World) -> tuple[bool, str]:
    left = [t for t in world.triggers() if _about_water(t["prompt"])]
    return not left, f"{len(left)} water trigger(s) left" if left else "the water trigger is gone"


def _date_counted(world: World) -> tuple[bool, str]:
    path = world.work / "date.txt"
    if not path.is_file():
        return False, "date.txt not written"
    today = datetime.now(UTC).date().isoformat()
    text = path.read_text(errors="replace")
    if today not in text:
        return False, f"date.txt holds {text[:30]!r}"
    counts = {str(len(text)), str(len(text.strip()))}
    said = world.said()
    return any(c in said for c in counts), f"date.txt right; reply " \
        f"{'has' if any(c in said for c in counts) else 'lacks'} the count {sorted(counts)}"


def _color_file(world: World) -> tuple[bool, str]:
    """A file named after the color the person gave when asked: teal, which a model guessing
    a favorite color does not pick."""
    made = [p.name for p in world.work.iterdir() if "teal" in p.name.lower()]
    if made:
        return True, f"made {made}"
    guessed = [p.name for p in world.work.iterdir()
               if p.is_file() and p.stat().st_size == 0 and p.stat().st_mtime >= world.sent_at.timestamp()]
    return False, f"no file named after teal (made {guessed} without asking)" if guessed \
        else "no file named after teal"


REQUESTS: list[Request] = [
    Request("chat", "hi! who are you?", _replied),
    Request("arithmetic", "What is 17 times 23?", _says("391")),
    Request("file", "create a file notes.txt containing the word hello, then tell me its size",
            _notes),
    Request("script", "write a python script fib.py that prints the first 10 Fibonacci numbers, "
            "run it and tell me the output", _fib),
    Request("daily", "every day at 9am remind me to drink water", _daily_water),
    Request("relative", "remind me in ten minutes to stretch", _in_ten_minutes),
    Request("preference", "帮我记住：我喜欢用 pnpm", _pnpm_kept),
    Request("list", "which files are in the work dir?", _listed),
    Request("recall", "我喜欢用什么包管理器？", _says("pnpm")),
    Request("cancel", "cancel the water reminder", _water_cancelled),
    Request("two-step", "write today's date as YYYY-MM-DD into date.txt, then count the "
            "characters in date.txt and tell me the number", _date_counted),
    Request("choice", "create an empty file named after my favorite color", _color_file,
            answer="teal"),
]

# The same twelve requests worded another way (``tasks.py --wording other``): what a model
# learned from the first wording, or a prompt's examples, does not carry it through these.
OTHER_WORDING: dict[str, str] = {
    "chat": "hello there, what can you do for me?",
    "arithmetic": "how much is 17*23?",
    "file": "please make notes.txt with hello inside and tell me how many bytes it has",
    "script": "create fib.py that prints the first ten Fibonacci numbers, execute it and show "
              "me what it prints",
    "daily": "remind me to drink water at 9 every morning",
    "relative": "in 10 minutes, remind me to stretch",
    "preference": "记住，我的包管理器是 pnpm",
    "list": "what files do I have in the work directory?",
    "recall": "我平时用哪个包管理器？",
    "cancel": "please stop reminding me to drink water",
    "two-step": "put today's date (YYYY-MM-DD) in date.txt and then tell me how many "
                "characters date.txt has",
    "choice": "make an empty file whose name is my favorite color",
}


# And a third way, as people type in a hurry (``--wording third``).
THIRD_WORDING: dict[str, str] = {
    "chat": "hey, good morning",
    "arithmetic": "quick question: what's 23 multiplied by 17",
    "file": "I need a notes.txt file that says hello. How big is it afterwards?",
    "script": "Could you write fib.py to print the first 10 numbers of the Fibonacci sequence, "
              "then run it and paste the output here?",
    "daily": "set a daily reminder at 9:00 to drink water",
    "relative": "ping me in 10 min to stretch my legs",
    "preference": "以后记得我用 pnpm 管理包",
    "list": "ls the workspace for me please, what's in there?",
    "recall": "你还记得我用什么管理包吗？",
    "cancel": "delete my drink water reminder",
    "two-step": "Save the current date in YYYY-MM-DD form to date.txt. After that, tell me the "
                "character count of date.txt.",
    "choice": "touch a file named after my favourite colour (empty is fine)",
}


# And a fourth, politer and partly in Chinese (``--wording fourth``).
FOURTH_WORDING: dict[str, str] = {
    "chat": "你好，你是谁？",
    "arithmetic": "17 乘以 23 是多少？",
    "file": "Please create notes.txt that contains hello and tell me its file size.",
    "script": "make a script fib.py which outputs the first 10 fibonacci numbers; run it and "
              "give me the output",
    "daily": "每天早上9点提醒我喝水",
    "relative": "can you remind me to stretch in 10 minutes?",
    "preference": "请记住我用的包管理器是 pnpm",
    "list": "list all the files in my work directory",
    "recall": "我的包管理器是哪个？",
    "cancel": "I don't need the water reminder anymore, please remove it",
    "two-step": "Write the current date in YYYY-MM-DD format to date.txt, then tell me how many "
                "characters that file contains.",
    "choice": "please create an empty file and name it after my favorite color",
}


# A fifth wording: the same twelve, put as people also put them (an "x" for times, a fact kept
# in Chinese asked for in English, a reminder turned off).
FIFTH_WORDING: dict[str, str] = {
    "chat": "good evening! what's your name?",
    "arithmetic": "what is 17 x 23",
    "file": "write the word hello into a new file called notes.txt and let me know its size in "
            "bytes",
    "script": "I want a fib.py script that prints the first 10 Fibonacci numbers. Run it and "
              "tell me what it printed.",
    "daily": "please remind me daily at 9 am to drink some water",
    "relative": "10 minutes from now, remind me to stretch",
    "preference": "记一下：我习惯用 pnpm",
    "list": "show me the files in the work directory",
    "recall": "which package manager do I like to use?",
    "cancel": "turn off the water reminder",
    "two-step": "create date.txt holding today's date in YYYY-MM-DD format, and tell me how many "
                "characters are in it",
    "choice": "create a blank file whose name is my favourite color",
}
