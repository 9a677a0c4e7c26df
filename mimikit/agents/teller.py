"""The Teller: answers the person at once and hands real work to the Planner.

One run at a time cluster-wide (``teller_gate``, its lease kept alive while a pass runs); each
pass handles the new items of the inbox (inputs, task results, answers, notices) and
acknowledges exactly those items, by id, once a reply to them is stored. A pass that ends
without a reply (a timeout, the step limit, an empty or unusable answer, an error) uses a try
of each of its items, which are then tried again alone once the newer ones are answered; an
item out of tries gives up, and the person is told once why (``conversation.tries``). While
the LLM is away the items are kept, using no try, until the supervisor brings the Teller back.
A pass is journaled: a Teller that dies mid-pass resumes it, and a reply already posted is not
posted twice.
"""

from __future__ import annotations

import logging
import time

from redis.exceptions import RedisError

from mimikit.agents.common import answer_path, run_role
from mimikit.agents.context import context_sections
from mimikit.agents.history_ahead import next_history, warm_soon
from mimikit.agents.inbox_view import (
    CHINESE_START,
    done_results,
    done_tasks,
    memory_by_inputs,
    render_inbox,
    report_hint,
    reports_chinese,
    worker_result_numbers,
    writes_chinese,
)
from mimikit.agents.own_words import own_report
from mimikit.agents.prompts import build_prompts, choose_mode, example_replies, unsaid_examples
from mimikit.agents.surroundings import show, surroundings
from mimikit.agents.typed_answers import judged
from mimikit.conversation import gate as teller_gate
from mimikit.conversation import outage, tries
from mimikit.conversation.failed import INTERNAL_ERROR
from mimikit.delivery.dispatch import TELLER_DELIVERY_PASSES
from mimikit.exceptions import LLMUnavailable
from mimikit.lifecycle.actions import with_actions
from mimikit.llm.echoes import without_echoes
from mimikit.llm.record import RunRecord
from mimikit.memory.tokenize import has_chinese
from mimikit.models import PendingQuestion, Task
from mimikit.store.identity import owner_alive
from mimikit.store.inbox import AnswerItem, InboxItem, InputItem, ResultItem
from mimikit.store.journal import RunJournal
from mimikit.store.outage import when_back
from mimikit.store.runtime import Runtime
from mimikit.tools.context import ToolContext
from mimikit.tools.teller_tools import (
    answers_go_on,
    ask_again,
    asked_again,
    first_request,
    pose_question,
    post_reply,
)
from mimikit.workspace.named import named_paths

log = logging.getLogger("mimikit.teller")
JOURNAL_OWNER = "teller"
ANSWERED = "answered"


class LLMAwayDuringPass(Exception):
    """The LLM could not be reached: the items wait for the supervisor's next wake."""


def run_teller(runtime: Runtime, owner: str) -> str:
    """One Teller delivery: take the lease, handle the inbox until no wake is pending."""
    if not teller_gate.acquire(runtime, owner, owner_alive):
        return "busy"
    keeper = teller_gate.LeaseKeeper(runtime, owner).start()
    until = time.monotonic() + teller_gate.pass_seconds(runtime) * (TELLER_DELIVERY_PASSES - 1)
    passes = 0
    try:
        while time.monotonic() < until:  # then the next delivery goes on (``again``)
            if keeper.lost or not teller_gate.more_to_do(runtime):
                break
            pass_journal = journal(runtime)
            items = pass_items(runtime, pass_journal)
            if items and not handle(runtime, items, keeper, pass_journal):
                break  # kept for later: the supervisor wakes the Teller again
            passes += bool(items)
    finally:
        keeper.stop()
        # Also after a Redis outage broke the run: a lease left behind would keep every other
        # Teller run out until it expired.
        again = when_back(lambda: teller_gate.release(runtime, owner), "releasing the Teller")
    if again:
        teller_gate.wake(runtime)
    elif passes:
        warm_soon(runtime)  # what the next message will find, while no one waits
    return "ran"


def journal(runtime: Runtime) -> RunJournal:
    return RunJournal(runtime.redis, runtime.keys, JOURNAL_OWNER)


def pass_items(runtime: Runtime, pass_journal: RunJournal) -> list[InboxItem]:
    """The items of the next pass: those of a journaled pass a crash cut short (it resumes),
    else the new items, or one that failed a pass, alone (``tries.next_batch``)."""
    waiting = runtime.inbox.read()
    started = next((e for e in pass_journal.entries() if e.get("kind") == "pass"), None)
    if started is not None:
        ids = set(started["items"])
        resumed = [item for item in waiting if item.id in ids]
        if len(resumed) == len(ids):
            return resumed
        pass_journal.clear()  # its items were handled meanwhile
    return tries.next_batch(runtime, waiting)


