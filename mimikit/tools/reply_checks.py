"""What a Teller's reply may say, held to what it rests on: a report to its results (no
number or file they do not give, no sentence of an earlier reply said again), and a reply
beside work just handed over to the person's words (no result before the work ran)."""

from __future__ import annotations

import re
from collections.abc import Callable

from mimikit.models import Message
from mimikit.tokens import estimate_tokens
from mimikit.tools.context import ToolContext
from mimikit.workspace.named import named_paths


def names_as_reported(text: str, reported: str) -> bool:
    """Whether a report names only files its results name, and, where they name any, one of
    them or a number ("Done: 391."). The 1.5B model reported a listing of count.py and
    groceries.txt as "The user was reminded to turn off the lights, set a reminder to call the
    plumber, and listed the files in their working directory." (6 of 784 recorded reports
    named none of the files their results named, besides the copies of the example's
    failure); asked "我最喜欢什么运动？", the 0.5B's Worker wrote favorite_activity.txt of
    hobbies it made up, reported as "任务完成: 我最喜欢什么运动？" (too short to be held to them
    before: the person never learned what was done)."""
    named, shown = set(named_paths(text)), set(named_paths(reported))
    return named <= shown and bool(named or not shown or numbers_in(text))


def tells_a_number(text: str, given: set[str]) -> bool:
    """Whether a report tells one of the numbers its Workers' results ``given`` in their own
    words, where they give any, or says no more than "Done." (or a number of its run's
    account: "notes.txt was written: 6 bytes." beside a result's unseen 13). The 0.5B model
    reported a word count of "8 rent.txt" (``wc -c``'s bytes) as "That was done: Count the
    words in rent.txt and write the number into count.txt.", and the person never learned the
    8; of 135 recorded reports, 1 of the 1.5B's told none of its results' numbers ("a file
    named Lisbon was created", its 14 bytes left out)."""
    return not given or bool(numbers_in(text) & given) or short(text)


_NUMBER = re.compile(r"\d+")


def numbers_in(text: str) -> set[str]:
    """The numbers ``text`` writes in digits, without leading zeros ("08:30": 8 and 30). Of
    776 recorded reports of the 1.5B and 0.5B models, 33 held a number their results did not:
    a size of a folder or a file never measured ("15 bytes" beside "2 lines" for three), a date
    written as "2023-04-15", a time of the clock, an id or an hour of an earlier report."""
    return {number.lstrip("0") or "0" for number in _NUMBER.findall(text)}


# A reply this long (estimated tokens: a Chinese sentence says in 26 characters what an
# English one says in 60) made of earlier replies' sentences is a copy.
COPIED_REPLY_TOKENS = 15


def short(text: str) -> bool:
    """Whether a reply is too short to be a copy, or to tell more than "Done."."""
    return estimate_tokens(text) < COPIED_REPLY_TOKENS


EARLIER_REPLIES = 6  # the earlier replies a new one is compared with
# Where a sentence ends: the blanks after its mark are kept by ``split`` (odd places).
_SENTENCES = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])(\s*)")
# A sentence with its mark and the blanks after it (a mark inside a word or a number,
# "fox.txt", "2.5", ends none).
_SENTENCE = re.compile(r"(?:[^.!?\n\u3002\uff01\uff1f]|[.!?](?=[^\s.!?]))+"
                       r"[.!?\u3002\uff01\uff1f]*[ \t]*")


def copied_reply(ctx: ToolContext, text: str, earlier: set[str] | None) -> bool:
    """Whether ``text`` only says again, sentence for sentence in any order, what earlier
    replies of the conversation said (``earlier``, read here if None: a small model copies
    its last reply from the history it is shown, and sometimes shuffles its sentences)."""
    if short(text):
        return False
    return sentences(text) <= (earlier if earlier is not None else earlier_sentences(ctx))


def earlier_sentences(ctx: ToolContext) -> set[str]:
    return {sentence for reply in _earlier_replies(ctx) for sentence in sentences(reply.text)}


def copied_replies(ctx: ToolContext, text: str) -> list[str]:
    """The ids of the earlier replies (those ``earlier_sentences`` reads) that ``text`` says a
    sentence of."""
    said = sentences(text)
    return [reply.id for reply in _earlier_replies(ctx) if sentences(reply.text) & said]


def _earlier_replies(ctx: ToolContext) -> list[Message]:
    return [m for m in ctx.runtime.conversation.recent(EARLIER_REPLIES * 3)
            if m.role == "assistant"][-EARLIER_REPLIES:]


def without_earlier_sentences(text: str, earlier: set[str], reported: str) -> str:
    """A report without the sentences that earlier replies said and its results do not ('' when
    that is all it says): the 1.5B model reported a date written as "The task was completed: I
    wrote date.txt (10 bytes) … The water reminder is canceled. What its run did: canceled
    task-3b61…", its report before, word for word."""
    parts = _SENTENCES.split(text)  # sentence, blank, sentence, ..., sentence
    shown = plain(reported)
    pairs = zip(parts[::2], [*parts[1::2], ""], strict=True)
    # all of it said before and none of it in the results: a copy however short (the 1.5B
    # reported "17 乘以 23 是多少？" answered as its reply before: "好的，我将计算 17 乘以 23 的结果。")
    return "".join(sentence + blank for sentence, blank in pairs
                   if plain(sentence) not in earlier or plain(sentence) in shown).strip()


def sentences(text: str) -> set[str]:
    return {plain(part) for part in _SENTENCES.split(text)[::2] if part.strip()}


def plain(text: str) -> str:
    """``text`` case-folded, its runs of white space one space (for comparing words)."""
    return " ".join(text.casefold().split())


def words_of(text: str) -> str:
    """The words of ``text``, case-folded, one space between them (its marks left out)."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def without_results_ahead(text: str, heard: list[str]) -> str:
    """A reply beside work it hands over, without the sentences holding a number that the
    person's words do not: the work has not run, so no size, count or sum is known yet ('' when
    that is all it says). Asked to write a file and tell its size, the 0.5B model replied
    "The file has 13 bytes." as it delegated, and "I'll create notes.txt ... It's 10 bytes."
    What is left is '' too where each of its sentences is a piece of one taken out: the 0.5B
    model's reply to "每个工作日早上八点提醒我吃药" said the prompt's time line, "今天是 2026-12-03
    星期四，现在是 05:36（UTC 时区）。", until its loop was cut, and "今天是" was shown.
    """
    given = numbers_in(" ".join(heard))

    def told_ahead(sentence: str) -> bool:
        return not numbers_in(sentence) <= given

    ahead = [sentence for sentence in _SENTENCE.findall(text) if told_ahead(sentence)]
    kept = without_sentences(text, told_ahead)
    pieces = [plain(sentence) for sentence in _SENTENCE.findall(kept) if sentence.strip()]
    return "" if ahead and all(any(piece in plain(taken) for taken in ahead)
                               for piece in pieces) else kept


def without_sentences(text: str, dropped: Callable[[str], bool]) -> str:
    """``text`` without its sentences that ``dropped`` is true of ('' when that is all it
    says), its runs of blanks left by them made one."""
    return re.sub(r"[ \t]{2,}", " ", _SENTENCE.sub(
        lambda sentence: "" if dropped(sentence.group()) else sentence.group(), text)).strip()
