"""Tool calls written into message text, and arguments in odd encodings, read back into calls;
and the streaming filter that never shows such a call to the user.

Each shape is one that a server or model named in ``mimikit/llm/quirks.py`` sends.
"""

from __future__ import annotations

import json
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mimikit.llm.prose import ProseFilter
from mimikit.llm.quirks import WrittenCalls, arguments_text, looks_truncated, written_calls

TOOLS = ["reply", "delegate", "shell", "list_tasks"]
HI = '{"text": "hi"}'
PROPERTY = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "200")), deadline=None,
                    database=None, suppress_health_check=[HealthCheck.too_slow])

# One call of reply{text: "hi"} in every shape seen.
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
    "double_braces_all": '{{"name": "reply", "arguments": {{"text": "hi"}}}}',
    "openai_wire": '{"id": "call_1", "type": "function", "function": {"name": "reply", '
                   '"arguments": "{\\"text\\": \\"hi\\"}"}}',
    "openai_wire_object": '{"type": "function", "function": {"name": "reply", '
                          '"arguments": {"text": "hi"}}}',
    "openai_namespace": '{"name": "functions.reply", "arguments": {"text": "hi"}}',
    "generic_tool_call": '{"tool_call": {"name": "reply", "arguments": {"text": "hi"}}}',
    "generic_tool_calls": '{"tool_calls": [{"name": "reply", "arguments": {"text": "hi"}}]}',
    "parallel_leak": '{"tool_uses": [{"recipient_name": "functions.reply", '
                     '"parameters": {"text": "hi"}}]}',
    "list_of_one": '[{"name": "reply", "arguments": {"text": "hi"}}]',
    "key_tool_args": '{"tool": "reply", "args": {"text": "hi"}}',
    "key_tool_name_input": '{"tool_name": "reply", "input": {"text": "hi"}}',
    "key_function_string": '{"function": "reply", "arguments": {"text": "hi"}}',
    "other_keys_are_arguments": '{"name": "reply", "text": "hi"}',
    "loose_arguments": '{"name": "reply", "arguments": {text: \'hi\',}}',
    "doubled_loose_arguments": '{{"name": "reply", "arguments": {text: "hi"}}}',
    "name_then_literal": 'reply{text: "hi"}',
    "name_then_json": 'reply {"text": "hi"}',
    "name_then_single_quotes": "reply{'text': 'hi',}",
    "name_called_on_object": 'reply({"text": "hi"})',
    "name_called_with_keywords": "reply(text='hi')",
    "name_in_backticks": '`reply{text: "hi"}`',
    "name_in_namespace": 'functions.reply{"text": "hi"}',
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


def _stream(text: str, sizes: list[int] | None = None) -> tuple[list[str], str]:
    """What a ``ProseFilter`` shows of ``text`` fed in pieces (one character each by default)."""
    prose = ProseFilter(TOOLS)
    pieces, pos = [], 0
    for size in sizes or [1] * len(text):
        pieces.append(text[pos : pos + size])
        pos += size
    pieces.append(text[pos:])
    return [prose.feed(piece) for piece in pieces], prose.finish()


# --- arguments_text -------------------------------------------------------------------------------


def test_arguments_sent_as_json_text_are_kept_as_sent():
    assert arguments_text('{"text": "hi",  "n": 1}') == '{"text": "hi",  "n": 1}'


def test_arguments_sent_as_an_object_become_json_text_keeping_non_ascii():
    assert arguments_text({"text": "你好", "n": 1}) == '{"text": "你好", "n": 1}'


def test_arguments_encoded_twice_are_unwrapped():
    assert arguments_text(json.dumps(json.dumps({"text": "hi"}))) == HI
    assert json.loads(arguments_text(json.dumps(json.dumps(json.dumps({"a": 1}))))) == {"a": 1}


@pytest.mark.parametrize("raw", [None, "", "  \n"])
def test_no_arguments_are_an_empty_object(raw):
    assert arguments_text(raw) == "{}"


@pytest.mark.parametrize("raw, text", [
    ([1, 2], "[1, 2]"), (5, "5"), ('{"text": ', '{"text": '), ('"just text"', '"just text"'),
    ("[1, 2]", "[1, 2]"), ("not json", "not json"), (True, "true"),
])
def test_arguments_that_are_no_object_are_passed_on_as_text_for_the_registry_to_refuse(raw, text):
    assert arguments_text(raw) == text