def handle(runtime: Runtime, items: list[InboxItem], keeper: teller_gate.LeaseKeeper,
           pass_journal: RunJournal) -> bool:
    """One pass over ``items`` (those out of tries give up first); False when the Teller
    should stop for now (the LLM is away, the lease was lost), True to go on."""
    if keeper.lost:
        return False
    items = tries.within_bounds(runtime, items)
    if not items:
        return True
    try:
        reason = _guarded_pass(runtime, items, pass_journal)
    except LLMAwayDuringPass:
        _forget_if_untouched(pass_journal)
        return False
    if reason != ANSWERED:
        return _keep(runtime, items, reason, pass_journal)
    runtime.inbox.ack([item.id for item in items])
    pass_journal.clear()
    outage.record_success(runtime)
    return True


def _forget_if_untouched(pass_journal: RunJournal) -> None:
    """A pass the LLM never answered need not resume: the next one takes every item."""
    if not any(entry.get("kind") == "answer" for entry in pass_journal.entries()):
        pass_journal.clear()


def _keep(runtime: Runtime, items: list[InboxItem], reason: str,
          pass_journal: RunJournal) -> bool:
    """A pass that ended without a reply: each item uses a try (those out of tries give up),
    and the next pass goes on (True); one the model never answered uses none, the items are
    kept and the person is told once, and a later wake tries again (False)."""
    # counted with the tries, then gone (``pass_journal.key``): the next pass starts afresh
    calls = sum(entry.get("kind") == "answer" for entry in pass_journal.entries())
    log.warning("Teller pass over %d item(s) ended without a reply after %d LLM answer(s): %s",
                len(items), calls, reason)
    runtime.events.log("teller_pass_failed", reason=reason[:500], items=len(items), calls=calls)
    if not tries.never_answered(reason, calls):
        outage.record_success(runtime)  # the model answers: it is not away
        tries.count_failure(runtime, items, reason, calls, pass_journal.key)
        tries.pause_before_retry(runtime)
        return True
    tries.count_stall(runtime, items, reason, pass_journal.key)
    inputs = sum(isinstance(item, InputItem | AnswerItem) for item in items)
    if outage.record_failure(runtime, reason, inputs) and inputs:
        runtime.conversation.system(
            f"The assistant could not answer yet ({reason}). Your message is kept and will be "
            "answered as soon as it can.", traceId=answered_trace(items))
    return False


def _guarded_pass(runtime: Runtime, items: list[InboxItem], pass_journal: RunJournal) -> str:
    """One pass: ``ANSWERED``, or why not."""
    try:
        return teller_pass(runtime, items, pass_journal)
    except (RedisError, LLMAwayDuringPass):
        raise  # nothing acknowledged: the items wait for the next run
    except Exception as error:
        log.exception("Teller pass failed on %d items", len(items))
        return f"{INTERNAL_ERROR}{type(error).__name__}: {error}"


def answered_trace(items: list[InboxItem]) -> str | None:
    """The trace a pass's replies and calls belong to: the newest message the person sent (or
    answered), else the newest item's."""
    for item in reversed(items):
        if isinstance(item, InputItem | AnswerItem) and item.traceId:
            return item.traceId
    return next((item.traceId for item in reversed(items) if item.traceId), None)


