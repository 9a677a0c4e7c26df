"""The formats a model writes tool calls in when its server neither returns calls nor holds
its answer to a schema (``mimikit/llm/formats``), read by one reader; and the stream a person is
shown, which is the prose of that one reading, so that it never shows a byte of a call.

Each shape is one a chat template defines (Hermes/Qwen, Llama's python_tag, Mistral, Llama
3.1's function tag) or small models were seen to write (bare or fenced JSON in
its key variants, elements copied from a tool list).
"""

from __future__ import annotations

import json
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mimikit.llm.completion import TextField
from mimikit.llm.formats import FORMATS
from mimikit.llm.reading import Written, arguments_text, read_text
from mimikit.llm.streaming import read_stream

TOOLS = ["reply", "delegate", "shell", "list_tasks"]
HI = '{"text": "hi"}'
PROPERTY = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "200")), deadline=None,
                    database=None, suppress_health_check=[HealthCheck.too_slow])

# One call of reply{text: "hi"} in every shape of the table.
SHAPES = {
    "bare_arguments": '{"name": "reply", "arguments": {"text": "hi"}}',
    "bare_parameters": '{"name": "reply", "parameters": {"text": "hi"}}',
    "llama_typed": '{"type": "function", "name": "reply", "parameters": {"text": "hi"}}',
    "pretty_printed": '{\n  "name": "reply",\n  "arguments": {\n    "text": "hi"\n  }\n}',
    "fenced_json": '```json\n{"name": "reply", "arguments": {"text": "hi"}}\n```',
    "fenced_bare": '```\n{"name": "reply", "arguments": {"text": "hi"}}\n```',
    "hermes_tag": '<tool_call>\n{"name": "reply", "arguments": {"text": "hi"}}\n</tool_call>',
    "hermes_tag_unclosed": '<tool_call>\n{"name": "reply", "arguments": {"text": "hi"}}',
    "python_tag": '<|python_tag|>{"name": "reply", "parameters": {"text": "hi"}}',
    "python_tag_eom": '<|python_tag|>{"name": "reply", "parameters": {"text": "hi"}}<|eom_id|>',
    "mistral": '[TOOL_CALLS] [{"name": "reply", "arguments": {"text": "hi"}, "id": "a1b2c3d4e"}]',
    "mistral_named": '[TOOL_CALLS]reply[ARGS]{"text": "hi"}',
    "function_tag": '<function=reply>{"text": "hi"}</function>',
    "double_braces_outer": '{{"name": "reply", "arguments": {"text": "hi"}}}',
    "openai_wire": '{"id": "call_1", "type": "function", "function": {"name": "reply", '
                   '"arguments": "{\\"text\\": \\"hi\\"}"}}',
    "openai_wire_object": '{"type": "function", "function": {"name": "reply", '
                          '"arguments": {"text": "hi"}}}',
    "openai_namespace": '{"name": "functions.reply", "arguments": {"text": "hi"}}',
    "generic_tool_call": '{"tool_call": {"name": "reply", "arguments": {"text": "hi"}}}',
    "generic_tool_calls": '{"tool_calls": [{"name": "reply", "arguments": {"text": "hi"}}]}',
    "list_of_one": '[{"name": "reply", "arguments": {"text": "hi"}}]',
    "key_tool_args": '{"tool": "reply", "args": {"text": "hi"}}',
    "key_tool_name_input": '{"tool_name": "reply", "input": {"text": "hi"}}',
    "key_function_string": '{"function": "reply", "arguments": {"text": "hi"}}',
    "other_keys_are_arguments": '{"name": "reply", "text": "hi"}',
    "loose_in_a_tag": '<tool_call>{"name": "reply", "arguments": {text: \'hi\',}}</tool_call>',
    "element_attributes": '<reply text="hi"/>',
    "element_single_quotes": "<reply text='hi' />",
    "element_in_tools_list": '<tools>\n  <reply text="hi"/>\n</tools>',
    "element_children": "<reply>\n  <text>hi</text>\n</reply>",
    "element_object": '<reply>{"text": "hi"}</reply>',
}
# Prose before and after, as models write it.
AROUND = {
    "alone": ("", ""),
    "prose_before": ("Let me reply.\n", ""),
    "prose_after": ("", "\nAnything else?"),
    "prose_around": ("Let me reply.\n", "\nAnything else?"),
    "same_line": ("Sure: ", " Done."),
}