def test_arguments_no_json_can_hold_still_become_text():
    circle: dict = {}
    circle["self"] = circle
    assert isinstance(arguments_text(circle), str)
    assert isinstance(arguments_text({(1, 2): "tuple key"}), str)
    assert arguments_text({"items": {1, 2}}) == '{"items": "{1, 2}"}'


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(), inner, max_size=3), max_leaves=10))
@PROPERTY
def test_arguments_text_never_raises_and_gives_an_object_for_every_dict(raw):
    text = arguments_text(raw)
    assert isinstance(text, str)
    if isinstance(raw, dict):
        assert isinstance(json.loads(text), dict)


# --- written_calls: one call in every shape, with prose around it ---------------------------------


@pytest.mark.parametrize("around", AROUND.values(), ids=list(AROUND))
@pytest.mark.parametrize("shape", SHAPES.values(), ids=list(SHAPES))
def test_a_written_call_is_read_and_the_prose_around_it_kept(shape, around):
    before, after = around
    found = written_calls(before + shape + after, TOOLS)
    assert found == WrittenCalls(calls=[("reply", HI)], prose=_prose(before, after))


def test_several_tagged_calls_in_one_message_are_all_read():
    text = ("I will answer and hand the rest on.\n"
            '<tool_call>\n{"name": "reply", "arguments": {"text": "hi"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "delegate", "arguments": {"prompt": "plan it"}}\n</tool_call>')
    assert written_calls(text, TOOLS) == WrittenCalls(
        calls=[("reply", HI), ("delegate", '{"prompt": "plan it"}')],
        prose="I will answer and hand the rest on.")


def test_tags_without_their_closing_tag_each_hold_a_call():
    text = ('<tool_call>{"name": "reply", "arguments": {"text": "hi"}}\n'
            '<tool_call>{"name": "list_tasks", "arguments": {}}')
    assert written_calls(text, TOOLS).calls == [("reply", HI), ("list_tasks", "{}")]


@pytest.mark.parametrize("text", [
    '[{"name": "reply", "arguments": {"text": "hi"}}, {"name": "shell", "arguments": '
    '{"command": "ls"}}]',
    '<tool_call>[{"name": "reply", "arguments": {"text": "hi"}}, {"name": "shell", '
    '"arguments": {"command": "ls"}}]</tool_call>',
    '[TOOL_CALLS] [{"name": "reply", "arguments": {"text": "hi"}}, {"name": "shell", '
    '"arguments": {"command": "ls"}}]',
    '<|python_tag|>{"name": "reply", "parameters": {"text": "hi"}}; '
    '{"name": "shell", "parameters": {"command": "ls"}}',
    '{"name": "reply", "arguments": {"text": "hi"}}\n{"name": "shell", "arguments": '
    '{"command": "ls"}}',
    '```json\n{"name": "reply", "arguments": {"text": "hi"}}\n{"name": "shell", "arguments": '
    '{"command": "ls"}}\n```',
    '```json\n{"name": "reply", "arguments": {"text": "hi"}}\n```\n```json\n{"name": "shell", '
    '"arguments": {"command": "ls"}}\n```',
    '<function=reply>{"text": "hi"}</function>\n<function=shell>{"command": "ls"}</function>',
], ids=["bare_list", "tagged_list", "mistral_list", "python_tag_semicolons", "bare_lines",
        "one_fence", "two_fences", "function_tags"])
def test_several_calls_in_one_message_are_read_in_order(text):
    assert written_calls(text, TOOLS) == WrittenCalls(
        calls=[("reply", HI), ("shell", '{"command": "ls"}')], prose="")


def test_prose_between_calls_is_kept_in_order():
    text = ('First.\n<tool_call>{"name": "reply", "arguments": {"text": "hi"}}</tool_call>\n'
            'Second.\n<tool_call>{"name": "list_tasks", "arguments": {}}</tool_call>\nThird.')
    assert written_calls(text, TOOLS).prose == "First.\n\nSecond.\n\nThird."


# --- arguments in their three encodings -----------------------------------------------------------


