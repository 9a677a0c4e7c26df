"""The agent loop: ask the model, run the tool calls it makes, feed results back, repeat.

Real models do not always call tools the way they are asked to (``answers``, ``corrections``):
a call written into the text is run as the call; an answer that cannot be taken as it is gets
a correction naming the call to make, then that call forced; a problem that persists ends the
run with the reason, as does the step limit. Every step is written to the run's journal before
the next one, and a run that is delivered again replays it (``journal``).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mimikit.llm import corrections
from mimikit.llm.answers import Answer, read_answer
from mimikit.llm.choice import forced
from mimikit.llm.client import LLMDeadline
from mimikit.llm.completion import ChatClient, Completion, ToolCall
from mimikit.llm.journal import INTERRUPTED, Journal, Replay, journaled, replayed
from mimikit.llm.promises import backing_tool
from mimikit.llm.record import (
    STEP_TEXT_LIMIT,
    Observer,
    RunRecord,
    RunStatus,
    ToolCallRecord,
)
from mimikit.llm.registry import Registry, ToolOutcome

__all__ = ["Observer", "RunOptions", "RunRecord", "RunStatus", "ToolCallRecord", "run_agent"]
logger = logging.getLogger("mimikit.llm")
# How often one kind of problem is corrected before the run gives up on it (or, for text, takes
# it as it is): the first time a message, the second time the call forced.
FAILING_IN_ROW = 2  # a Teller's answers in a row whose calls all failed, before reply is forced
GIVE_UP_AFTER = {corrections.EMPTY: 2, corrections.PLAIN: 2, corrections.PROMISE: 2,
                 corrections.UNREADABLE: 3, corrections.CUT: 1}


@dataclass
class RunOptions:
    """How one run goes.

    Args:
        max_steps: The most LLM requests the run may make.
        deadline: A ``time.monotonic()`` value after which the run fails as timed out.
        text_ends_run: Whether a plain answer ends the run (the Teller's reply); otherwise it
            is corrected until a finishing tool ends the run.
        max_tokens: The most tokens one answer may have.
        tool_choice: What every request asks for (``"required"``: some tool call).
        check_promises: Whether a text promising work without a ``delegate`` is corrected
            (a Teller answering the person).
        journal: Where each step is written, and read back when the run resumes.
        text_as_result: Where a finishing tool is due, what a text answer becomes once the
            corrections did not get the call (None: the run goes on to the step limit).
    """

    max_steps: int
    deadline: float | None = None
    text_ends_run: bool = True
    max_tokens: int | None = None
    tool_choice: Any = None
    check_promises: bool = False
    journal: Journal | None = None
    text_as_result: Callable[[str], Any] | None = None


def run_agent(
    client: ChatClient,
    model: str,
    role: str,
    system_prompt: str,
    user_prompt: str,
    registry: Registry,
    ctx: Any,
    options: RunOptions,
    on_step: Callable[[RunRecord], None] | None = None,
    record: RunRecord | None = None,
    observer: Observer | None = None,
) -> RunRecord:
    """Run one agent until it answers without a tool call, a tool stops it, or a limit hits.

    ``on_step`` is called with the record before each LLM request and may raise to abort the
    run; ``observer`` is given each step as it happens (``kind: llm`` with its usage and text,
    or ``kind: tool`` with its arguments and bounded output).

    Returns:
        The run record: status "done" (plain answer, see ``finalText``), "stopped" (a tool
        ended the run, see ``stopValue``) or "failed" (see ``error``).

    Raises:
        LLMUnavailable: The LLM is not configured or cannot be reached.
    """
    record = record or RunRecord(role=role, model=model)
    record.messages = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": user_prompt},
    ]
    loop = _Loop(client, record, registry, ctx, options, on_step, observer)
    try:
        loop.run()
    finally:
        record.durationMs = int((time.monotonic() - loop.started) * 1000)
    logger.info("%s run %s %s after %d steps", role, record.id, record.status, record.steps)
    return record


class _Loop:
    """The steps of one run: each asks the model (or replays its answer), then handles it."""

    def __init__(self, client: ChatClient, record: RunRecord, registry: Registry, ctx: Any,
                 options: RunOptions, on_step: Callable[[RunRecord], None] | None,
                 observer: Observer | None) -> None:
        self.client, self.record, self.registry, self.ctx = client, record, registry, ctx
        self.options, self.on_step, self.observer = options, on_step, observer
        self.started = time.monotonic()
        self.last_error: str | None = None
        self.names = registry.names_for(record.role)
        self.tools = registry.schemas_for(record.role) or None
        self.replay = Replay(options.journal)
        self.problems: Counter[str] = Counter()
        self.forced: Any = None  # the tool_choice of the next request, after a correction
        self.backed: set[str] = set()  # the tools whose calls succeeded
        self.called = False  # some call of the run succeeded
        self.failed_in_row = 0  # answers in a row whose every call failed
        self.asked_for: Any = None  # the tool_choice of the last request

    # -- the cycle --

    def run(self) -> None:
        record = self.record
        if not self.replay.empty:
            self._observe({"kind": "resume", "journaled": len(self.replay.answers)})
        while record.steps < self.options.max_steps:
            completion = self._ask()
            if completion is None:
                return
            if self._handle(read_answer(completion, self.names, record.steps, self._implied())):
                return
        self._fail(f"step limit of {self.options.max_steps} reached without finishing; last "
                   f"error: {self.last_error or 'none (the model kept calling tools)'}")

    def _ask(self) -> Completion | None:
        """One answer: replayed from the journal, or one LLM request; None when the run
        timed out (its record says so)."""
        step = self.record.steps + 1
        replayed = self.replay.answer(step)
        if replayed is None:
            deadline = self.options.deadline
            if deadline is not None and time.monotonic() >= deadline:
                self._timed_out(deadline)
                return None
            if self.on_step is not None:
                self.on_step(self.record)
            completion = self._request()
            if completion is None:
                return None
            self.replay.write_answer(step, completion)
        else:
            completion = replayed
            self.record.resumed += 1
        self.record.steps = step
        self.record.usage = self.record.usage + completion.usage
        return completion

    def _request(self) -> Completion | None:
        began = time.monotonic()
        tool_choice = self.forced or (self.options.tool_choice if self.tools else None)
        self.forced, self.asked_for = None, tool_choice
        try:
            completion = self.client.chat(self.record.model, self.record.messages, self.tools,
                                          deadline=self.options.deadline,
                                          max_tokens=self.options.max_tokens,
                                          tool_choice=tool_choice)
        except LLMDeadline:
            self._timed_out(self.options.deadline or self.started)
            return None
        self._observe({"kind": "llm", "model": self.record.model,
                       "usage": completion.usage.model_dump(),
                       "elapsedMs": int((time.monotonic() - began) * 1000),
                       "text": (completion.content or "")[:STEP_TEXT_LIMIT] or None,
                       "calls": [call.name for call in completion.tool_calls]})
        return completion

    def _implied(self) -> tuple[str, frozenset[str]] | None:
        """The function an answer of only its arguments calls, and its parameters: the one the
        last request forced, else the role's one finisher (``submit_result``)."""
        finishers = self.registry.finishers(self.record.role)
        if isinstance(self.asked_for, dict):
            finishers = [self.asked_for.get("function", {}).get("name", "")]
        return (finishers[0], self.registry.parameters(self.record.role, finishers[0])) \
            if len(finishers) == 1 else None

    def _handle(self, answer: Answer) -> bool:
        """Handle one answer; True when the run ended."""
        self.record.messages.append(answer.message)
        if answer.cut:
            return self._problem(corrections.CUT, corrections.cut(self.options.max_tokens))
        if answer.calls:
            return self._run_calls(answer.calls)
        if answer.unknown or answer.broken:
            return self._problem(corrections.UNREADABLE,
                                 corrections.unreadable(answer, self.names))
        if answer.empty:
            if self.options.text_ends_run and self.called:
                # it said what it had to through its calls, and has nothing to add
                self.record.status, self.record.finalText = "done", ""
                return True
            name, text = corrections.empty(self.options.text_ends_run)
            return self._problem(corrections.EMPTY, text, force=name, give_up=self._fell_silent())
        return self._plain(answer.text or "")

    def _plain(self, text: str) -> bool:
        """A plain text answer; True when it ends the run."""
        if not self.options.text_ends_run:
            finisher, message = corrections.plain_text(self.registry.finishers(self.record.role))
            if self.options.text_as_result is not None and \
                    self.problems[corrections.PLAIN] >= GIVE_UP_AFTER[corrections.PLAIN]:
                return self._take_text_as_result(text)
            self._correct(corrections.PLAIN, message, force=finisher)  # to the step limit
            return False
        if corrections.bare_json(text) and not self.problems[corrections.BARE]:
            self._correct(corrections.BARE, corrections.bare())
            self.forced = forced("reply")  # once: then the text is taken as it is
            return False
        tool = self._broken_promise(text)
        if tool:
            return self._problem(corrections.PROMISE, corrections.promise(text, tool),
                                 force=tool, give_up=lambda: self._give_up_promise(text, tool))
        self.record.status, self.record.finalText = "done", text
        return True

    # -- problems and corrections --

    def _problem(self, kind: str, message: str, force: str | None = None,
                 give_up: Callable[[], bool] | None = None) -> bool:
        """Correct a problem (the second time forcing ``force``); past its allowance end the
        run (``give_up``, or failed with the reason). True when the run ended."""
        if self.problems[kind] >= GIVE_UP_AFTER[kind]:
            if give_up is not None:
                return give_up()
            self._fail(f"the model's answers could not be used ({kind}, "
                       f"{self.problems[kind] + 1} times): {message.removeprefix('error: ')}")
            return True
        self._correct(kind, message, force)
        return False

    def _correct(self, kind: str, message: str, force: str | None = None) -> None:
        """Tell the model what to do instead; the second time of a kind, force the call."""
        self.problems[kind] += 1
        self.last_error = message
        if kind != corrections.PROMISE:  # a promise's correction quotes the model's own words
            self._told(message)
        self.record.messages.append({"role": "user", "content": message})
        if force is not None and self.problems[kind] > 1:
            self.forced = forced(force)

    def _told(self, error: str) -> None:
        """Keep what the model was told went wrong (the last, and the run's, for ``echoes``)."""
        self.last_error = error
        told = getattr(self.ctx, "told", None)
        if isinstance(told, list):
            told.append(error)

    def _broken_promise(self, text: str) -> str | None:
        """The call that would make ``text`` true, when no call of the run made it."""
        tool = backing_tool(text) if self.options.check_promises else None
        return tool if tool and tool not in self.backed else None

    def _give_up_promise(self, text: str, tool: str) -> bool:
        self.record.status, self.record.finalText = "done", text
        self.record.promised, self.record.promisedTool = text, tool
        return True

    def _fell_silent(self) -> Callable[[], bool] | None:
        """How a run that stays silent ends once corrected: a Planner or Worker whose calls
        did their work and then had nothing to say is done, its calls its result (small models
        stop after their last call); without a successful call the run fails."""
        if not (self.called and self.options.text_as_result is not None):
            return None
        done = [f"{call.name}: {call.content[:200]}" for call in self.record.toolCalls if call.ok]
        summary = "The model gave no summary. What its calls did:\n" + "\n".join(done)
        return lambda: self._take_text_as_result(summary)

    def _take_text_as_result(self, text: str) -> bool:
        """After the corrections, a Planner's or Worker's text is its result."""
        assert self.options.text_as_result is not None
        self.record.status = "stopped"
        self.record.stopValue = self.options.text_as_result(text)
        self._observe({"kind": "note", "text": "took the model's text answer as its result"})
        return True

    # -- tool calls --

    def _run_calls(self, calls: list[ToolCall]) -> bool:
        """Run one message's tool calls; True when one of them ended the run."""
        finish: ToolOutcome | None = None
        worked = False
        for index, call in enumerate(calls):
            if len(calls) > 1 and self.registry.must_be_alone(self.record.role, call.name):
                outcome = self._refuse(call, f"{call.name!r} ends the run: call it alone, in a "
                                             "message of its own, once your other calls' "
                                             "results are in")
            else:
                outcome = self._call(call)
            self.called = self.called or outcome.ok
            worked = worked or outcome.ok
            if outcome.ok:
                self.backed.add(call.name)
            if not outcome.ok:
                self._told(outcome.content)
            if outcome.stop and outcome.after_batch:
                finish = finish or outcome
            elif outcome.stop:
                self._skip_rest(calls[index + 1:], call.name)
                self.record.status, self.record.stopValue = "stopped", outcome.value
                return True
        if finish is not None:
            return self._finish_batch(finish, calls)
        self.failed_in_row = 0 if worked else self.failed_in_row + 1
        if self.failed_in_row == FAILING_IN_ROW and self.options.text_ends_run:
            # a confused small model retries the same broken call to the step limit: ask the
            # Teller for its answer in words instead, forced
            self._correct(corrections.FAILING, corrections.failing(self.failed_in_row))
            self.forced = forced("reply")
        return False

    def _finish_batch(self, finish: ToolOutcome, calls: list[ToolCall]) -> bool:
        """A call that ends the run after its message (``reply``): unless what it said
        promises work that no call of the message does."""
        said = " ".join(str(c.arguments) for c in calls if c.name == "reply")

        def stop(promised: str | None = None, tool: str | None = None) -> bool:
            self.record.status, self.record.stopValue = "stopped", finish.value
            self.record.promised, self.record.promisedTool = promised, tool
            return True

        tool = self._broken_promise(said)
        if tool:
            return self._problem(corrections.PROMISE, corrections.promise(said, tool),
                                 force=tool, give_up=lambda: stop(said, tool))
        return stop()

    def _call(self, call: ToolCall) -> ToolOutcome:
        """Run one call (or give back its journaled result), and record it."""
        began = time.monotonic()
        recorded = self.replay.result(call.id)
        if recorded is not None and recorded.get("interrupted") and \
                self.registry.idempotent(self.record.role, call.name):
            recorded = None  # it may run again: its effect, if it happened, is not repeated
        if recorded is None:
            self.replay.write_start(call.id)
            if hasattr(self.ctx, "call_id"):
                self.ctx.call_id = call.id
            outcome = self.registry.call(self.record.role, call.name, call.arguments, self.ctx)
            self.replay.write_done(call.id, journaled(outcome, self.ctx))
        elif recorded.get("interrupted"):
            outcome = ToolOutcome(ok=False, content=INTERRUPTED)
        else:
            outcome = replayed(recorded, self.ctx)
        self._note(call, outcome, int((time.monotonic() - began) * 1000))
        return outcome

    def _note(self, call: ToolCall, outcome: ToolOutcome, elapsed_ms: int) -> None:
        self.record.messages.append({"role": "tool", "tool_call_id": call.id,
                                     "content": outcome.content})
        entry = ToolCallRecord(name=call.name, arguments=call.arguments, ok=outcome.ok,
                               content=outcome.content, durationMs=elapsed_ms)
        self.record.toolCalls.append(entry)
        self._observe({"kind": "tool", "name": call.name,
                       "arguments": call.arguments[:STEP_TEXT_LIMIT], "ok": outcome.ok,
                       "output": outcome.content[:STEP_TEXT_LIMIT], "durationMs": elapsed_ms})

    def _refuse(self, call: ToolCall, reason: str) -> ToolOutcome:
        outcome = ToolOutcome(ok=False, content=f"error: {reason}")
        self._note(call, outcome, 0)
        return outcome

    def _skip_rest(self, calls: list[ToolCall], stopper: str) -> None:
        # Every tool call needs an answer in the transcript, even the ones never run.
        for call in calls:
            self.record.messages.append({"role": "tool", "tool_call_id": call.id,
                                         "content": f"error: not run: the run ended at "
                                                    f"{stopper!r}"})

    # -- endings --

    def _observe(self, step: dict[str, Any]) -> None:
        if self.observer is not None:
            self.observer({"step": self.record.steps, **step})

    def _fail(self, error: str) -> None:
        self.record.status, self.record.error = "failed", error

    def _timed_out(self, deadline: float) -> None:
        self._fail(f"timed out after {round(deadline - self.started, 1):g} s")
