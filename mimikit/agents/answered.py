"""Whether what a Planner wants to ask the person is answered already: by the request itself
("以后记得我用 pnpm 管理包", then "你用什么包管理工具？"), by a line of Memory, or, for the
date, by the current time. The model, asked alone, copies the answer from those lines; the copy
counts only where it is found there, is not the request itself, and shares no word with the
question (a copy of what the question asks about is no answer to it); a copy from Memory counts
only where the model, asked alone, says its line gives it as the answer to the question (the
1.5B model copied "花生" from "请记住我对花生过敏" for "What is your pet's name?").

Measured with the 1.5B model on 25 pairs (request, question, some with a line of Memory;
bench/README.md): 14 of the 15 answered ones found (not "tea" for "Do you prefer tea or
coffee?", a word the question names), none of the 10 that only the person can answer taken for
answered. Put as a yes-or-no question ("Do the request, the current time or the memory already
answer that question?"), 15 of the 20 without Memory were judged right, and "Should I deploy to
staging or production?" was taken for answered by "deploy the site".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mimikit.agents.verdicts import copied, verdict
from mimikit.conversation.question import is_question
from mimikit.memory.tokenize import has_chinese, tokenize
from mimikit.store.runtime import Runtime
from mimikit.workspace.named import named_paths

ASKED = ('The user wrote: "{request}"\n{known}\nQuestion: "{question}"\n'
         "Answer the question with words copied from what the user wrote or from the lines "
         'above, or "" when they do not say.')
# Whether the line of Memory a copy came from answers the question. On 44 (line, question,
# copy) triples with the 1.5B model (23 answers, 21 copies of a line about something else,
# half across Chinese and English): 23 and 21 right; 'The user told you: "..." Asked "...",
# would the user answer "..."?' 23 and 18 (bench/README.md).
ANSWERS = ('The user said: "{line}"\nQuestion: "{question}"\nDoes what the user said give '
           '"{answer}" as the answer to that question?')
MEMORY_PREFIX = "Memory: "
# Whether lines in another script say what a plan gives in its own words: the 1.5B Planner
# gave "The user lives in Shanghai." of "我住在上海，请记住", words its prompt does not hold.
SAYS = 'The user said:\n{lines}\nDoes that say "{given}"?'
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_BRACKETS = re.compile(r"\([^()]*\)|（[^（）]*）")
_QUOTES = "'\"“”‘’「」"
_QUOTED = re.compile(r"(?<!\w)'([^'\n]+)'(?!\w)|\"([^\"\n]+)\"|“([^”\n]+)”|‘([^’\n]+)’|「([^」\n]+)」")


@dataclass(frozen=True)
class Given:
    """An answer found before asking, and where: "the request", "Memory" or "the current
    time"."""

    answer: str
    source: str
    line: str = ""  # the line of Memory it was found in


def answered_already(runtime: Runtime, trace_id: str | None, request: str, question: str,
                     time_line: str, memory: list[str]) -> Given | None:
    """The answer to ``question`` that ``request``, the lines of ``memory`` or ``time_line``
    give, as the Planner's model copies it; None when they give none. Only the lines of
    Memory that bear on the question or the request are shown: shown "keep in mind that my
    favourite programming language is Rust", the 1.5B model answered "What is your city?"
    with "Rust"."""
    bearing = [line for line in memory if _bears_on(line, f"{request}\n{question}")]
    return _copied_answer(runtime, trace_id, request, question, time_line, bearing)


def _copied_answer(runtime: Runtime, trace_id: str | None, request: str, question: str,
                   time_line: str, memory: list[str]) -> Given | None:
    known = "\n".join([time_line, *memory])
    said = copied(runtime, "planner", trace_id,
                  ASKED.format(request=request, known=known, question=question))
    if not said:
        return None
    given = found_in(said, request, question, time_line, memory)
    if given is None or not given.line:
        return given
    judged = verdict(runtime, "planner", trace_id, ANSWERS.format(
        line=given.line.removeprefix(MEMORY_PREFIX), question=question, answer=given.answer))
    return None if judged is False else given  # no judgment: as found


def remembered_answer(runtime: Runtime, trace_id: str | None, request: str, time_line: str,
                      memory: list[str]) -> Given | None:
    """The answer Memory (or the current time) gives to a request that is a question naming
    no file, as ``answered_already`` finds it in the lines of Memory that bear on it; None
    when it gives none. Shown "记一下：我习惯用 pnpm" in Memory, the 1.5B model planned "which
    package manager do I like to use?" as work for a Worker, which wrote package_manager.txt
    holding "pip"."""
    bearing = [line for line in memory if _bears_on(line, request)]
    if not (bearing and is_question(request)) or named_paths(request):
        return None
    return _copied_answer(runtime, trace_id, request, request, time_line, bearing)


def _bears_on(line: str, request: str) -> bool:
    """Whether a line of Memory may answer ``request``: it shares a word with it, or is
    written in another script (words are not compared across Chinese and English). Asked
    "what's in my working directory right now?", the 1.5B model copied "I'm allergic to
    peanuts" from Memory, 2 of 2 runs."""
    return bool(set(tokenize(line)) & set(tokenize(request))) or \
        has_chinese(line) != has_chinese(request)


def found_in(answer: str, request: str, question: str, time_line: str,
             memory: list[str]) -> Given | None:
    """Where ``answer`` is found, word for word: in the request, a line of memory, or, when it
    holds today's date, the line that gives the current time; None where it is not (or is
    the request itself, or shares a word with the question outside its brackets: what a
    question lists in brackets are choices, and the 1.5B model asked "add 'buy eggs' to
    todo.txt" with "What do you want to add to your todo list? (e.g., 'buy eggs', ...)")."""
    words, asked = tokenize(answer), tokenize(request)
    if not words or set(words) & set(tokenize(_BRACKETS.sub(" ", question))) or words == asked:
        return None
    if _within(words, asked):
        return Given(answer, "the request")
    line = next((line for line in memory if _within(words, tokenize(line))), None)
    if line is not None:
        return Given(answer, "Memory", line)
    today = _DATE.search(time_line)
    if today and today[0] in answer and _within(words, tokenize(time_line)):
        return Given(answer, "the current time")
    return None


def quoted_in(text: str, value: str) -> bool:
    """Whether ``value`` is, case and blanks aside, one of the spans ``text`` quotes ('…',
    "…", “…”, ‘…’, 「…」): what a person quotes is theirs, given."""
    wanted = " ".join(value.strip(_QUOTES + " ").lower().split())
    spans = (next(group for group in found.groups() if group) for found in _QUOTED.finditer(text))
    return bool(wanted) and any(" ".join(span.lower().split()) == wanted for span in spans)


def _within(words: list[str], found: list[str]) -> bool:
    """Whether ``words`` follow one another in ``found`` (the words of a text)."""
    return any(found[at:at + len(words)] == words for at in range(len(found) - len(words) + 1))


def said_across(runtime: Runtime, trace_id: str | None, given: str, memory: list[str]) -> bool:
    """Whether the lines of ``memory`` written in another script than ``given`` (Chinese or
    not) say it, as the model judges asked alone; False where there are none or no
    judgment."""
    other = [line.removeprefix(MEMORY_PREFIX) for line in memory
             if has_chinese(line) != has_chinese(given)]
    if not other:
        return False
    lines = "\n".join(f"- {line}" for line in other)
    return verdict(runtime, "planner", trace_id, SAYS.format(lines=lines, given=given)) is True