def _prose(before: str, after: str) -> str:
    joined = "\n\n" if "\n" in before + after else " "
    return joined.join(part.strip() for part in (before, after) if part.strip())


def _stream(text: str, sizes: list[int] | None = None) -> str:
    """What a person is shown of ``text`` streamed in pieces (one character each by default)."""
    pieces, pos = [], 0
    for size in sizes or [1] * len(text):
        pieces.append(text[pos:pos + size])
        pos += size
    pieces.append(text[pos:])
    shown: list[str] = []
    read_stream(({"choices": [{"delta": {"content": piece}}]} for piece in pieces),
                shown.append, names=TOOLS)
    return "".join(shown)


def test_every_format_is_declared_once_in_the_table():
    names = [fmt.name for fmt in FORMATS]
    assert len(names) == len(set(names)) >= 6


# --- arguments_text -------------------------------------------------------------------------------


def test_arguments_sent_as_json_text_are_kept_as_sent():
    assert arguments_text('{"text": "hi",  "n": 1}') == '{"text": "hi",  "n": 1}'


def test_arguments_sent_as_an_object_become_json_text_keeping_non_ascii():
    assert arguments_text({"text": "你好", "n": 1}) == '{"text": "你好", "n": 1}'


def test_arguments_encoded_twice_are_unwrapped():
    assert arguments_text(json.dumps(json.dumps({"text": "hi"}))) == HI


@pytest.mark.parametrize("raw", [None, "", "  \n"])
def test_no_arguments_are_an_empty_object(raw):
    assert arguments_text(raw) == "{}"


@pytest.mark.parametrize("raw, text", [
    ([1, 2], "[1, 2]"), (5, "5"), ('{"text": ', '{"text": '), ('"just text"', '"just text"'),
    ("not json", "not json"), (True, "true"),
])
def test_arguments_that_are_no_object_are_passed_on_as_text_for_the_registry_to_refuse(raw, text):
    assert arguments_text(raw) == text


# --- one call in every shape, with prose around it ------------------------------------------------


@pytest.mark.parametrize("around", AROUND.values(), ids=list(AROUND))
@pytest.mark.parametrize("shape", SHAPES.values(), ids=list(SHAPES))
def test_a_written_call_is_read_and_the_prose_around_it_kept(shape, around):
    before, after = around
    found = read_text(before + shape + after, TOOLS)
    assert found == Written(calls=[("reply", HI)], prose=_prose(before, after))


@pytest.mark.parametrize("around", AROUND.values(), ids=list(AROUND))
@pytest.mark.parametrize("shape", SHAPES.values(), ids=list(SHAPES))
def test_a_stream_shows_the_prose_around_a_call_and_nothing_of_the_call(shape, around):
    before, after = around
    assert _stream(before + shape + after) == _prose(before, after)