def teller_pass(runtime: Runtime, items: list[InboxItem], pass_journal: RunJournal) -> str:
    """One Teller run over ``items``: ``ANSWERED``, or why it ended without a reply.

    Raises:
        LLMAwayDuringPass: The LLM could not be reached (the person is told, once).
    """
    items, reopened = judged(runtime, items, answered_trace(items))
    trace_id = answered_trace(items)
    done = done_tasks(runtime, items)
    ctx = pass_context(runtime, items, trace_id, done)
    ctx.reopened += reopened  # typed while their question was pending, but no answers to it
    question_alone = len(items) == 1 and bool(ctx.needs_input)
    if question_alone and answer_path(runtime, "teller") == "constrained" and \
            _ask_for_the_planner(runtime, ctx):
        return ANSWERED  # the Planner's question is the whole report: no words of a model
    results = done_results(runtime, items)
    if (own := own_report(runtime, items, done, results)) is not None:
        ctx.journal_key = pass_journal.key  # posted once, should the pass be run again
        post_reply(ctx, own, may_repeat=True, effect=f"own words {items[0].id}")
        return ANSWERED
    inputs = [item for item in items if isinstance(item, InputItem)]
    inbox = render_inbox(runtime, items, done, results)
    seen = surroundings(runtime)
    if ctx.turn_only is None:
        sections, inbox = memory_by_inputs(
            context_sections(runtime, [item.message["text"] for item in inputs],
                             exclude_ids={item.message["id"] for item in inputs},
                             beside="\n\n".join([*seen, inbox])), inbox)
        sections += seen
    else:  # a report is shown the history alone: the prompt stays the one the server cached,
        # begun anew (when due) where the next message's pass will find it
        sections = next_history(runtime, seen)
        ctx.reported, ctx.result_numbers = inbox, worker_result_numbers(done, results)
    system, user = build_prompts("teller", choose_mode("teller", bool(sections)), sections,
                                 inbox)
    if not pass_journal.entries():
        pass_journal.append({"kind": "pass", "items": [item.id for item in items]})
    try:
        record = run_role(runtime, ctx, system, user, runtime.settings.teller_timeout,
                          owners=("teller", *(t for t in {trace_id} if t)),
                          stream_to=lambda run, n: ReplyStream(runtime, f"{run.id}-{n}",
                                                               trace_id),
                          journal=pass_journal)
    except LLMUnavailable as error:
        _llm_away(runtime, str(error), items, trace_id)
        raise LLMAwayDuringPass(str(error)) from None
    outcome = _outcome(runtime, ctx, record, items)
    if outcome != ANSWERED:
        tries.hide_copies(runtime, items, ctx.copied)  # their next pass without the copied
    return outcome


def pass_context(runtime: Runtime, items: list[InboxItem], trace_id: str | None,
                 done: dict[str, Task]) -> ToolContext:
    ctx = ToolContext(runtime=runtime, role="teller", trace_id=trace_id)
    ctx.needs_input = [item.taskId for item in items
                       if isinstance(item, ResultItem) and item.status == "needs_input"]
    ctx.answers = [item for item in items if isinstance(item, AnswerItem) and item.taskId]
    ctx.heard = _heard(items)
    ctx.results = any(isinstance(item, ResultItem) for item in items)
    hint = report_hint(items)
    if hint:  # a small model copies it into its report
        ctx.told.append(hint)
    # an answer to a task's question goes on to its task; a message that names a file is
    # work for the Planner and its Workers: the Teller sees no file (the 0.5B model answered
    # "create a file notes.txt ..." with "I'll create notes.txt" and handed nothing over; the
    # 1.5B said "The file todo.md has 3 lines." of a file it never read)
    if ctx.answers or any(named_paths(said) for said in ctx.heard):
        ctx.turn_set = ("delegate",)
    if not any(isinstance(item, InputItem | AnswerItem) for item in items):
        ctx.turn_only = "reply"  # results and notices: to report, nothing to hand over
        ctx.told += example_replies("teller")  # a report copied from one: the results' words
    else:
        ctx.told += unsaid_examples("teller", ctx.heard, ctx.results)
    if writes_chinese(items) or (ctx.turn_only and reports_chinese(done)):
        ctx.reply_pattern = CHINESE_START  # a small model answers an English prompt in English
    return ctx


def _outcome(runtime: Runtime, ctx: ToolContext, record: RunRecord,
             items: list[InboxItem]) -> str:
    said = without_echoes(record.finalText or "", ctx.told) if record.status == "done" else ""
    if record.status == "done":
        answers_go_on(ctx)
    if said and not ctx.replies:
        post_reply(ctx, said)
    if ctx.copied_report and not ctx.replies:
        _report_plainly(runtime, ctx, items)
    if ctx.created and not (ctx.replies or ctx.asked) and record.status == "done" and \
            any(isinstance(item, InputItem | AnswerItem) for item in items):
        _say_handed_over(runtime, ctx)  # it delegated and had nothing to add
    if ctx.needs_input and not (ctx.asked or ctx.created) and record.status != "failed":
        _ask_for_the_planner(runtime, ctx)
    show(ctx)
    if ctx.replies or ctx.asked:
        ask_again(ctx)
        return ANSWERED
    if record.status == "failed":
        return record.error or "the run failed"
    if not any(isinstance(item, InputItem | AnswerItem) for item in items):
        return ANSWERED  # results and notices the Teller chose to keep quiet about
    return "the model answered nothing the user could read"


