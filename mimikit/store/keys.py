"""Every Redis key Mimikit uses, built in one place from ``KEY_PREFIX``."""

from __future__ import annotations

LOG_MAXLEN = 100_000  # entries kept in the log stream
EVENTS_MAXLEN = 10_000  # entries kept in the live-event stream (what a reconnect can replay)
TASK_LOG_KEPT = 1000  # events kept per task (a trigger that fires for months adds one a firing)


class Keys:
    """Key names of one Mimikit instance; ``Keys("mimikit").task("t1") == "mimikit:task:t1"``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def _k(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    # tasks and results
    def task(self, task_id: str) -> str:
        return self._k("task", task_id)

    def status(self, status: str) -> str:
        """Set of task ids currently in ``status``."""
        return self._k("status", status)

    @property
    def finished(self) -> str:
        """Sorted set: id of each finished task -> when it finished (epoch seconds)."""
        return self._k("finished")

    @property
    def waiting_for_model(self) -> str:
        """Sorted set: id of each unfinished task waiting for the LLM to come back -> since
        when (epoch seconds)."""
        return self._k("waiting_for_model")

    def result(self, task_id: str) -> str:
        return self._k("result", task_id)

    def task_records(self, task_id: str) -> list[str]:
        """The keys that live as long as a finished task: it, its result, its log and runs,
        its spending, its last result's digest and what a summary task summarizes (see
        ``store.retention``)."""
        return [self.task(task_id), self.result(task_id), self.task_log(task_id),
                self.runs(task_id), self.usage("task", task_id),
                self.meta(f"lastresult:{task_id}"), self.meta(f"summary:{task_id}"),
                self.retired_by(task_id), self.journal(task_id)]

    def journal(self, owner: str) -> str:
        """List of the journaled steps (JSON) of the run of a task, or of the Teller's pass."""
        return self._k("journal", owner)

    def retired_by(self, task_id: str) -> str:
        """JSON list of the names of the dependents a task's outcome retired."""
        return self._k("retiredby", task_id)

    def heartbeat(self, task_id: str) -> str:
        return self._k("hb", task_id)

    def runs(self, owner_id: str) -> str:
        """List of run transcripts (JSON) of a task or a Teller trace."""
        return self._k("runs", owner_id)

    def live_steps(self, owner_id: str) -> str:
        """List of the steps (JSON) of the run of a task in progress, as they happen."""
        return self._k("livesteps", owner_id)

    def task_log(self, task_id: str) -> str:
        """List of the log events (JSON) of one task, for its detail view."""
        return self._k("tasklog", task_id)

    def fingerprint(self, digest: str) -> str:
        return self._k("fingerprint", digest)

    def cancel_requested(self, task_id: str) -> str:
        return self._k("cancel", task_id)

    # triggers
    @property
    def triggers(self) -> str:
        return self._k("triggers")

    def dependents(self, task_id: str) -> str:
        """Set of trigger ids whose condition references ``task_id``."""
        return self._k("dependents", task_id)

    def claim(self, name: str) -> str:
        return self._k("claim", name)

    def file_seen(self, trigger_id: str) -> str:
        return self._k("fileseen", trigger_id)

    @property
    def file_triggers(self) -> str:
        """Set of trigger ids whose condition has a file atom (evaluated by the tick)."""
        return self._k("triggers", "files")

    @property
    def llm_triggers(self) -> str:
        """Set of trigger ids whose condition has an ``llm_eval`` atom."""
        return self._k("triggers", "llm")

    @property
    def cooling(self) -> str:
        """Sorted set: trigger id -> end of a cooldown that held back a firing."""
        return self._k("triggers", "cooling")

    @property
    def verdicts(self) -> str:
        """Hash: llm_eval condition id -> its latest verdict (JSON)."""
        return self._k("llmeval", "verdicts")

    @property
    def evaluating(self) -> str:
        """Hash: trigger id -> until when a batch evaluation holds it (epoch seconds)."""
        return self._k("llmeval", "evaluating")

    # conversation
    @property
    def inbox(self) -> str:
        return self._k("inbox")

    @property
    def inbox_tries(self) -> str:
        """Hash: inbox item id -> the failed Teller passes it was part of and what they cost
        (JSON), until the item is acknowledged or gives up."""
        return self._k("inbox", "tries")

    @property
    def inbox_failed(self) -> str:
        """Hash: inbox item id -> the item that gave up, with why (JSON), until it is tried
        again (a dismissed one stays, marked so)."""
        return self._k("inbox", "failed")

    @property
    def history(self) -> str:
        return self._k("history")

    @property
    def messages(self) -> str:
        return self._k("messages")

    @property
    def history_seen(self) -> str:
        return self._k("history", "seen")

    @property
    def question(self) -> str:
        return self._k("question")

    # teller coordination
    @property
    def teller_lock(self) -> str:
        return self._k("teller", "lock")

    @property
    def teller_wake(self) -> str:
        return self._k("teller", "wake")

    @property
    def teller_queued(self) -> str:
        return self._k("teller", "queued")

    # logs and live events
    @property
    def log(self) -> str:
        return self._k("log")

    @property
    def events(self) -> str:
        return self._k("events")

    # cluster
    def worker(self, hostname: str) -> str:
        return self._k("workers", hostname)

    @property
    def worker_names(self) -> str:
        """Sorted set: name of each registered worker -> when it last registered (epoch s)."""
        return self._k("workers")

    # spending
    def usage(self, scope: str, ident: str) -> str:
        """Hash of tokens, calls and cost of one trace, task, trigger or day."""
        return self._k("usage", scope, ident)

    def usage_index(self, scope: str) -> str:
        """Sorted set: the ids of one scope (trace, trigger, day) by when they last spent."""
        return self._k("usage", "index", scope)

    @property
    def usage_by_model(self) -> str:
        """Hash ``role|model|field`` -> tokens, calls and cost, since the instance began."""
        return self._k("usage", "models")

    @property
    def token_scales(self) -> str:
        """Hash ``role|model`` -> the most server tokens per estimated token seen in a role's
        first request (``agents.context``)."""
        return self._k("usage", "scales")

    @property
    def counters(self) -> str:
        """Hash of counters for ``/metrics`` (``tasks|done``, ``firings|fired``, ...)."""
        return self._k("metrics")

    @property
    def recovered_at(self) -> str:
        """When the start-up recovery last finished (``mimikit up`` is ready after it)."""
        return self._k("meta", "recovered_at")

    @property
    def llm_profiles(self) -> str:
        """Hash ``base URL|model`` -> that server's profile (``llm.profile``), as JSON."""
        return self._k("llm", "profiles")

    def meta(self, name: str) -> str:
        """Small bookkeeping values (last archive run, last flush, ...)."""
        return self._k("meta", name)

    @property
    def all_pattern(self) -> str:
        return self._k("*")


def as_text(value: bytes | str) -> str:
    """A Redis reply (bytes without ``decode_responses``) as text."""
    return value.decode() if isinstance(value, bytes) else value
