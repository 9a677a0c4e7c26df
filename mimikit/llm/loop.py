"""The agent loop: ask the model, run the calls its answer makes, feed results back, repeat.

Each request takes the path the server's profile gives (``llm.profile``): held to the role's
schema (``llm.turns``: the answer parses by construction), or with the tools offered. Each
answer is read once (``answers``) and becomes one next step (``_next``): run its calls, end
the run, or correct it (``corrections``: an empty or cut answer, a call that cannot be read,
text where a finisher is due). A turn ends when the model ends it: a Teller's turn after an
answer that says its piece and asks to read nothing more (on the native path, an answer of
only a ``reply`` may still be followed by the work in the next one); a Planner's or Worker's
at its finisher. Every step is written to the run's journal before the next one, and a run
that is delivered again replays it (``journal``).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from mimikit.exceptions import LLMUnavailable
from mimikit.llm import corrections
from mimikit.llm.answers import Answer, read_answer
from mimikit.llm.attempts import ConstraintRefused, LLMDeadline
from mimikit.llm.calls import Calls
from mimikit.llm.choice import forced
from mimikit.llm.completion import ChatClient, Completion, ToolCall
from mimikit.llm.journal import Replay
from mimikit.llm.options import RunOptions
from mimikit.llm.record import STEP_TEXT_LIMIT, Observer, RunRecord, RunStatus, ToolCallRecord
from mimikit.llm.registry import Registry, ToolOutcome

__all__ = ["Observer", "RunOptions", "RunRecord", "RunStatus", "ToolCallRecord", "run_agent"]
logger = logging.getLogger("mimikit.llm")
FAILING_IN_ROW = 2  # a Teller's answers in a row whose calls all failed, before reply is forced
# How often one kind of problem is corrected before the run gives up on it (or, for text, takes
# it as it is): the first time a message, the second time the call forced.
GIVE_UP_AFTER = {corrections.EMPTY: 2, corrections.PLAIN: 2, corrections.UNREADABLE: 3,
                 corrections.CUT: 1, corrections.AGAIN: 2}
REPLY = "reply"


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
    """Run one agent until its turn ends, a tool stops it, or a limit hits.

    ``on_step`` is called with the record before each LLM request and may raise to abort the
    run; ``observer`` is given each step as it happens (``kind: llm`` with its usage and text,
    or ``kind: tool`` with its arguments and bounded output).

    Returns:
        The run record: status "done" (the turn ended, see ``finalText``), "stopped" (a tool
        ended the run, see ``stopValue``) or "failed" (see ``error``).

    Raises:
        LLMUnavailable: The LLM is not configured or cannot be reached.
    """
    record = record or RunRecord(role=role, model=model)
    loop = _Loop(client, record, registry, ctx, options, on_step, observer)
    record.messages = [{"role": "system", "content": system_prompt},
                       {"role": "user", "content": user_prompt}]
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
        self.deadline = options.deadline  # moved on by the waits for a busy server's slot
        self.last_error: str | None = None
        self.names = registry.names_for(record.role)
        self.tools = registry.schemas_for(record.role) or None
        self.replay = Replay(options.journal)
        self.calls = Calls(record, registry, ctx, self.replay, self._observe)
        self.problems: Counter[str] = Counter()
        self.forced: str | None = None  # the tool the next request forces, after a correction
        self.calls_made: set[tuple[str, str]] = set()  # every call of the run: name, arguments
        self.called = False  # some call of the run succeeded
        self.acted = False  # some call other than reply succeeded
        self.replied_alone = 0  # answers in a row that only replied (the native path)
        self.failed_in_row = 0  # answers in a row whose every call failed
        self.shape = options.shape if options.shape is not None and \
            client.profile(record.model).path == "constrained" else None
        record.path = "constrained" if self.shape is not None else \
            client.profile(record.model).path

    # -- the cycle --

    def run(self) -> None:
        record = self.record
        if not self.replay.empty:
            self._observe({"kind": "resume", "journaled": len(self.replay.answers)})
        while record.steps < self.options.max_steps:
            completion = self._ask()
            if completion is None:
                return
            step = f"{self.replay.run}-{record.steps}"
            if self._handle(read_answer(completion, self.names, step, self.shape)):
                return
        self._fail(f"step limit of {self.options.max_steps} reached without finishing; last "
                   f"error: {self.last_error or 'none (the model kept calling tools)'}")

    def _ask(self) -> Completion | None:
        """One answer: replayed from the journal, or one LLM request; None when the run
        timed out (its record says so)."""
        step = self.record.steps + 1
        replayed_answer = self.replay.answer(step)
        if replayed_answer is None:
            deadline = self.deadline
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
            completion = replayed_answer
            self.record.resumed += 1
        self.record.steps = step
        self.record.usage = self.record.usage + completion.usage
        if self.deadline is not None and completion.waited:
            self.deadline += completion.waited
        return completion

    def _request(self) -> Completion | None:
        began = time.monotonic()
        tool_choice = self.options.tool_choice if self.tools else None
        shape = self.options.shape_at(self.shape, self.record.steps + 1, self.ctx)
        if self.forced is not None:  # held to that one call's schema, or its tool_choice
            shape, tool_choice = (shape.only(self.forced), None) if shape else \
                (None, forced(self.forced))
        self.forced = None
        try:
            completion = self.client.chat(
                self.record.model, self.record.messages, self.tools,
                deadline=self.deadline, max_tokens=self.options.max_tokens,
                tool_choice=tool_choice, schema=shape.schema() if shape else None,
                text_field=shape.text_field() if shape else None,
                retries=0 if self.replied_alone else None)
        except LLMDeadline:
            if self.replied_alone:
                self._end("")  # it replied; asked whether it had more, it did not say in time
                return None
            self._timed_out(self.deadline or self.started)
            return None
        except LLMUnavailable:
            if not self.replied_alone:
                raise
            self._end("")  # it replied; whether it had more is not worth waiting for
            return None
        except ConstraintRefused:
            self._unconstrained()
            return self._request()
        self._observe({"kind": "llm", "model": self.record.model,
                       "usage": completion.usage.model_dump(),
                       "elapsedMs": int((time.monotonic() - began) * 1000),
                       "text": (completion.content or "")[:STEP_TEXT_LIMIT] or None,
                       "calls": [call.name for call in completion.tool_calls]})
        return completion

    def _unconstrained(self) -> None:
        """The server refused the schema: the run goes on with the tools offered."""
        self.shape = None
        self.record.path = self.client.profile(self.record.model).path
        if self.options.native_system is not None:
            self.record.messages[0] = {"role": "system", "content": self.options.native_system}
        self._observe({"kind": "note", "text": "the server refused the answer's schema: "
                                               "asked with tools instead"})

    def _handle(self, answer: Answer) -> bool:
        """Handle one answer; True when the run ended."""
        self.record.messages.append(answer.message)
        if answer.cut:
            return self._problem(corrections.CUT, corrections.cut(self.options.max_tokens))
        if answer.calls:
            return self._run_calls(answer)
        if answer.unknown or answer.broken:
            return self._problem(corrections.UNREADABLE,
                                 corrections.unreadable(answer.unknown, answer.broken,
                                                        self.names))
        if answer.empty:
            if self.options.text_ends_run and self.called:
                self._end("")  # it said what it had to through its calls
                return True
            name, text = corrections.empty(self.options.text_ends_run)
            return self._problem(corrections.EMPTY, text, force=name, give_up=self._fell_silent())
        return self._plain(answer.text or "")

    def _plain(self, text: str) -> bool:
        """A plain text answer; True when it ends the run."""
        if self.options.text_ends_run:
            self._end("" if REPLY in self._succeeded() else text)  # its say was its reply
            return True
        finisher, message = corrections.plain_text(self.registry.finishers(self.record.role))
        if self.options.text_as_result is not None and \
                self.problems[corrections.PLAIN] >= GIVE_UP_AFTER[corrections.PLAIN]:
            return self._take_text_as_result(text)
        self._correct(corrections.PLAIN, message, force=finisher)  # to the step limit
        return False

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
        """Tell the model what to do instead (if ``message``); the second time, force the call."""
        self.problems[kind] += 1
        if message:
            self._told(message, correction=True)
            self.record.messages.append({"role": "user", "content": message})
        if force is not None and self.problems[kind] > 1:
            self.forced = force

    def _told(self, error: str, correction: bool = False) -> None:
        """Keep what the model was told went wrong (for ``echoes``; a correction apart too)."""
        self.last_error = error
        for kept in ("told", "corrected") if correction else ("told",):
            if isinstance(found := getattr(self.ctx, kept, None), list):
                found.append(error)

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

    def _run_calls(self, answer: Answer) -> bool:
        """Run an answer's calls in order until one stops the run; True when the run ended."""
        outcomes: list[tuple[ToolCall, ToolOutcome]] = []
        for index, call in enumerate(answer.calls):
            outcomes.append((call, self._call_in(answer, call)))
            if outcomes[-1][1].stop:
                self.calls.skip(answer.calls[index + 1:], call.name)
                break
        if answer.structured:
            self.calls.in_words(outcomes)
        ok = [outcome.ok for _call, outcome in outcomes]
        self.called = self.called or any(ok)
        self.acted = self.acted or any(o.ok and c.name != REPLY for c, o in outcomes)
        stop = next((o for _c, o in outcomes if o.stop and o.ok), None)
        if stop is not None:
            self.record.status, self.record.stopValue = "stopped", stop.value
            return True
        self.failed_in_row = 0 if any(ok) else self.failed_in_row + 1
        if not self.options.text_ends_run:
            self._finish_when_due(answer, outcomes)
            return self.record.status == "failed"  # else a finisher is due
        if not all(ok):
            if self.failed_in_row == FAILING_IN_ROW:
                # a confused small model retries the same broken call to the step limit: ask
                # the Teller for its answer in words instead, forced
                self._correct(corrections.FAILING, corrections.failing(self.failed_in_row))
                self.forced = REPLY
            return False
        if any(self.registry.reads(self.record.role, c.name) for c, _o in outcomes):
            return False  # the model asked to read something
        return self._turn_over(answer, outcomes)

    def _finish_when_due(self, answer: Answer, outcomes: list[tuple[ToolCall, ToolOutcome]]
                         ) -> None:
        """Only its finisher may come next: for a Planner or Worker making a call again, going
        round (said in words where no schema holds it: small models copy them; one again fails
        it); and for a plan held to its schema whose action came without it (the 0.5B model
        went on with "Delegate the task to task-…", a new task each time, to the step limit;
        the 1.5B model sent its finisher beside its action in every plan recorded)."""
        made = {(call.name, call.arguments) for call in answer.calls}
        again = sorted(made & self.calls_made)
        self.calls_made |= made
        finishers = self.registry.finishers(self.record.role)
        if finishers and not again and self.shape is not None and self.shape.shape == "plan" \
                and all(o.ok and not self.registry.reads(self.record.role, c.name)
                        for c, o in outcomes):
            self.forced = finishers[0]
        if not again or not finishers:
            return
        if any(name in finishers for name, _arguments in again) or \
                self.problems[corrections.AGAIN] >= GIVE_UP_AFTER[corrections.AGAIN]:
            self._fail(f"the model made the same call again after it was refused or done "
                       f"({again[0][0]}); last error: {self.last_error or 'none'}")
            return
        said = "" if self.shape else corrections.again(again[0][0], finishers[0])
        self._correct(corrections.AGAIN, said)
        self.forced = finishers[0]

    def _turn_over(self, answer: Answer, outcomes: list[tuple[ToolCall, ToolOutcome]]) -> bool:
        """A Teller's answer whose calls all succeeded: True when its turn is over. An object
        of its schema is a whole turn. On the native path the turn goes on after calls that
        said nothing (its words may come next) and after a first reply alone (the work may
        come next); it is over after a reply beside the work, or a second reply."""
        if answer.structured:
            self._end("")
            return True
        if not any(call.name == REPLY for call, _o in outcomes):
            return False
        if self.options.reply_ends_turn:
            self._end("")
            return True
        if self.acted or self.replied_alone:
            self._end("")
            return True
        self.replied_alone += 1
        return False

    def _call_in(self, answer: Answer, call: ToolCall) -> ToolOutcome:
        """Run one call of an answer, unless it is a finisher that may not run beside the
        others: on the native path it must be alone; in an object of the schema it runs last,
        and only after the others succeeded and asked to read nothing."""
        role, others = self.record.role, [c for c in answer.calls if c is not call]
        if others and self.registry.must_be_alone(role, call.name):
            if not answer.structured:
                return self._refuse(call, f"{call.name!r} ends the run: call it alone, in a "
                                          "message of its own, once your other calls' results "
                                          "are in")
            blocker = self.calls.blocker(others)
            if blocker:  # not told as the run's last error: the failed call's says why
                return self.calls.refuse(call, f"{call.name!r} was not run: {blocker}; send "
                                               "it again once you have read the results above")
        return self._call(call)

    def _call(self, call: ToolCall) -> ToolOutcome:
        outcome = self.calls.run(call)
        if not outcome.ok:
            self._told(outcome.content)
        return outcome

    def _refuse(self, call: ToolCall, reason: str) -> ToolOutcome:
        outcome = self.calls.refuse(call, reason)
        self._told(outcome.content)
        return outcome

    def _succeeded(self) -> set[str]:
        return {entry.name for entry in self.record.toolCalls if entry.ok}

    # -- endings --

    def _observe(self, step: dict[str, Any]) -> None:
        if self.observer is not None:
            self.observer({"step": self.record.steps, **step})

    def _end(self, text: str) -> None:
        self.record.status, self.record.finalText = "done", text

    def _fail(self, error: str) -> None:
        self.record.status, self.record.error = "failed", error

    def _timed_out(self, deadline: float) -> None:
        self._fail(f"timed out after {round(deadline - self.started, 1):g} s")