def _report_plainly(runtime: Runtime, ctx: ToolContext, items: list[InboxItem]) -> None:
    """The pass's results told in their own words, where the model's report only said
    earlier replies again (a small model copies its last report from the history) or its
    prompt's words (an example's too): what they hold is true, with what each run did, a copy
    of another task's report is not, and a reminder that fires every day may say what it said
    yesterday."""
    said = []
    for item in items:
        if not isinstance(item, ResultItem):
            continue
        result = runtime.tasks.result(item.taskId)
        if result is None or result.status not in ("done", "failed"):
            continue
        words = result.error if result.status == "failed" else \
            result.result.get("text") or result.result.get("summary")
        if not words:
            continue
        told = ("Failed: " if result.status == "failed" else "") + str(words)
        said.append(with_actions(runtime, item.taskId, told))
    if said:
        post_reply(ctx, "\n".join(said), may_repeat=True)


def _say_handed_over(runtime: Runtime, ctx: ToolContext) -> None:
    """A reply for a pass that delegated without a word: what was handed over, in the
    language it was asked in."""
    asked = [task.title or task.prompt.strip().splitlines()[0]
             for task in runtime.tasks.by_id(ctx.created)]
    said = "; ".join(text[:200] for text in asked)
    post_reply(ctx, ("好的，这就去办：" if has_chinese(said) else "On it: ") + said)


def _ask_for_the_planner(runtime: Runtime, ctx: ToolContext) -> bool:
    """The question of a Planner task that needs input, asked as the Planner put it, so the
    plan does not wait on nothing (for a pass that was told of it and neither asked nor
    delegated). Where answers are held to the schema, a pass told of that alone asks it
    without the model: its report may only reply, and its words would restate the question
    or, from a small model, promise the work as if it went on (on the native path it may ask
    the question itself, with options). True when the person was told something."""
    result = runtime.tasks.result(ctx.needs_input[0])
    task = runtime.tasks.get(ctx.needs_input[0])
    if result is None or not result.question or task is None:
        return False
    if asked_again(task.prompt, result.question):  # answered once: asking again would never end
        runtime.conversation.system(
            f"The planner asked again what you already answered ({result.question[:300]}), "
            f"so this was not done: {first_request(task)[:300]}",
            traceId=ctx.trace_id)
        return True
    _set_aside(runtime, ctx.trace_id)
    pose_question(ctx, PendingQuestion(question=result.question[:4000]))
    return True


def _set_aside(runtime: Runtime, trace_id: str | None) -> None:
    """Close the pending question, if any, for a newer one: one question is asked at a time,
    and the newest request's is the one the person is about; what waited on the older one is
    said not to be done."""
    older = runtime.conversation.question()
    if older is None or not runtime.conversation.withdraw(older.id):
        return
    waiting = runtime.tasks.get(older.taskId) if older.taskId else None
    undone = f", so this was not done: {first_request(waiting)[:300]}" if waiting else ""
    runtime.conversation.system(
        f"The question {older.question[:300]!r} was closed unanswered for a newer "
        f"one{undone}", traceId=trace_id)


def _heard(items: list[InboxItem]) -> list[str]:
    """The person's messages among ``items``."""
    return [item.message["text"] for item in items if isinstance(item, InputItem)]


def _llm_away(runtime: Runtime, error: str, items: list[InboxItem],
              trace_id: str | None) -> None:
    inputs = sum(isinstance(item, InputItem) for item in runtime.inbox.read())
    runtime.events.log("llm_unavailable", role="teller", error=error, traceId=trace_id)
    if outage.record_failure(runtime, error, inputs):
        runtime.conversation.system(
            f"The assistant cannot answer right now: {error}. Your messages are kept and will "
            "be answered when the LLM is back.", traceId=trace_id)


class ReplyStream:
    """Publishes a reply's text as it streams in: a ``reply`` event with the text so far, at
    most every ``EVERY_SECONDS`` (the page shows it growing; the stored message replaces it)."""

    EVERY_SECONDS = 0.08

    def __init__(self, runtime: Runtime, stream_id: str, trace_id: str | None) -> None:
        self.runtime, self.stream_id, self.trace_id = runtime, stream_id, trace_id
        self.text = ""
        self.sent_at = 0.0

    def __call__(self, piece: str) -> None:
        self.text += piece
        now = time.monotonic()
        if now - self.sent_at >= self.EVERY_SECONDS and self.text.strip():
            self.sent_at = now
            self.runtime.events.publish("reply", {"id": self.stream_id,
                                                  "traceId": self.trace_id, "text": self.text})