@pytest.mark.parametrize("arguments", [
    {"text": "hi"}, json.dumps({"text": "hi"}), json.dumps(json.dumps({"text": "hi"})),
], ids=["object", "string", "double_encoded"])
def test_written_arguments_in_any_encoding_become_one_json_object_text(arguments):
    text = json.dumps({"name": "reply", "arguments": arguments})
    assert written_calls(text, TOOLS).calls == [("reply", HI)]


def test_written_arguments_that_are_null_are_an_empty_object():
    assert written_calls('{"name": "list_tasks", "arguments": null}', TOOLS).calls == [
        ("list_tasks", "{}")]


def test_written_arguments_that_are_a_list_reach_the_registry_as_they_are():
    assert written_calls('{"name": "reply", "arguments": [1, 2]}', TOOLS).calls == [
        ("reply", "[1, 2]")]


def test_a_tagged_call_missing_its_last_brace_is_repaired():
    text = '<tool_call>{"name": "reply", "arguments": {"text": "hi"}</tool_call>'
    assert written_calls(text, TOOLS) == WrittenCalls(calls=[("reply", HI)], prose="")


def test_a_function_tag_without_arguments_calls_with_none():
    assert written_calls("<function=list_tasks></function>", TOOLS).calls == [("list_tasks", "{}")]


# --- unknown tools and unreadable calls -----------------------------------------------------------


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "fly", "arguments": {"to": "moon"}}</tool_call>',
    '<|python_tag|>{"name": "fly", "parameters": {"to": "moon"}}',
    '[TOOL_CALLS] [{"name": "fly", "arguments": {"to": "moon"}}]',
    '[TOOL_CALLS]fly[ARGS]{"to": "moon"}',
    '<function=fly>{"to": "moon"}</function>',
], ids=["hermes", "python_tag", "mistral", "mistral_named", "function_tag"])
def test_a_marked_call_of_an_unknown_tool_is_reported_as_unknown(text):
    assert written_calls("Off we go.\n" + text, TOOLS) == WrittenCalls(
        calls=[], prose="Off we go.", unknown=["fly"])


def test_known_and_unknown_calls_in_one_message_are_told_apart():
    text = ('<tool_call>{"name": "reply", "arguments": {"text": "hi"}}</tool_call>'
            '<tool_call>{"name": "fly", "arguments": {}}</tool_call>')
    found = written_calls(text, TOOLS)
    assert (found.calls, found.unknown) == ([("reply", HI)], ["fly"])


@pytest.mark.parametrize("text", [
    '{"name": "fly", "arguments": {"to": "moon"}}',
    '[{"name": "reply", "arguments": {"text": "hi"}}, {"name": "fly", "arguments": {}}]',
])
def test_a_bare_blob_naming_an_unknown_tool_is_not_a_call(text):
    assert written_calls(text, TOOLS) is None


@pytest.mark.parametrize("text, excerpt", [
    ("<tool_call>not json at all</tool_call>", "<tool_call>not json at all</tool_call>"),
    ('<tool_call>{"foo": 1}</tool_call>', '{"foo": 1}'),
    ('<tool_call>{"name": "reply", "argu', '<tool_call>{"name": "reply", "argu'),
    ('<|python_tag|>brave_search.call(query="x")', '<|python_tag|>brave_search.call(query="x")'),
    ("<function=reply>text: hi</function>", "<function=reply>text: hi</function>"),
])
def test_a_marked_call_that_cannot_be_read_is_reported_as_broken(text, excerpt):
    assert written_calls("Trying.\n" + text, TOOLS) == WrittenCalls(
        calls=[], prose="Trying.", broken=[excerpt])


# --- text that holds no call ----------------------------------------------------------------------


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
    "Set {{name}} in the template and {{ reply }} too.",
    "",
], ids=["english", "chinese", "ordinary_object", "fenced_ordinary_json", "small_object",
        "list", "json_schema", "code", "tags_named_in_prose", "template_braces", "empty"])
def test_text_without_a_call_is_not_taken_for_one(text):
    assert written_calls(text, TOOLS) is None


@pytest.mark.parametrize("text", [
    "I will reply (soon) and delegate {the rest} later.",
    "Only reply {when asked}, and delegate (as told) {later}.",
    "prereply{text: 'hi'} and my_delegate(prompt='x') are other names",
    "A callback: onreply({text: 1})",
    "Answer with <reply> and hand work over with <delegate>.",
    "<replying to=\"you\"/> is another tag",
], ids=["names_with_brackets_in_prose", "braces_not_arguments", "longer_words", "suffix",
        "elements_never_closed", "longer_element_name"])
