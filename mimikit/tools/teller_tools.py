"""The Teller's tools: reply, delegate (to the Planner), remember, show, ask_user,
update_backlog."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import Field

from mimikit.conversation.question import is_question
from mimikit.exceptions import ToolError
from mimikit.lifecycle.actions import account_in, begins_account, without_account
from mimikit.lifecycle.submit import submit
from mimikit.llm.echoes import repeats, without_echoes
from mimikit.llm.registry import Registry, StopRun
from mimikit.memory import backlog
from mimikit.memory.files import remember as write_memory
from mimikit.models import MAX_TASK_TIMEOUT_SECONDS, Message, PendingQuestion, Task
from mimikit.store import fingerprints as fingerprint
from mimikit.tools.args import Args, Seconds
from mimikit.tools.context import ToolContext
from mimikit.tools.reply_checks import (
    copied_replies,
    copied_reply,
    earlier_sentences,
    names_as_reported,
    numbers_in,
    plain,
    tells_a_number,
    without_earlier_sentences,
    without_results_ahead,
    words_of,
)

USERS_WORDS_CHARS = 4000  # of each of the person's messages appended to a delegation
USERS_WORDS_HEADING = "\n\n## The user's words\n"
# The lines of an earlier attempt's block (``with_earlier_attempt``), read back by
# ``asked_again`` and ``first_request``.
EARLIER = "## Earlier attempt ("
ORIGINAL, PARTIAL, QUESTION, ANSWER = ("\nOriginal request: ", "\nPartial result: ",
                                       "\nQuestion: ", "\nAnswer (")


class ReplyArgs(Args):
    text: str = Field(min_length=1, max_length=100_000)


class TellerDelegateArgs(Args):
    prompt: str = Field("", max_length=50_000,
                        description="self-contained request for the Planner (left out: the "
                                    "user's own words of this turn)")
    timeout: Seconds | None = Field(None, gt=0, le=MAX_TASK_TIMEOUT_SECONDS,
                                  description="seconds; null = role default")


class RememberArgs(Args):
    content: str = Field("", max_length=20_000,
                         description="one sentence to keep (left out: the user's own words)")
    longTerm: bool = False


class NoArgs(Args):
    pass


# What the runtime lists below a Teller's reply, where the person asks for it.
Shown = Literal["nothing", "scheduled", "files"]


class ShowArgs(Args):
    what: Shown = Field(description="scheduled: the work that runs later (reminders, "
                        "schedules); files: the work directory's files; or nothing")


class AskUserArgs(Args):
    question: str = Field(min_length=1, max_length=4000)
    timeout: Seconds = Field(3600, gt=0, le=7 * 24 * 3600, description="seconds")
    default: str | None = Field(None, description="used when the question times out")
    options: list[str] | None = Field(None, max_length=20)


class BacklogArgs(Args):
    action: Literal["add", "done", "remove", "list"]
    item: str | None = Field(None, min_length=1, max_length=500,
                             description="the item (not with list)")


def post_reply(ctx: ToolContext, text: str, may_repeat: bool = False,
               effect: str | None = None) -> Message | None:
    """Write an assistant message with the run's usage and elapsed time so far (once: a call
    run again after a crash finds its message there), without what the model copied from its
    prompt (and, in a pass that reports no run, any account of one in the runtime's words:
    a small model copies it from an earlier report, before anything ran); None when the pass
    said exactly that already. Unless it ``may_repeat`` (words that are not the model's), a
    reply that only says earlier replies again is not posted (its pass is tried anew without
    them: ``ToolContext.copied``); nor, in a pass without the person's words, one with
    nothing left once the copied lines are out, or one that says a sentence of an earlier
    reply its results do not: the pass's results are then told in their own words
    (``copied_report``), as they are where a report tells none of the numbers their results
    give (``tells_a_number``). Beside work it hands over, a reply tells no number the person did
    not give (``without_results_ahead``). Its message is written once per call, or per
    ``effect`` of the pass after its calls.

    Raises:
        ToolError: Nothing is left once the copied lines are taken out, in a pass with the
            person's words.
    """
    text = without_echoes(text, ctx.told)
    earlier = None  # the sentences of earlier replies, read where they are needed
    if not may_repeat and ctx.reported is not None:
        earlier = earlier_sentences(ctx)
        kept = without_earlier_sentences(text, earlier, ctx.reported)
        if kept != text.strip() and not ctx.heard:  # a report that copied: its results' words
            ctx.copied_report = True  # (the 1.5B's "The task was completed." left, no count)
            return None
        text = kept
    if not (may_repeat or ctx.results):  # no run was reported: an account copied from history
        text = without_account(text)
    if not text and not ctx.heard:  # a report that only copied its prompt: the results' words
        ctx.copied_report = True
        return None
    if not text:
        raise ToolError("the reply held only lines copied from the conversation, the "
                        "prompt's markup or the errors you were told; write your answer to "
                        "the user itself")
    if text in ctx.replies:  # said already in this pass (a model repeating its reply)
        return None
    if not may_repeat and ctx.created and ctx.heard:  # beside work handed over, not yet run
        text = without_results_ahead(text, ctx.heard)
        if not text or words_of(text) in {words_of(said) for said in ctx.heard}:
            return None  # the pass says what it handed over (``teller._say_handed_over``),
            # not the message again (the 1.5B's reply to "我最喜欢什么运动？" was that question;
            # the 0.5B's to "我最喜欢的运动是游泳，帮我记住" was that with a "。" after it)
    if not may_repeat and ctx.reported is not None and (
            not names_as_reported(text, ctx.reported) or begins_account(text)
            or plain(account_in(text)) not in plain(ctx.reported)
            or not numbers_in(text) <= numbers_in(ctx.reported)
            or not tells_a_number(text, ctx.result_numbers)):
        ctx.copied_report = True  # another task's report, facts its results do not give, none
        return None  # they give, or the account it began to copy: the results are told as
        # they are, with the account in the runtime's words
    if not may_repeat and copied_reply(ctx, text, earlier):
        if not ctx.heard:
            ctx.copied_report = True  # the results are told without the model's words
            return None
        ctx.copied = copied_replies(ctx, text)  # the pass ends, and is tried without them
        return None
    message = Message(role="assistant", text=text, usage=ctx.usage.model_copy(),
                      elapsedMs=ctx.elapsed_ms(), traceId=ctx.trace_id)
    once = ctx.once_key(effect)
    if once is not None:
        message.id = "msg-" + hashlib.sha1(once.encode()).hexdigest()[:12]
    ctx.runtime.conversation.append(message)
    ctx.replies.append(text)
    return message


def pose_question(ctx: ToolContext, question: PendingQuestion) -> PendingQuestion:
    """Make ``question`` the one pending, about the pass's Planner task that needs input if
    there is one; it enters the history too, so later turns (and the Planner) know it."""
    question = question.model_copy(update={
        "traceId": ctx.trace_id, "taskId": ctx.needs_input[0] if ctx.needs_input else None})
    ctx.runtime.conversation.ask(question)
    ctx.asked = True
    ctx.runtime.conversation.append(Message(
        role="assistant", text=question.question + "".join(
            f"\n- {option}" for option in question.options or []), traceId=ctx.trace_id))
    return question


def with_earlier_attempt(ctx: ToolContext, prompt: str) -> str:
    """The prompt of a delegation that follows an answered question of a Planner task: with
    the original request, the partial result (where it gave one), the question and the answer
    appended (what a model re-delegating tends to leave out); the original request only
    where it is not the prompt itself (a Planner's first request reads it once)."""
    blocks = [prompt]
    for answer in ctx.answers:
        task = ctx.runtime.tasks.get(answer.taskId) if answer.taskId else None
        if task is None or asked_again(prompt, answer.question):
            continue
        result = ctx.runtime.tasks.result(task.id)
        partial = f"{PARTIAL}{json.dumps(result.result, ensure_ascii=False)[:4000]}" \
            if result and result.result else ""  # none: its question is all it gave
        original = "" if plain(first_request(task)) == plain(prompt) else \
            f"{ORIGINAL}{task.prompt[:4000]}"
        blocks.append(f"{EARLIER}{task.id}), which needed the user's answer{original}{partial}"
                      f"{QUESTION}{answer.question}{ANSWER}{answer.source}): {answer.answer}")
    return "\n\n".join(blocks)


def with_users_words(ctx: ToolContext, prompt: str) -> str:
    """The prompt of a delegation with the person's messages of this pass appended, each that
    it does not already quote: a model's summary of a request tends to drop a part of it
    ("every day", a path, a number), and the Planner then plans the rest."""
    said = [text[:USERS_WORDS_CHARS] for text in ctx.heard if plain(text) not in plain(prompt)]
    return prompt + USERS_WORDS_HEADING + "\n".join(said) if said else prompt


def ask(ctx: ToolContext, args: AskUserArgs) -> StopRun:
    """Pose the question of an ``ask_user`` call, unless it only repeats what was said.

    Raises:
        ToolError: A question is pending, or this one holds nothing of its own.
    """
    if ctx.runtime.conversation.question() is not None:
        raise ToolError("a question is already pending; wait for its answer")
    asked = without_echoes(args.question, ctx.told)
    if not asked:
        raise ToolError("the question held only words copied from the conversation or "
                        "the errors you were told; write your own question to the user")
    if repeats(asked, ctx.heard):
        raise ToolError("the question only repeats the user's own message; answer it "
                        "with reply, hand it to the Planner with delegate, or ask about "
                        "what is missing from it")
    options = args.options
    if args.default is not None and options and args.default not in options:
        options = [*options, args.default]  # the answer it falls back to may be chosen
    question = pose_question(ctx, PendingQuestion(question=asked, options=options,
                                                  timeout=args.timeout, default=args.default))
    return StopRun({"asked": True, "expiresAt": str(question.expiresAt)})


def hand_over(ctx: ToolContext, prompt: str, timeout: float | None = None) -> dict[str, Any]:
    """A Planner task for ``prompt`` (left out: the person's words of the pass), unless an
    identical one is active."""
    prompt = prompt or _handed_words(ctx)
    if not prompt:
        return {"skipped": "no request of the user's in this turn to hand over"}
    prompt = with_earlier_attempt(ctx, with_users_words(ctx, prompt))
    task = Task(role="planner", prompt=prompt, timeout=timeout, traceId=ctx.trace_id,
                priority=7)
    existing = fingerprint.active_duplicate(ctx.runtime, task)
    if existing:
        return {"taskId": existing, "duplicate": True,
                "note": "an identical request is already active; not delegated again"}
    submit(ctx.runtime, [task])
    ctx.created.append(task.id)
    return {"taskId": task.id}


def answers_go_on(ctx: ToolContext) -> None:
    """The pass's answers to a Planner task's question go on to that task, though the model
    handed nothing over: a small model took an answer typed in the chat box ("teal") for a
    fact to keep, and its task would have waited for it forever."""
    if not ctx.created and any(answer.taskId for answer in ctx.answers):
        hand_over(ctx, "")


def ask_again(ctx: ToolContext) -> None:
    """Make the questions whose typed answers were new requests pending again (the page
    shows their card; the history has them already)."""
    if ctx.reopened and ctx.runtime.conversation.question() is None:
        answer = ctx.reopened[-1]  # one question is pending at a time: the newest
        ctx.runtime.conversation.ask(PendingQuestion(
            question=answer.question, options=answer.options, traceId=answer.traceId,
            taskId=answer.taskId))


def asked_again(prompt: str, question: str) -> bool:
    """Whether a Planner task's ``prompt`` continues an earlier attempt whose ``question`` the
    person already answered (``with_earlier_attempt`` wrote it into it)."""
    return f"{QUESTION}{question}{ANSWER}" in prompt


def carries_answer(prompt: str) -> bool:
    """Whether a Planner task's ``prompt`` carries an answered question of an earlier
    attempt (``with_earlier_attempt``)."""
    return QUESTION in prompt and ANSWER in prompt


def last_answer(prompt: str) -> str:
    """The person's answer the last earlier attempt of a Planner task's ``prompt`` carries
    (``with_earlier_attempt``; '' when none)."""
    _before, found, rest = prompt.rpartition(ANSWER)
    return rest.partition("): ")[2].split("\n\n## ")[0].strip() if found else ""


def first_request(task: Task) -> str:
    """The request a Planner task goes on with: the first of the earlier attempts its prompt
    carries (``with_earlier_attempt``), else its own."""
    _before, found, rest = task.prompt.rpartition(ORIGINAL)
    return rest.partition(QUESTION)[0].partition(PARTIAL)[0] if found else \
        delegated_request(task.prompt).partition(f"\n\n{EARLIER}")[0]


def _handed_words(ctx: ToolContext) -> str:
    """What a delegation without a prompt hands over: the user's messages of this turn, or,
    after an answer to a question, the request it answers (the question and the answer
    follow it: ``with_earlier_attempt``). Told only to go on, a small model answered instead
    of acting, with an example's words."""
    if ctx.heard:
        return "\n".join(ctx.heard)
    tasks = ctx.runtime.tasks.by_id([answer.taskId for answer in ctx.answers if answer.taskId])
    return "\n".join(dict.fromkeys(first_request(task).strip() for task in tasks))


def delegated_request(prompt: str) -> str:
    """A Planner task's prompt as the Teller delegated it, without the person's words."""
    return request_parts(prompt)[0]


def request_parts(prompt: str) -> list[str]:
    """A Planner task's prompt as delegated, and each message of the person's appended."""
    request, _heading, words = prompt.partition(USERS_WORDS_HEADING)
    return [request, *words.splitlines()]


def keep(ctx: ToolContext, content: str, long_term: bool) -> dict[str, Any]:
    """Write ``content`` to memory (``memory.md`` when ``long_term``); the file, for the
    model (the Teller's and the Planner's ``remember``)."""
    state_dir = ctx.runtime.settings.state_dir
    path = write_memory(state_dir, content, long_term=long_term)
    return {"path": str(path.relative_to(state_dir))}


def register(registry: Registry) -> None:
    teller = {"teller"}

    @registry.tool("reply", roles=teller, idempotent=True, short="text")
    def reply(ctx: ToolContext, args: ReplyArgs) -> dict[str, Any] | StopRun:
        """Send a message to the user, in the user's language."""
        post_reply(ctx, args.text)
        if ctx.copied:  # a copy of an earlier reply: tried anew without it (``teller_pass``)
            return StopRun({"sent": False}, after_batch=True)
        return {"sent": True}

    @registry.tool("delegate", roles=teller, idempotent=True, short="prompt", flag=True)
    def delegate(ctx: ToolContext, args: TellerDelegateArgs) -> dict[str, Any]:
        """Hand real work (files, commands, anything scheduled or watched) to the Planner: the
        request in the user's words with every detail; returns its taskId."""
        return hand_over(ctx, args.prompt.strip(), args.timeout)

    @registry.tool("remember", roles=teller, short="content", flag=True)
    def remember(ctx: ToolContext, args: RememberArgs) -> dict[str, Any]:
        """Keep a fact or preference the user states, as one sentence (longTerm: memory.md;
        else a dated memory file)."""
        content = args.content.strip() or "\n".join(said for said in ctx.heard
                                                    if not is_question(said))
        if not content:  # a question is no fact to keep: "你还记得我用什么管理包吗？"
            return {"skipped": "nothing the user stated in this turn to keep"}
        if content in ctx.kept:  # a turn answered again after a refused reply keeps it once
            return {"skipped": "kept already in this turn"}
        kept = keep(ctx, content, args.longTerm)
        ctx.kept.append(content)
        return kept

    @registry.tool("show", roles=teller, idempotent=True, short="what")
    def show(ctx: ToolContext, args: ShowArgs) -> dict[str, Any]:
        """Show the user the work that will run later (reminders, schedules, watches) or the
        work directory's files: the runtime lists them below your reply."""
        ctx.listed = args.what
        return {"shown": args.what}

    @registry.tool("ask_user", roles=teller)
    def ask_user(ctx: ToolContext, args: AskUserArgs) -> StopRun:
        """Ask the user a question (ends the run; the answer wakes you later)."""
        return ask(ctx, args)

    @registry.tool("update_backlog", roles=teller)
    def update_backlog(ctx: ToolContext, args: BacklogArgs) -> dict[str, Any]:
        """Add, check off or remove an item of the backlog, or list it."""
        state_dir = ctx.runtime.settings.state_dir
        if args.action == "list":
            return {"backlog": backlog.read(state_dir)}
        if not args.item:
            raise ToolError(f"action {args.action!r} needs 'item', the text of the item")
        items = backlog.update(state_dir, args.action, args.item)
        ctx.runtime.events.publish("backlog", {"items": items})
        return {"backlog": items}
