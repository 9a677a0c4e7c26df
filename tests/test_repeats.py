"""Where an answer starts going round in a loop (``mimikit/llm/repeats.py``): the loops small
models fall into on a local server, and text that only looks like one."""

from __future__ import annotations

import pytest

from mimikit.llm.repeats import PASSAGE_CHARS, PHRASE_CHARS, loop_cut, phrase_cut

CALL = ('```json\n{\n  "function": "delegate",\n  "arguments": {\n    "prompt": "Create notes.txt",'
        '\n    "timeout": null\n  }\n}\n```\n\n')
REPLY_BLOCK = "# Reply\n\n**File `notes.txt` created.** (1 second) (text) (summary)\n"


def _kept(text: str) -> str | None:
    cut = loop_cut(text)
    return None if cut is None else text[:cut]


def test_a_run_of_one_short_line_is_taken_out_whole():
    assert _kept("Done.\n" + "```\n" * 8) == "Done.\n"
    assert _kept("Done.\n" + "\n" * 12) == "Done.\n"


def test_a_long_line_written_eight_times_keeps_its_first_copy():
    line = "If you have any other questions, please let me know.\n"
    assert _kept("Paris.\n" + line * 8) == "Paris.\n" + line


def test_a_block_written_three_times_keeps_its_first_copy_whatever_the_blanks_between():
    text = "Sure.\n" + REPLY_BLOCK + "\n\n\n\n" + REPLY_BLOCK + "\n" + REPLY_BLOCK
    assert _kept(text) == "Sure.\n" + REPLY_BLOCK


def test_a_call_written_out_three_times_keeps_one():
    assert _kept("On it.\n" + CALL * 3) == "On it.\n" + CALL.rstrip("\n") + "\n"


@pytest.mark.parametrize("text", [
    "".join(f"{n}. step {n}\n" for n in range(1, 30)),
    "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n",
    REPLY_BLOCK * 2,
    "A long line that a report may well repeat twice or thrice in a row.\n" * 3,
    "```\n" * 7,
    "x\n\nx\n\n",
], ids=["numbered_list", "table", "block_twice", "long_line_thrice", "seven_fences", "two_lines"])
def test_text_that_only_looks_like_a_loop_is_left_alone(text):
    assert loop_cut(text) is None


def _phrase_kept(text: str) -> str | None:
    cut = phrase_cut(text)
    return None if cut is None else text[:cut]


@pytest.mark.parametrize("end", [0, 5, 11], ids=["at_a_copys_end", "mid_copy", "late_in_it"])
def test_a_phrase_said_again_and_again_in_one_line_keeps_its_first_copy(end):
    phrase = "I will remember: "
    text = "I'll remember: " + phrase * 6 + phrase[:end]
    kept = _phrase_kept(text)  # the words before the run, and one copy
    assert kept is not None and text.startswith(kept)
    assert len("I'll remember: ") < len(kept) <= len("I'll remember: ") + len(phrase)


@pytest.mark.parametrize("text", [
    "| --- | --- | --- | --- | --- |",
    "-" * 80,
    "ha ha ha ha ha ha ha ha",
    "1, 1, 2, 3, 5, 8, 13, 21, 34, 55",
    "I'll remember: I will remember: I will remember: I will remember:"[:-20],
], ids=["table_rule", "dashes", "laughter", "numbers", "three_copies"])
def test_a_line_that_only_looks_like_a_phrase_loop_is_left_alone(text):
    assert phrase_cut(text) is None


def test_a_long_passage_said_three_times_keeps_its_first_copy_and_twice_is_left_alone():
    """The 1.5B model's report of a failed command said one 595-character passage over and
    over until max_tokens, twice (396 s): a passage that long is a loop at its third copy."""
    passage = "".join(f"Step {n} failed because the command of step {n} did not run. "
                      for n in range(1, 10))
    assert PHRASE_CHARS[1] < len(passage) <= PASSAGE_CHARS
    intro = "Sorry: "
    kept = _phrase_kept(intro + passage * 3 + passage[:100])
    assert kept is not None and kept.rstrip() == (intro + passage).rstrip()
    assert phrase_cut(intro + passage * 2 + passage[:100]) is None