def test_a_tool_name_in_prose_is_not_taken_for_a_call(text):
    found = written_calls(text, TOOLS)
    assert found is None or not found.calls, found


def test_the_planner_example_copied_from_its_prompt_is_read_as_its_calls():
    text = ('1. `delegate{prompt: "Read src/utils.py and its importers; propose modules.", '
            'title: "Plan split", retry: {maxAttempts: 2}, urgent: True, note: None}` '
            '→ `{taskId: "A1"}`\n2. `list_tasks()`')
    found = written_calls(text, TOOLS)
    assert found is not None
    assert [(name, json.loads(arguments)) for name, arguments in found.calls] == [
        ("delegate", {"prompt": "Read src/utils.py and its importers; propose modules.",
                      "title": "Plan split", "retry": {"maxAttempts": 2}, "urgent": True,
                      "note": None}),
        ("list_tasks", {})]
    assert found.prose == '1. → `{taskId: "A1"}`\n2.'


def test_the_calls_qwen_coder_writes_as_elements_in_its_tools_list_are_read():
    text = ('<tools>\n  <delegate prompt="Remind the user to drink water at 9am" '
            'title="Water" notify="always" condition=\'{"type": "file_exists", '
            '"params": {"path": "a.txt"}}\'/>\n  <list_tasks/>\n</tools>')
    found = written_calls(text, TOOLS)
    assert found is not None and found.prose == ""
    assert [(name, json.loads(arguments)) for name, arguments in found.calls] == [
        ("delegate", {"prompt": "Remind the user to drink water at 9am", "title": "Water",
                      "notify": "always",
                      "condition": {"type": "file_exists", "params": {"path": "a.txt"}}}),
        ("list_tasks", {})]


def test_an_element_with_entities_and_text_that_is_neither_children_nor_object():
    found = written_calls('<reply text="5 &lt; 6 &amp; &quot;ok&quot;"/>', TOOLS)
    assert found is not None and found.calls == [("reply", '{"text": "5 < 6 & \\"ok\\""}')]
    found = written_calls("<reply>just words</reply>", TOOLS)
    assert found is None or not found.calls


@pytest.mark.parametrize("text, calls", [
    ('.delegate("Remind me at 9am.", timeout=3600).',
     [("delegate", '{"*0": "Remind me at 9am.", "timeout": 3600}')]),
    ('reply("hi")', [("reply", '{"*0": "hi"}')]),
])
def test_arguments_by_place_are_kept_by_place_and_a_lone_dot_is_no_prose(text, calls):
    assert written_calls(text, TOOLS) == WrittenCalls(calls=calls, prose="")


@pytest.mark.parametrize("text, calls", [
    ('`delegate` "list_tasks" "What\'s up?"',  # Qwen2.5-Coder 1.5B greeted with "hello!"
     [("delegate", '{"*0": "list_tasks", "*1": "What\'s up?"}')]),
    ('reply: "Hello!"', [("reply", '{"*0": "Hello!"}')]),
    ("  shell 'ls -la' ", [("shell", '{"*0": "ls -la"}')]),
    ("`reply` `Hi`", [("reply", '{"*0": "Hi"}')]),
    ("delegate", [("delegate", "{}")]),
])
def test_an_answer_of_a_name_and_quoted_strings_is_that_call_by_place(text, calls):
    assert written_calls(text, TOOLS) == WrittenCalls(calls=calls, prose="")


@pytest.mark.parametrize("text", ['`delegate` "a", reply "b"', '"Hi" reply', "reply delegate"])
def test_names_and_quoted_strings_that_make_no_one_call_are_a_broken_call(text):
    assert written_calls(text, TOOLS) == WrittenCalls(calls=[], prose="", broken=[text])


@pytest.mark.parametrize("text", ['"Hello!"', 'reply "yes" when asked', "Reply: 'Hello!'",
                                  'replying "Hi"', "I'll delegate it."])
def test_words_beside_names_and_quotes_are_prose(text):
    assert written_calls(text, TOOLS) is None


@pytest.mark.parametrize("text", ['self.reply("hi")', 'items).reply("hi")',
                                  'reply(text="hi", "again")'])
