"""What every agent run has, whatever runs it: the role's prompt, the model metered against
the budgets, live steps, and the run record, kept however the run ends (done, failed, canceled
or timed out).

A run is a ``Session`` handed to an engine: the agent loop (``agent_loop``, every role's
default) or another Worker backend (``BACKENDS``: ``codex exec``, see ``agents.backends``); the
engine fills the session's record.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from redis.exceptions import RedisError

from mimikit.agents.backends import codex_engine
from mimikit.agents.context import learn_scale
from mimikit.agents.prompts import SystemPrompt, build_system_prompt
from mimikit.agents.session import Engine, Session
from mimikit.agents.warmup import (
    claim_warming,
    prompt_read,
    wait_for_prompts,
    warm_server_prompts,
    warm_streaming,
)
from mimikit.delivery.dispatch import warm_sending
from mimikit.exceptions import LLMStopped, LLMUnavailable, TaskCanceled, TaskTimedOut
from mimikit.llm.client import LLMClient, StreamingClient
from mimikit.llm.completion import ChatClient
from mimikit.llm.loop import RunOptions, run_agent
from mimikit.llm.probe import probe
from mimikit.llm.profile import Path
from mimikit.llm.profile_store import RedisProfiles
from mimikit.llm.record import Observer, RunRecord
from mimikit.llm.registry import Registry, Tool
from mimikit.llm.turns import TurnShape, turn_shape
from mimikit.mcp.catalog import learn_in_background
from mimikit.mcp.config import offered
from mimikit.memory.service import warm as index_warm
from mimikit.memory.tokenize import has_chinese, prepare_tokenizer
from mimikit.models import Task, Usage
from mimikit.roles import CHAT_ROLES, ROLES, role
from mimikit.spending.book import Spender
from mimikit.spending.budget import Caps
from mimikit.spending.meter import Meter
from mimikit.store.journal import RunJournal
from mimikit.store.runtime import Runtime
from mimikit.tools import (
    eval_tools,
    planner_tools,
    task_tools,
    teller_tools,
    trigger_tools,
    worker_tools,
)
from mimikit.tools.context import ToolContext

log = logging.getLogger("mimikit.agents")
TextSinks = Callable[[RunRecord, int], Callable[[str], None]]


PROBE_LOCK_SECONDS = 600  # one process of an instance probes a server at a time
_clients: dict[tuple[Any, ...], LLMClient] = {}
_clients_lock = threading.Lock()  # runs of one process start on many threads at once


@cache
def registry() -> Registry:
    """The process-wide registry with every role's tools (the seeds' permission matrix)."""
    built = Registry(propagate=(TaskCanceled, TaskTimedOut, SoftTimeLimitExceeded),
                     matrix={name: spec.tools for name, spec in ROLES.items()})
    for module in (task_tools, teller_tools, trigger_tools, planner_tools, worker_tools,
                   eval_tools):
        module.register(built)
    return built


def warm(runtime: Runtime, queues: frozenset[str] = frozenset()) -> dict[str, float]:
    """Get this process ready for its first agent run from ``queues`` (empty: every queue), so
    it costs what later ones do: the tools and their schemas, every role's prompt, the Redis
    connection, the LLM client, the broker connection tasks are sent on; where Teller or
    Planner runs are served, the memory index, and the Chinese word list when the conversation
    has Chinese in it (it takes ~60 MB; otherwise the first Chinese text loads it). A worker
    of Worker runs only loads neither. Returns the seconds each part took."""
    timings: dict[str, float] = {}

    def timed(name: str, step: Callable[[], object]) -> None:
        began = time.monotonic()
        step()
        timings[name] = round(time.monotonic() - began, 4)

    timed("tools", lambda: [registry().schemas_for(name) for name in ROLES])
    timed("prompts", lambda: [build_system_prompt(name) for name in ROLES])
    timed("redis", runtime.redis.ping)
    timed("llm client", lambda: client_for(runtime).warm())
    timed("llm stream", lambda: warm_streaming(registry().schemas_for("teller")))
    timed("celery", warm_sending)
    learn_profiles(runtime)
    if not queues or ROLES["planner"].queue in queues:  # what the Planner reads of MCP servers
        learn_in_background(runtime, offered(runtime.settings))
    if not queues or queues & {ROLES["teller"].queue, ROLES["planner"].queue}:
        timed("memory", lambda: index_warm(runtime.settings))  # their runs search memory
        if _speaks_chinese(runtime):
            timed("chinese words", prepare_tokenizer)
    return timings


def learn_profiles(runtime: Runtime) -> None:
    """Find out what the server does for each role's model (``llm.profile``), in the
    background: named from its model listing, then probed with a few small requests, once per
    instance, when it is a kind known to hold answers to schemas (a server that cannot be
    named is learned from its first answers, costing no request); then read the roles'
    prompts into its cache (``warmup.warm_server_prompts``)."""
    if runtime.settings.llm_configured:
        threading.Thread(target=_learn_profiles, args=(runtime, time.time()),
                         name="llm-profile", daemon=True).start()


def _learn_profiles(runtime: Runtime, began: float) -> None:
    client = client_for(runtime)
    warming = claim_warming(runtime, began)  # at once: "ready" waits for it meanwhile
    for model in sorted({runtime.settings.model_for(name) for name in CHAT_ROLES}):
        try:
            profile = client.profile(model)
            if profile.probed or profile.constraint is None:
                continue
            probing = runtime.keys.meta(f"probing|{client.url}|{model}")
            if runtime.redis.set(probing, "1", nx=True, ex=PROBE_LOCK_SECONDS):
                probe(client, model)
        except (LLMUnavailable, RedisError) as error:
            log.info("what the LLM at %s does for %s is learned later: %s", client.url, model,
                     error)
    if warming:
        warm_server_prompts(runtime, client, began)


def _speaks_chinese(runtime: Runtime) -> bool:
    """True when the latest messages of the conversation have Chinese in them."""
    return any(has_chinese(message.text) for message in runtime.conversation.recent(20))


def client_for(runtime: Runtime) -> LLMClient:
    """The process's LLM client for these settings (building one costs ~30 ms of TLS setup),
    its servers' profiles kept in Redis."""
    settings = runtime.settings
    key = (os.getpid(), settings.llm_base_url, settings.llm_api_key, settings.llm_timeout,
           settings.llm_retries, settings.key_prefix)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            keeper = RedisProfiles(runtime.redis, runtime.keys.llm_profiles)
            client = _clients[key] = LLMClient.from_settings(settings, keeper)
        return client


