"""Injection before a Teller run: keywords, history selection and the memory block."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from mimikit.memory import (
    MemoryHit,
    estimate_tokens,
    extract_keywords,
    format_history,
    format_memory,
    select_history,
)
from mimikit.memory.inject import memory_passages
from mimikit.memory.passages import TRUNCATION_MARK
from mimikit.models import Message

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def msg(i: int, role: str, text: str) -> Message:
    return Message(role=role, text=text, createdAt=T0 + timedelta(minutes=i))


def mixed_history(count: int = 1000, seed: int = 7) -> list[Message]:
    rng = random.Random(seed)
    history = []
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        kind = rng.choice(["short", "medium", "long", "cjk", "huge"])
        text = {
            "short": f"ok {i}",
            "medium": f"message {i} " + "words " * rng.randint(10, 80),
            "long": f"long {i} " + "x" * rng.randint(501, 3000),
            "cjk": f"第{i}条" + "中文内容" * rng.randint(5, 200),
            "huge": f"huge {i} " + "y" * 5000,
        }[kind]
        history.append(msg(i, role, text))
    return history


def is_cut_of(short: str, full: str) -> bool:
    return short.endswith(TRUNCATION_MARK) and full.startswith(short[: -len(TRUNCATION_MARK)])


# --- history ---------------------------------------------------------------------------------


def test_history_of_1000_mixed_messages_respects_every_budget_and_bound():
    history = mixed_history()
    originals = {(m.createdAt, m.role): m.text for m in history}
    for budget in (4096, 1500, 600):
        chosen = select_history(history, budget_tokens=budget)
        assert 5 <= len(chosen) <= 20
        if len(chosen) > 5:
            assert estimate_tokens(format_history(chosen)) <= budget
        times = [m.createdAt for m in chosen]
        assert times == sorted(times) and times[-1] == history[-1].createdAt  # newest kept
        for message in chosen:
            full = originals[(message.createdAt, message.role)]
            assert message.text == full or is_cut_of(message.text, full)
            if message.role == "assistant":
                assert len(message.text) <= 500


def test_history_fills_the_budget_before_stopping():
    history = [msg(i, "user", "word " * 80) for i in range(100)]  # ~100 tokens each
    chosen = select_history(history, budget_tokens=1000)
    assert estimate_tokens(format_history(chosen)) <= 1000
    one_more = select_history(history, budget_tokens=1000, min_count=len(chosen) + 1)
    assert estimate_tokens(format_history(one_more)) > 1000
    assert len(chosen) == 9


def test_history_keeps_at_least_five_messages_even_over_budget():
    history = [msg(i, "user", "z" * 400) for i in range(30)]
    assert len(select_history(history, budget_tokens=50)) == 5


def test_history_returns_at_most_twenty_messages():
    history = [msg(i, "user", "hi") for i in range(500)]
    chosen = select_history(history)
    assert len(chosen) == 20 and chosen[-1].createdAt == history[-1].createdAt


def test_duplicate_messages_with_same_time_and_text_appear_once():
    history = []
    for i in range(10):
        history += [msg(i, "user", f"hello {i}"), msg(i, "user", f"hello {i}")]
    history.append(msg(9, "assistant", "hello 9 answered"))  # same time, other text: kept
    chosen = select_history(history)
    keys = [(m.createdAt, m.text) for m in chosen]
    assert len(keys) == len(set(keys)) == 11


def test_5000_char_assistant_reply_is_cut_before_any_user_message():
    long_user = "please look at this log: " + "error line " * 60  # ~630 chars
    history = [msg(0, "user", long_user), msg(1, "assistant", "a" * 5000), msg(2, "user", long_user)]
    history += [msg(3, "user", "thanks")]
    chosen = select_history(history)
    assistant = next(m for m in chosen if m.role == "assistant")
    assert is_cut_of(assistant.text, "a" * 5000) and len(assistant.text) <= 500
    assert [m.text for m in chosen if m.role == "user"] == [long_user, long_user, "thanks"]


def test_long_user_messages_are_cut_only_when_the_budget_needs_room():
    history = [msg(i, "user", f"{i} " + "q" * 1200) for i in range(6)]  # ~300 tokens each
    roomy = select_history(history, budget_tokens=4096)
    assert all(not m.text.endswith(TRUNCATION_MARK) for m in roomy)
    tight = select_history(history, budget_tokens=900)
    assert len(tight) == 6 and all(len(m.text) <= 500 for m in tight)
    assert estimate_tokens(format_history(tight)) <= 900


def test_format_history_shows_time_role_and_text_and_the_date_of_earlier_days():
    text = format_history([msg(0, "user", "部署好了吗？"), msg(1, "assistant", "Yes, done.")])
    assert text == "[00:00] user: 部署好了吗？\n[00:01] assistant: Yes, done."
    text = format_history([msg(-1, "user", "hi"), msg(0, "user", "部署好了吗？")])
    assert text == "[2025-12-31 23:59] user: hi\n[00:00] user: 部署好了吗？"


# --- memory block ----------------------------------------------------------------------------


def hit(source: str, content: str, score: float) -> MemoryHit:
    return MemoryHit(source=source, content=content, score=score)


def test_memory_block_uses_the_seed_format_best_first():
    block = format_memory([
        hit("docs/dev-conventions.md", "提交信息使用 conventional commits 格式。", 0.5),
        hit("memory.md", "用户偏好使用 pnpm 而非 npm。", 2.0),
    ])
    assert block == (
        "## Memory\n[memory.md] 用户偏好使用 pnpm 而非 npm。\n"
        "[docs/dev-conventions.md] 提交信息使用 conventional commits 格式。"
    )


def test_memory_passages_leave_out_the_chats_copies_where_only_kept_facts_count():
    block = format_memory([
        hit("memory/2026-11-29-chat.md", "# Chat 2026-11-29 ### 19:10 user wrote fib.py", 3.0),
        hit("memory/summary/2026-11.md", "The user wrote notes.txt.", 2.5),
        hit("memory/2026-11-29-记一下-我习惯用-pnpm.md", "记一下：我习惯用 pnpm", 2.0),
        hit("memory.md", "The user's name is Ana.", 1.0),
    ])
    assert memory_passages(block) == [
        "# Chat 2026-11-29 ### 19:10 user wrote fib.py", "The user wrote notes.txt.",
        "记一下：我习惯用 pnpm", "The user's name is Ana."]
    assert memory_passages(block, said=False) == ["记一下：我习惯用 pnpm", "The user's name is Ana."]


def test_memory_block_is_empty_without_hits():
    assert format_memory([]) == ""


def test_memory_block_respects_token_budget_and_five_hit_cap():
    hits = [hit(f"memory/2026-01-{i:02d}-x.md", "记忆内容" * 70, 10 - i) for i in range(1, 9)]
    full = format_memory(hits)
    assert full.count("\n[") == 5 and estimate_tokens(full) <= 2048
    small = format_memory(hits, budget_tokens=700)
    assert small.count("\n[") == 2 and estimate_tokens(small) <= 700
    assert "[memory/2026-01-01-x.md]" in small and "[memory/2026-01-02-x.md]" in small
    assert format_memory(hits, budget_tokens=10) == ""


# --- keywords --------------------------------------------------------------------------------


def test_keywords_come_from_pending_input_first_then_recent_messages():
    recent = [msg(0, "user", "older topic: kubernetes"), msg(1, "assistant", "redis cluster redis")]
    keywords = extract_keywords(["帮我看看部署超时的问题 on Cloudflare"], recent)
    # "帮我", "看看", "的", "问题", "on" are stop words; redis is more frequent than the rest.
    assert keywords == ["部署", "超时", "cloudflare", "redis", "older", "topic"]


def test_keywords_drop_stop_words_duplicates_and_stop_at_six():
    keywords = extract_keywords(["The deploy and THE deploy, 我们的 deploy: alpha beta gamma delta epsilon zeta"], [])
    assert keywords == ["deploy", "alpha", "beta", "gamma", "delta", "epsilon"]
    assert "the" not in keywords and "我们" not in keywords


def test_keywords_read_only_the_last_five_messages():
    recent = [msg(0, "user", "ancient_topic")] + [msg(i, "user", f"topic{i}") for i in range(1, 6)]
    keywords = extract_keywords([], recent)
    assert "ancient_topic" not in keywords and "topic5" in keywords


def _history_lines(section: str) -> list[str]:
    return [line.rpartition(": ")[2] for line in section.splitlines()[1:]]


def test_the_history_shown_begins_at_the_same_message_while_it_fits(runtime):
    from mimikit.agents.context import context_sections
    from mimikit.models import Message

    def add(n: int) -> None:
        runtime.conversation.append(Message(role="user" if n % 2 else "assistant",
                                            text=f"message number {n} " + "word " * 10))

    for n in range(40):
        add(n)
    shown = [context_sections(runtime, [])[0]]
    for n in range(40, 70):
        add(n)
        shown.append(context_sections(runtime, [])[0])
    firsts = [_history_lines(section)[0].split()[2] for section in shown]
    kept = [later.startswith(earlier) for earlier, later in zip(shown, shown[1:], strict=False)]
    # the earlier prompt is the later one's beginning (a server reads the new lines alone),
    # but for the few turns where the history begins anew, about half its room later
    assert kept.count(False) <= 4 and sum(kept) >= 26, (firsts, kept)
    sizes = [len(_history_lines(section)) for section in shown]
    assert min(sizes) >= 5 and max(sizes) >= 2 * min(sizes) - 1, sizes
    assert _history_lines(shown[-1])[-1].startswith("message number 69")


def test_a_run_with_more_to_read_moves_the_history_on_and_the_next_keeps_it(runtime):
    from mimikit.agents.context import context_sections
    from mimikit.models import Message

    for n in range(30):
        runtime.conversation.append(Message(role="user", text=f"note {n} " + "word " * 3))
    context_sections(runtime, [], keep=False)  # as `mimikit prompt` shows it: nothing kept
    assert runtime.redis.get(runtime.keys.meta("history-start|teller")) is None
    plain = context_sections(runtime, [])[0]
    results = "## Task results\n" + "a long result line of words\n" * 40
    busy = context_sections(runtime, [], beside=results)[0]  # a long report leaves less room
    assert 5 <= len(_history_lines(busy)) < len(_history_lines(plain))
    assert context_sections(runtime, [])[0] == busy  # the next begins there: not moved back


def test_a_failed_run_told_at_length_does_not_begin_the_history_anew_at_every_message(runtime):
    """After a failed run, its outcome line and its report take the newest messages past the
    history's room (the 1.5B's household run: 391 of 315 tokens, begun anew at the report, at
    the next message and at the one after, each read whole in 10-13 s): the history shows the
    outcome without what its run did (its report says that again), and keeps where it began
    while beginning anew would show nearly as much, so the next passes read their own lines."""
    from mimikit.agents.context import context_sections
    from mimikit.roles import RUN_DID

    def history(beside: str) -> str:
        return context_sections(runtime, [], beside=beside)[0]

    seen = "## Scheduled\n- scheduled at 2026-12-03 07:18 UTC: Set a reminder 20 minutes " \
        "from now to call the plumber.\n\n## Work directory\ncount.py, groceries.txt, nums.txt"
    said = [("user", "what files are in the work directory?"),
            ("assistant", "count.py and groceries.txt are listed in the working directory. "
             f"{RUN_DID} listed .: count.py, groceries.txt"),
            ("user", "never mind the lights reminder, delete it"),
            ("assistant", "I'll delete the reminder."),
            ("system", "Task canceled: Remind the user to turn off the lights. (task-4585)"),
            ("assistant", "Canceled: Remind the user to turn off the lights."),
            ("user", "write the numbers 3, 7 and 12 into nums.txt, one per line, then tell me "
             "their sum"),
            ("assistant", "I'll create nums.txt with 3, 7 and 12 on each line, then read their "
             "sum."),
            ("system", "Task created: Write the numbers 3, 7 and 12 into nums.txt, one per line, "
             "then tell me their sum (task-sum)")]
    for role, text in said:
        runtime.conversation.append(Message(role=role, text=text))
    history(seen)
    error = "The task asked for a Python script named 'sum_nums.py', but it was not found in " \
        "the work directory. Please create it and try again."
    did = f" {RUN_DID} wrote nums.txt (7 bytes): \"3\\n7\\n12\\n\"" + "; ran `python3 " \
        "sum_nums.py nums.txt`: exit 2, output: \"/root/.pyenv/versions/3.11.7/bin/python3: " \
        "can't open file '/tmp/mimikit-tasks-9wu0x94k/work/sum_nums.py': [Errno 2] No such " \
        "file or directory\"" * 2
    runtime.conversation.system(f"Task failed: Write the numbers 3, 7 and 12 into nums.txt, "
                                f"one per line, then tell me their sum — {error}{did}",
                                taskId="task-sum")
    report = history(f"## Task results\n### task-sum — failed\nerror: {error}\n{did}")
    assert "try again." in report
    assert RUN_DID not in report.rpartition("system:")[2]
    runtime.conversation.append(Message(role="assistant", text=f"Failed: {error}{did}"))
    shown = [history(seen)]
    for asked, answered in [("create a file named after my dog", "What is your dog's name?"),
                            ("Rex", "I'll create rex.txt."),
                            ("never mind the plumber reminder", "I'll cancel it.")]:
        runtime.conversation.append(Message(role="user", text=asked))
        runtime.conversation.append(Message(role="assistant", text=answered))
        shown.append(history(seen))
    assert shown[0].startswith(report), (report, shown[0])  # read at the report
    kept = [later.startswith(earlier) for earlier, later in zip(shown, shown[1:], strict=False)]
    assert kept.count(False) <= 1, kept


def test_a_history_begun_anew_for_a_report_is_where_the_next_message_finds_it(runtime):
    """A report's pass shows the history as the next message's pass will begin it: where it
    is begun anew, it is so at the report, and the message's pass (which a person waits on)
    finds all of it in the server's cache."""
    from mimikit.agents.context import context_sections
    from mimikit.agents.history_ahead import MESSAGE_TOKENS
    from mimikit.models import Message

    seen = "## Scheduled\n" + "".join(f"- every day at 0{n}:00: Remind the user to stretch.\n"
                                     for n in range(1, 8)) + "\n## Work directory\n" + \
        " ".join(f"notes-{n}.txt" for n in range(12))
    said = "20分钟后提醒我关火，然后在 todo.txt 里加一行"  # a message in Chinese: the note beside it
    inbox = (f"今天是 2026-12-01 星期二，现在是 16:20（UTC 时区）。\n\n## Pending inputs\n"
             f"- [2026-12-01T16:20:21.424166Z] user: {said}\n\n(The user writes in Chinese: "
             "reply in Chinese.)")
    restarts = 0
    for n in range(60):
        runtime.conversation.append(Message(role="user" if n % 2 else "assistant",
                                            text=f"message number {n} " + "word " * 10))
        if n % 3:
            continue
        report = context_sections(runtime, [], beside=seen, ahead=MESSAGE_TOKENS)[0]
        message = context_sections(runtime, [said], beside=f"{seen}\n\n{inbox}")[0]
        assert message.startswith(report), (n, report, message)
        restarts += _history_lines(report)[0] != _history_lines(message)[0]
    assert restarts == 0