def test_a_method_call_or_a_place_after_a_keyword_is_no_call(text):
    found = written_calls(text, TOOLS)
    assert found is None or not found.calls


def test_a_call_in_doubled_braces_with_keys_left_unquoted_inside_is_read():
    # Qwen2.5-coder 1.5B as a Planner, its braces doubled and its inner keys bare
    text = ('{{"name": "submit_result", "arguments": {"status": "done", "resultType": "text", '
            '"result": {text: "Delegated notes.txt."}, "question": null}}}')
    found = written_calls(text, ["submit_result"])
    assert found is not None and found.prose == ""
    assert [(name, json.loads(arguments)) for name, arguments in found.calls] == [
        ("submit_result", {"status": "done", "resultType": "text",
                           "result": {"text": "Delegated notes.txt."}, "question": None})]


@pytest.mark.parametrize("text, excerpt", [
    ('delegate{prompt: "Read src/utils.py", title: Plan}', 'delegate{prompt: "Read src/utils.py"'),
    ('shell{command: "ls -la"', 'shell{command: "ls -la"'),
])
def test_a_named_call_that_cannot_be_read_is_reported_as_broken(text, excerpt):
    found = written_calls(text, TOOLS)
    assert found is not None and not found.calls
    assert found.broken[0].startswith(excerpt)


def test_keyword_arguments_in_chinese_and_nested_lists_are_read():
    found = written_calls("reply(text='你好，世界', tags=['a', \"b\"], n=-1.5e3)", TOOLS)
    assert found is not None
    assert json.loads(found.calls[0][1]) == {"text": "你好，世界", "tags": ["a", "b"], "n": -1500.0}


def test_a_call_inside_ordinary_json_is_part_of_that_json():
    text = '{"example": {"name": "reply", "arguments": {"text": "hi"}}, "note": "a sample"}'
    assert written_calls(text, TOOLS) is None


# --- Chinese --------------------------------------------------------------------------------------


def test_a_call_amid_chinese_prose_keeps_its_chinese_arguments():
    text = ('好的，我来回复你。\n<tool_call>\n{"name": "reply", "arguments": '
            '{"text": "你好，世界！"}}\n</tool_call>\n还有别的需要吗？')
    assert written_calls(text, TOOLS) == WrittenCalls(
        calls=[("reply", '{"text": "你好，世界！"}')], prose="好的，我来回复你。\n\n还有别的需要吗？")


def test_a_bare_call_right_after_chinese_punctuation_is_read():
    text = '好的：{"name": "reply", "arguments": {"text": "收到"}}。'
    assert written_calls(text, TOOLS) == WrittenCalls(
        calls=[("reply", '{"text": "收到"}')], prose="好的： 。")


# --- looks_truncated ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "Let me check. <tool_call>",
    '<tool_call>\n{"name": "reply", "arguments": {"text": "hel',
    '<tool_call>{"name": "reply", "arguments": {"text": "a \\"quoted\\" wor',
    '<|python_tag|>{"name": "reply"',
    "<|python_tag|>",
    '[TOOL_CALLS] [{"name": "reply", "arguments": {',
    "[TOOL_CALLS]",
    "[TOOL_CALLS]reply[AR",
    '<function=reply>{"text": "h',
    "<function=rep",
    'Sure: {"name": "reply", "arguments": {"text": "hi"',
    '```json\n{"name": "reply",',
    '{"type": "function", "function": {"name": "reply"',
], ids=["bare_tag", "tag_json", "tag_json_escapes", "python_tag_json", "python_tag_only",
        "mistral_json", "mistral_only", "mistral_named", "function_json", "function_name",
        "bare_call", "fenced_call", "openai_wire"])
def test_text_ending_inside_a_call_looks_truncated(text):
    assert looks_truncated(text)


@pytest.mark.parametrize("text", [
    "Hello there.",
    *SHAPES.values(),
    '<tool_call>{"name": "reply", "arguments": {"text": "hi"}}</tool_call> Done.',
    '<tool_call>{"name": "reply", "arguments": {"text": "hi"}</tool_call>',
    'The data so far: {"rows": [1, 2',
    "Use the <tool_call> tag for calls.",
    "{",
])
def test_text_not_ending_inside_a_call_does_not_look_truncated(text):
    assert not looks_truncated(text)


# --- robustness -----------------------------------------------------------------------------------