def answer_path(runtime: Runtime, role_name: str) -> Path:
    """The path the role's requests take (``llm.profile``), as far as the server is known
    now (a server that cannot be named yet has a profile too)."""
    if not runtime.settings.llm_configured:
        return "native"
    return client_for(runtime).profile(runtime.settings.model_for(role_name)).path


def run_role(runtime: Runtime, ctx: ToolContext, system_prompt: SystemPrompt, user_prompt: str,
             timeout: float, on_step: Any = None, owners: tuple[str, ...] = (),
             stream_to: TextSinks | None = None, engine: Engine | None = None,
             cancel: threading.Event | None = None, journal: RunJournal | None = None,
             tools: Sequence[Tool] = ()) -> RunRecord:
    """Run one agent of ``ctx.role`` with ``engine`` (the agent loop by default) and keep its
    transcript under each of ``owners``.

    ``stream_to(record, n)`` gives the sink of the reply text of the run's ``n``-th LLM
    request, which then streams. With ``journal`` each step is written down, and a run that
    finds steps there resumes after them. ``tools`` are this run's beside the role's (one of
    the same name replaces the role's).
    """
    wait_for_prompts(runtime)
    model = runtime.settings.model_for(ctx.role)
    record = RunRecord(role=ctx.role, model=model, traceId=ctx.trace_id)
    task = ctx.task
    meter = metered(runtime, ctx, model, record, stream_to, journal)
    path = answer_path(runtime, ctx.role)
    ctx.system = system_prompt(path)
    ctx.seen = [user_prompt]
    session = Session(runtime=runtime, ctx=ctx, record=record, meter=meter,
                      system=ctx.system, native_system=system_prompt("native"),
                      user=user_prompt,
                      deadline=time.monotonic() + timeout, on_step=on_step,
                      observe=live_steps(runtime, record, task, journal), cancel=cancel,
                      journal=journal, tools=tuple(tools))
    ctx.journal_key = journal.key if journal is not None else None
    try:
        (engine or agent_loop)(session)
    except BaseException as error:  # kept below with what it did so far
        stopped = isinstance(error, TaskCanceled | LLMStopped | SoftTimeLimitExceeded)
        record.status = "canceled" if stopped else "failed"
        record.error = record.error or str(error) or type(error).__name__
        raise
    finally:
        if journal is not None:
            journal.flush()
        keep_run(runtime, record, owners, live_owner=task.id if task is not None else None,
                 own_tools=frozenset(tool.name for tool in tools))
    return record