@pytest.mark.parametrize("text", [
    '[{"name": "reply", "arguments": {"text": "hi"}}, {"name": "shell", "arguments": '
    '{"command": "ls"}}]',
    '<tool_call>{"name": "reply", "arguments": {"text": "hi"}}</tool_call>\n'
    '<tool_call>{"name": "shell", "arguments": {"command": "ls"}}</tool_call>',
    '<tool_call>{"name": "reply", "arguments": {"text": "hi"}}\n'
    '<tool_call>{"name": "shell", "arguments": {"command": "ls"}}',
    '[TOOL_CALLS] [{"name": "reply", "arguments": {"text": "hi"}}, {"name": "shell", '
    '"arguments": {"command": "ls"}}]',
    '<|python_tag|>{"name": "reply", "parameters": {"text": "hi"}}; '
    '{"name": "shell", "parameters": {"command": "ls"}}',
    '{"name": "reply", "arguments": {"text": "hi"}}\n{"name": "shell", "arguments": '
    '{"command": "ls"}}',
    '```json\n{"name": "reply", "arguments": {"text": "hi"}}\n```\n```json\n{"name": "shell", '
    '"arguments": {"command": "ls"}}\n```',
    '<function=reply>{"text": "hi"}</function>\n<function=shell>{"command": "ls"}</function>',
    '<tools>\n<reply text="hi"/>\n<shell command="ls"/>\n</tools>',
], ids=["bare_list", "tags", "tags_unclosed", "mistral_list", "python_tag_semicolons",
        "bare_lines", "two_fences", "function_tags", "elements"])
def test_several_calls_in_one_message_are_read_in_order(text):
    assert read_text(text, TOOLS) == Written(
        calls=[("reply", HI), ("shell", '{"command": "ls"}')], prose="")


def test_prose_between_calls_is_kept_in_order():
    text = ('First.\n<tool_call>{"name": "reply", "arguments": {"text": "hi"}}</tool_call>\n'
            'Second.\n<tool_call>{"name": "list_tasks", "arguments": {}}</tool_call>\nThird.')
    assert read_text(text, TOOLS).prose == "First.\n\nSecond.\n\nThird."


def test_the_same_call_written_over_and_over_is_read_once():
    text = "\n".join(['{"name": "reply", "arguments": {"text": "hi"}}'] * 5)
    assert read_text(text, TOOLS).calls == [("reply", HI)]


@pytest.mark.parametrize("arguments", [
    {"text": "hi"}, json.dumps({"text": "hi"}), json.dumps(json.dumps({"text": "hi"})),
], ids=["object", "string", "double_encoded"])
def test_written_arguments_in_any_encoding_become_one_json_object_text(arguments):
    text = json.dumps({"name": "reply", "arguments": arguments})
    assert read_text(text, TOOLS).calls == [("reply", HI)]


def test_written_arguments_that_are_null_are_an_empty_object():
    assert read_text('{"name": "list_tasks", "arguments": null}', TOOLS).calls == [
        ("list_tasks", "{}")]


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "reply", "arguments": {"text": "hi"}</tool_call>',
    '{"name": "reply", "arguments": {"text": "hi"',
    '```json\n{"name": "reply", "arguments": {"text": "hi"}\n```',
], ids=["tag", "bare_at_the_end", "fenced"])
def test_a_call_missing_its_last_braces_is_repaired(text):
    assert read_text(text, TOOLS) == Written(calls=[("reply", HI)], prose="")


def test_a_function_tag_without_arguments_calls_with_none():
    assert read_text("<function=list_tasks></function>", TOOLS).calls == [("list_tasks", "{}")]


# --- unknown tools and unreadable calls -----------------------------------------------------------


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "fly", "arguments": {"to": "moon"}}</tool_call>',
    '<|python_tag|>{"name": "fly", "parameters": {"to": "moon"}}',
    '[TOOL_CALLS] [{"name": "fly", "arguments": {"to": "moon"}}]',
    '[TOOL_CALLS]fly[ARGS]{"to": "moon"}',
    '<function=fly>{"to": "moon"}</function>',
], ids=["hermes", "python_tag", "mistral", "mistral_named", "function_tag"])
def test_a_marked_call_of_an_unknown_tool_is_reported_as_unknown(text):
    assert read_text("Off we go.\n" + text, TOOLS) == Written(
        calls=[], prose="Off we go.", unknown=["fly"])


def test_known_and_unknown_calls_in_one_message_are_told_apart():
    text = ('<tool_call>{"name": "reply", "arguments": {"text": "hi"}}</tool_call>'
            '<tool_call>{"name": "fly", "arguments": {}}</tool_call>')
    found = read_text(text, TOOLS)
    assert (found.calls, found.unknown) == ([("reply", HI)], ["fly"])