FRAGMENTS = ["<tool_call>", "</tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "<function=reply>",
             "</function>", "[ARGS]", "```json\n", "```", "{", "}", "{{", "}}", "[", "]", '"',
             '\\"', "\\", ":", ",", ";", " ", "\n", '"name"', '"arguments"', '"parameters"',
             '"reply"', '"fly"', '"text"', '"hi"', "null", "tru", "你好", "prose", "<", "<tool",
             '{"name": "reply", "arguments": {"text": "hi"}}', "<reply", "/>", ">", "</reply>",
             ' text="hi"', "<text>", "</text>", "<tools>", "</tools>"]
marked_text = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
any_text = st.text(max_size=300) | marked_text


@given(any_text)
@PROPERTY
def test_no_text_makes_the_readers_raise(text):
    found = written_calls(text, TOOLS)
    assert found is None or isinstance(found.prose, str)
    assert looks_truncated(text) in (True, False)


@given(marked_text, st.lists(st.integers(min_value=1, max_value=7), max_size=60))
@PROPERTY
def test_text_without_a_call_streams_through_unchanged(text, sizes):
    shown, rest = _stream(text, sizes)
    assert text.startswith("".join(shown))
    if written_calls(text, TOOLS) is None and not looks_truncated(text):
        assert "".join(shown) + rest == text


PROSE_CHARS = st.characters(codec="utf-8", exclude_characters='"`\\=\r')
prose_text = st.text(PROSE_CHARS, max_size=40)


@given(prose_text, st.sampled_from(list(SHAPES.values())), prose_text,
       st.lists(st.integers(min_value=1, max_value=9), max_size=40))
@PROPERTY
def test_no_byte_of_a_call_is_ever_shown_whatever_prose_surrounds_it(before, shape, after, sizes):
    call = shape.replace('"hi"', '"SECRET-7f3"')
    shown, rest = _stream(before + "\n" + call + "\n" + after, sizes)
    assert "SECRET" not in "".join(shown) + rest
    assert "".join(shown) == before.rstrip()[: len("".join(shown))]


mixed_text = st.lists(st.sampled_from([*FRAGMENTS, "a", ".", "`"]), max_size=12).map("".join)


@given(mixed_text | st.text(max_size=30), st.sampled_from(list(SHAPES.values())),
       mixed_text | st.text(max_size=30), st.lists(st.integers(min_value=1, max_value=9),
                                                   max_size=40))
@PROPERTY
def test_a_call_the_reader_finds_is_never_shown_whatever_text_surrounds_it(before, shape, after,
                                                                           sizes):
    text = before + shape.replace('"hi"', '"SECRET-7f3"') + after
    found = written_calls(text, TOOLS)
    if found is not None and any("SECRET" in arguments for _, arguments in found.calls):
        shown, rest = _stream(text, sizes)
        assert "SECRET" not in "".join(shown) + rest


@given(st.binary(max_size=200))
@PROPERTY
def test_the_readers_take_any_decoded_bytes(raw):
    text = raw.decode("utf-8", errors="replace")
    written_calls(text, TOOLS)
    looks_truncated(text)
    _stream(text, [3] * 70)


MEGABYTE = 1_000_000


@pytest.mark.parametrize("unit", [
    "The quick brown fox jumps over the lazy dog. ",
    "{", '{"', '{{"', '[{"a":', '{"a": "\\', "<tool_call>", '<tool_call>{"a":', "```json\n",
    '{"name": "reply", "arguments": {"text": "hi"}} ',
    "reply{a: [", "reply(a=", "delegate{prompt: 'x ", 'reply{text: "hi"} ',
    '{"name": "reply", "arguments": {text: \'', '{"name": "reply", "arguments": {text: "hi"}} ',
    '{"a": {b: [[[[',
    "<reply>", '<reply text="x" ', "<reply><text>", '<reply text="hi"/> ',
], ids=["prose", "braces", "brace_quotes", "doubled", "nested", "escapes", "tags", "tags_json",
        "fences", "calls", "named_nested", "named_keywords", "named_unclosed", "named_calls",
        "loose_unclosed", "loose_calls", "loose_nested", "elements_unclosed",
        "element_attributes_unclosed", "element_children_unclosed", "element_calls"])