def agent_loop(session: Session) -> None:
    """The engine of every role: the agent loop over the OpenAI-compatible API."""
    ctx, record, settings = session.ctx, session.record, session.runtime.settings
    spec = role(ctx.role)
    tools = run_registry(ctx.role, session.tools)
    shape = _shape(session, tools)
    options = RunOptions(
        max_steps=settings.max_steps_for(ctx.role), deadline=session.deadline,
        text_ends_run=spec.text_ends_run, max_tokens=settings.max_tokens_for(ctx.role),
        # a Teller's turn may end in words or silence; the others end at their finisher
        tool_choice=None if spec.text_ends_run else "required",
        journal=session.journal, text_as_result=text_result if spec.text_is_result else None,
        shape=shape, opening=shape.without(ctx.opening_withheld),
        native_system=session.native_system,
        reply_ends_turn=ctx.turn_only == "reply")
    run_agent(session.meter, record.model, ctx.role, session.system, session.user, tools,
              ctx, options, on_step=session.on_step, record=record, observer=session.observe)


def _shape(session: Session, tools: Registry) -> TurnShape:
    """The shape of this run's answers: the role's, over the run's tools (with an MCP
    server's), narrowed to one tool where the run allows only that one."""
    ctx = session.ctx
    shape = shape_of(ctx.role) if not session.tools else shape_in(tools, ctx.role)
    if ctx.reply_pattern:
        shape = shape.matching("reply", ctx.reply_pattern)
    for name in ctx.turn_set:
        shape = shape.setting(name)
    for words in ctx.withheld_kinds:
        shape = shape.withholding(words)
    for name, allowed in ctx.choices.items():
        shape = shape.choosing(name, allowed)
    return shape.only(ctx.turn_only) if ctx.turn_only else shape


@cache
def shape_of(role_name: str) -> TurnShape:
    """The shape of the role's answers where the server holds them to a schema."""
    return shape_in(registry(), role_name)


def shape_in(tools: Registry, role_name: str) -> TurnShape:
    """The shape of the role's answers over the role's tools in ``tools``."""
    spec = role(role_name)
    chosen = tools.tools_for(role_name, spec.turn_tools)
    return turn_shape(spec.turn, chosen, spec.turn_required, spec.turn_filled, spec.turn_kinds,
                      spec.turn_notes, spec.turn_text_ends)


def run_registry(role_name: str, extra: Sequence[Tool] = ()) -> Registry:
    """The tools one run of the role sees: the role's, with ``extra`` beside them (one of the
    same name replaces the role's); the process-wide registry stays as it is."""
    return _view(role_name, extra) if extra else registry()