def test_a_bare_blob_naming_no_tool_of_the_role_is_prose():
    text = '{"name": "fly", "arguments": {"to": "moon"}}'
    assert read_text(text, TOOLS) == Written(prose=text)


@pytest.mark.parametrize("text, excerpt", [
    ('<tool_call>{"foo": 1}</tool_call>', '<tool_call>{"foo": 1}</tool_call>'),
    ('<tool_call>{"name": "reply", "argu', '<tool_call>{"name": "reply", "argu'),
], ids=["no_name", "cut"])
def test_a_call_that_cannot_be_read_is_reported_as_broken(text, excerpt):
    assert read_text("Trying.\n" + text, TOOLS) == Written(
        calls=[], prose="Trying.", broken=[excerpt])


@pytest.mark.parametrize("text", [
    "Hello! How can I help you today?",
    "你好！今天有什么可以帮你的？我们可以聊聊天气、新闻或者任何你感兴趣的话题。",
    'Here is the record: {"name": "Alice", "age": 30}',
    '```json\n{"name": "Alice", "arguments": ["a"]}\n```',
    '{"a": 1}',
    "[1, 2, 3]",
    '{"type": "object", "properties": {"text": {"type": "string"}}}',
    "function f() { return {a: 1}; } // and [x] < y",
    "Qwen writes its calls in <tool_call> tags, Llama after <|python_tag|>.",
    "I will reply (soon) and delegate {the rest} later.",
    "Answer with <reply> and hand work over with <delegate>.",
    '{"example": {"name": "reply", "arguments": {"text": "hi"}}, "note": "a sample"}',
    "",
], ids=["english", "chinese", "ordinary_object", "fenced_ordinary_json", "small_object", "list",
        "json_schema", "code", "tags_named_in_prose", "names_with_brackets",
        "elements_never_closed", "call_inside_ordinary_json", "empty"])
def test_text_without_a_call_is_all_prose(text):
    found = read_text(text, TOOLS)
    assert found.calls == [] and found.prose == text.strip()
    assert _stream(text) == text.strip()


def test_call_markup_with_nothing_in_it_is_no_text_at_all():
    assert read_text("<tools>\n</tools>", TOOLS) == Written()


# --- the stream -----------------------------------------------------------------------------------


def test_plain_prose_is_shown_whole():
    text = "Sure, 3 < 4 is true; `code` is code.\n你好，世界。"
    assert _stream(text) == text


def test_an_answer_cut_inside_a_call_shows_nothing_of_it():
    shown = _stream('Checking.\n<tool_call>\n{"name": "reply", "arguments": {"text": "he')
    assert shown == "Checking."


def test_chinese_prose_is_shown_and_the_call_after_it_is_not():
    assert _stream('好的，马上回复。{"name": "reply", "arguments": {"text": "你好"}}') == "好的，马上回复。"


FRAGMENTS = ["<tool_call>", "</tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "<function=reply>",
             "</function>", "[ARGS]", "```json\n", "```", "{", "}", "{{", "}}", "[", "]", '"',
             '\\"', "\\", ":", ",", ";", " ", "\n", '"name"', '"arguments"', '"parameters"',
             '"reply"', '"fly"', '"text"', '"hi"', "null", "tru", "你好", "prose", "<", "<tool",
             '{"name": "reply", "arguments": {"text": "hi"}}', "<reply", "/>", ">", "</reply>",
             ' text="hi"', "<text>", "</text>", "<tools>", "</tools>", "reply(", ")", "reply"]
marked_text = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
any_text = st.text(max_size=300) | marked_text


@given(any_text, st.lists(st.integers(min_value=1, max_value=7), max_size=60))
@PROPERTY
def test_what_a_stream_shows_is_what_the_reader_calls_prose(text, sizes):
    assert _stream(text, sizes) == read_text(text, TOOLS).prose


PROSE_CHARS = st.characters(codec="utf-8", exclude_characters='"`\\=\r')
prose_text = st.text(PROSE_CHARS, max_size=40)