def test_history_over_a_day_boundary_keeps_to_its_budget():
    history = [msg(600 + 60 * i, "user", "word " * 8) for i in range(48)]  # hourly, 3 days
    for budget in (300, 400):
        chosen = select_history(history, budget_tokens=budget)
        assert len(chosen) > 5 and chosen[0].createdAt.date() != chosen[-1].createdAt.date()
        assert estimate_tokens(format_history(chosen)) <= budget


def test_memory_leaves_out_the_days_copy_of_the_message_being_answered(runtime):
    from mimikit.agents.context import context_sections

    said = "create a file notes.txt containing the word hello"
    memory = runtime.settings.state_dir / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "2026-11-28-chat.md").write_text(f"# Chat 2026-11-28\n\n### 15:51 user\n{said}\n")
    (memory / "2026-11-27-notes.md").write_text("The user keeps notes.txt files in plain text.\n")
    shown = "\n".join(context_sections(runtime, [said]))
    assert "notes.txt files in plain text" in shown
    assert "-chat.md" not in shown  # found by its own words, it tells nothing new


def test_memory_leaves_out_the_chat_the_history_shows_in_any_script_but_not_a_kept_fact(
        runtime):
    from mimikit.agents.context import context_sections
    from mimikit.models import Message

    runtime.conversation.append(Message(role="user", text="你好，你是谁？"))
    runtime.conversation.append(Message(role="assistant", text="我是 Mimikit。"))
    memory = runtime.settings.state_dir / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "2026-11-28-chat.md").write_text("# Chat 2026-11-28\n\n### 15:59 user\n你好，你是谁？\n")
    (memory / "2026-11-27-notes.md").write_text("你是谁 Mimikit 的说明：一个助手。\n")
    (runtime.settings.state_dir / "memory.md").write_text("你好，你是谁？\n")  # kept: stays
    shown = "\n".join(context_sections(runtime, ["17 乘以 23 是多少？你是谁"]))
    assert "的说明" in shown and "[memory.md]" in shown and "-chat.md" not in shown


def test_the_history_does_not_repeat_an_answer_the_runs_inputs_hold(runtime):
    from mimikit.agents.context import context_sections
    from mimikit.models import Message

    for text in ("which files are in the work dir?", "cancel the water reminder"):
        runtime.conversation.append(Message(role="user", text=text))
    beside = ("## User request\nwhich package manager do I use?\n\nQuestion: Which one?\n"
              "Answer (chat): cancel the water reminder")
    history = context_sections(runtime, [], roles=("user",), role="planner", beside=beside)[0]
    assert "which files are in the work dir?" in history
    assert "cancel the water reminder" not in history  # the inputs say it once