def _view(role_name: str, extra: Sequence[Tool]) -> Registry:
    base = registry()
    view = Registry(propagate=base.propagate)
    replaced = {tool.name for tool in extra}
    for tool in base.tools_for(role_name):
        if tool.name not in replaced:
            view.register(dataclasses.replace(tool, roles=frozenset({role_name})))
    for tool in extra:
        view.register(tool)
    return view


def text_result(text: str) -> dict[str, Any]:
    """A Planner's or Worker's text answer as its result."""
    return {"status": "done", "resultType": "text", "result": {"text": text}}


def metered(runtime: Runtime, ctx: ToolContext, model: str, record: RunRecord,
            stream_to: TextSinks | None = None, journal: RunJournal | None = None) -> Meter:
    """The run's LLM client: every call checked against its budgets and booked, with the run's
    next ``journal`` entry when it has one (and its reply text streamed, with ``stream_to``)."""
    task = ctx.task
    spender = Spender(role=ctx.role, model=model, trace=ctx.trace_id,
                      task=task.id if task else None, trigger=task.triggerId if task else None)
    trigger = runtime.tasks.get(task.triggerId) if task and task.triggerId else None
    caps = Caps.for_run(runtime, spender, trigger.budget if trigger else None)
    # Every answer streams (a reply's text to the page, for the Teller): so the run's deadline
    # holds over the whole answer.
    sinks = (lambda n: stream_to(record, n)) if stream_to is not None else _no_sink
    client: ChatClient = StreamingClient(client_for(runtime), sinks)
    return Meter(runtime, client, spender, caps, on_usage=ctx.add_usage,
                 later=journal.later if journal is not None else None,
                 on_answer=lambda messages, tools, usage: _answered(
                     runtime, ctx.role, model, messages, tools, usage))


def _answered(runtime: Runtime, role_name: str, model: str, messages: list[dict[str, Any]],
              tools: bool, usage: Usage) -> None:
    """What a run's answer tells beside itself: the server's token count of a role's first
    request, and that the role's prompt was read (``warmup.prompt_read``)."""
    if len(messages) == 2:
        learn_scale(runtime, role_name, model, messages, tools, usage)
        prompt_read(runtime, role_name)


def _no_sink(_request: int) -> Callable[[str], None]:
    return lambda _piece: None


def live_steps(runtime: Runtime, record: RunRecord, task: Task | None,
               journal: RunJournal | None = None) -> Observer | None:
    """Publish each step of a task's run as it happens (the Teller's replies stream instead),
    with the ``journal`` entry that follows it when the run has a journal."""
    if task is None:
        return None
    run = {"id": record.id, "role": record.role, "taskId": task.id, "traceId": task.traceId}
    runtime.runs.end_live(task.id)  # steps of an earlier attempt that died

    def observe(step: dict[str, Any]) -> None:
        if journal is None:
            runtime.runs.append_step(task.id, run, step)
        else:
            journal.later(lambda pipe: runtime.runs.queue_step(pipe, task.id, run, step))

    return observe


def keep_run(runtime: Runtime, record: RunRecord, owners: tuple[str, ...],
             live_owner: str | None = None, own_tools: frozenset[str] = frozenset()) -> None:
    """Keep the run's transcript under each of ``owners`` and log that it finished, in one
    transaction that also forgets the live steps of ``live_owner``. A run with tools of its
    own (``own_tools``: an MCP server's) counts its calls of them (``ownCalls``)."""
    finished = {"runId": record.id, "role": record.role, "status": record.status,
                "traceId": record.traceId, "steps": record.steps,
                "tokens": record.usage.totalTokens, "durationMs": record.durationMs,
                "taskId": owners[0] if owners and owners[0].startswith("task-") else None}
    if own_tools:
        finished["ownCalls"] = sum(call.name in own_tools for call in record.toolCalls)
    runtime.runs.keep_run(record.model_dump(mode="json", exclude_none=True),
                          tuple(o for o in owners if o), finished=finished,
                          live_owner=live_owner)


BACKENDS: dict[str, Engine] = {"llm": agent_loop, "codex": codex_engine}