def test_a_megabyte_of_text_is_read_in_bounded_time(unit):
    text = unit * (MEGABYTE // len(unit))
    found = written_calls(text, TOOLS)
    looks_truncated(text)
    _stream(text, [4096] * (len(text) // 4096))
    if unit.startswith(('{"name": "reply", "arguments": {"', "reply{text",
                        '{"name": "reply", "arguments": {text: "', '<reply text="hi"/>')):
        assert len(found.calls) == len(text) // len(unit)


def test_a_megabyte_of_random_symbols_is_read_in_bounded_time():
    rng = random.Random(7)
    text = "".join(rng.choice('{}[]":,\\ <>`\nab') for _ in range(MEGABYTE))
    written_calls(text, TOOLS)
    looks_truncated(text)
    _stream(text, [4096] * (len(text) // 4096))


# --- ProseFilter ----------------------------------------------------------------------------------


@pytest.mark.parametrize("around", AROUND.values(), ids=list(AROUND))
@pytest.mark.parametrize("shape", SHAPES.values(), ids=list(SHAPES))
def test_streaming_shows_the_prose_before_a_call_and_the_rest_at_the_end(shape, around):
    before, after = around
    shown, rest = _stream(before + shape + after)
    assert "".join(shown) == before.rstrip()
    assert "".join(shown) + rest == _prose(before, after)


def test_plain_prose_streams_as_it_arrives():
    text = "Sure, 3 < 4 and [1] is a list; {x} is a set; `code` is code.\n你好，世界。"
    prose, shown = ProseFilter(TOOLS), ""
    for index, char in enumerate(text):
        shown += prose.feed(char)
        held = text[: index + 1][len(shown):].strip()
        # at most a marker's first characters, or a word that may grow into a tool's name
        assert len(held) <= 3 or any(name.startswith(held) for name in TOOLS), held
    assert shown + prose.finish() == text


def test_a_tool_name_is_held_only_until_what_follows_shows_it_is_prose():
    prose, shown = ProseFilter(TOOLS), ""
    for char in "I will reply":
        shown += prose.feed(char)
    assert shown == "I will"
    assert prose.feed(" (soon)") == " reply (soon)"
    assert prose.feed(" then `delegate{prompt: 'x'") == " then"
    assert prose.feed("}` ok") == ""
    assert prose.finish() == " ok"


def test_the_beginning_of_a_marker_is_held_only_until_it_cannot_be_one():
    prose = ProseFilter(TOOLS)
    assert prose.feed("Open the <tool") == "Open the"
    assert prose.feed("box> now, [TOOL") == " <toolbox> now,"
    assert prose.feed("S] done") == " [TOOLS] done"
    assert prose.finish() == ""


def test_an_answer_opening_on_json_is_held_until_it_closes_then_shown_if_no_call():
    prose = ProseFilter(TOOLS)
    assert prose.feed('{"name": "Alice", "age": 3') == ""
    assert prose.feed("0} is the record.") == '{"name": "Alice", "age": 30} is the record.'
    assert prose.finish() == ""


def test_a_blob_naming_an_unknown_tool_is_shown():
    text = 'Example: {"name": "fly", "arguments": {}} done'
    shown, rest = _stream(text)
    assert "".join(shown) + rest == text


def test_an_answer_cut_inside_a_call_shows_nothing_of_it():
    shown, rest = _stream('Checking.\n<tool_call>\n{"name": "reply", "arguments": {"text": "he')
    assert ("".join(shown), rest) == ("Checking.", "")


def test_a_tag_named_in_prose_is_shown_once_the_answer_ends():
    text = "Qwen writes calls in <tool_call> tags."
    shown, rest = _stream(text)
    assert "".join(shown) == "Qwen writes calls in"
    assert "".join(shown) + rest == text


def test_prose_between_several_calls_is_shown_at_the_end():
    text = ('First.\n<tool_call>{"name": "reply", "arguments": {"text": "hi"}}</tool_call>\n'
            'Second.\n<tool_call>{"name": "list_tasks", "arguments": {}}</tool_call>')
    shown, rest = _stream(text)
    assert ("".join(shown), rest) == ("First.", "\n\nSecond.")


def test_chinese_prose_streams_and_the_call_after_it_does_not():
    text = '好的，马上回复。{"name": "reply", "arguments": {"text": "你好"}}'
    shown, rest = _stream(text)
    assert ("".join(shown), rest) == ("好的，马上回复。", "")