@given(prose_text, st.sampled_from(list(SHAPES.values())), prose_text,
       st.lists(st.integers(min_value=1, max_value=9), max_size=40))
@PROPERTY
def test_no_byte_of_a_call_is_ever_shown_whatever_prose_surrounds_it(before, shape, after, sizes):
    call = shape.replace("hi", "SECRET7f3")
    assert "SECRET" not in _stream(before + "\n" + call + "\n" + after, sizes)


@given(st.binary(max_size=200))
@PROPERTY
def test_the_reader_takes_any_decoded_bytes(raw):
    text = raw.decode("utf-8", errors="replace")
    assert isinstance(read_text(text, TOOLS).prose, str)
    _stream(text, [3] * 70)


ACCOUNT = "What its run did:"
REPORT = ('{"reply": "It printed 2, 4 and 6. ' + ACCOUNT.lower().capitalize() + " wrote evens.py "
          '(39 bytes); ran `python3 evens.py`: exit 0, output: 2 4 6"}')


@given(st.lists(st.integers(min_value=1, max_value=9), max_size=60))
@PROPERTY
def test_a_text_field_ends_where_the_model_begins_one_of_its_ends(sizes):
    """A report copying the runtime's account ends with its first words, which are not shown;
    the stream is not read further (the server stops writing it)."""
    pieces, pos = [], 0
    for size in [*sizes, len(REPORT)]:
        pieces.append(REPORT[pos:pos + size])
        pos += size
    read: list[str] = []

    def chunks():
        for piece in pieces:
            read.append(piece)
            yield {"choices": [{"delta": {"content": piece}}]}

    shown: list[str] = []
    found = read_stream(chunks(), shown.append, text_field=TextField("reply", (ACCOUNT,)),
                        schema=True)
    assert found is not None and found.ended and found.content is not None
    assert json.loads(found.content) == {"reply": "It printed 2, 4 and 6. What its run did:"}
    assert "".join(shown) == "It printed 2, 4 and 6. "
    whole = REPORT.lower().find(ACCOUNT.lower()) + len(ACCOUNT)  # where the end is written
    assert len("".join(read[:-1])) < whole <= len("".join(read))  # and no piece more read


@pytest.mark.parametrize("said", ["It printed 2 and 4. What", "It took a while", "Done."])
def test_a_text_field_that_only_begins_an_end_is_shown_whole(said):
    shown: list[str] = []
    answer = json.dumps({"reply": said})
    found = read_stream(({"choices": [{"delta": {"content": char}}]} for char in answer),
                        shown.append, text_field=TextField("reply", (ACCOUNT,)), schema=True)
    assert found is not None and not found.ended and found.content == answer
    assert "".join(shown) == said


MEGABYTE = 1_000_000


@pytest.mark.parametrize("unit", [
    "The quick brown fox jumps over the lazy dog. ",
    "{", '{"', '{{"', '[{"a":', '{"a": "\\', "<tool_call>", '<tool_call>{"a":', "```json\n",
    '{"name": "reply", "arguments": {"text": "hi"}} ', "(((",
    "<reply>", '<reply text="x" ', "<reply><text>", '<reply text="hi"/> ',
], ids=["prose", "braces", "brace_quotes", "doubled", "nested", "escapes", "tags", "tags_json",
        "fences", "calls", "parentheses",
        "elements_unclosed", "element_attributes_unclosed", "element_children_unclosed",
        "element_calls"])
def test_a_megabyte_of_text_is_read_in_bounded_time(unit):
    text = unit * (MEGABYTE // len(unit))
    read_text(text, TOOLS)
    _stream(text, [4096] * (len(text) // 4096))


def test_a_megabyte_of_random_symbols_is_read_in_bounded_time():
    rng = random.Random(7)
    text = "".join(rng.choice('{}[]":,\\ <>`()\nab') for _ in range(MEGABYTE))
    read_text(text, TOOLS)
    _stream(text, [4096] * (len(text) // 4096))
