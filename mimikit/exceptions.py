"""Errors raised by Mimikit; each message says what failed, the value, and the fix."""


class MimikitError(Exception):
    """Base of every error Mimikit raises on purpose."""


class InvalidValue(MimikitError, ValueError):
    """Raised when a value given by a person, a model or a stored record breaks a rule (a
    condition, a schedule, a glob, a tool argument); the message names the field and the fix.

    It is a ``ValueError`` too, so pydantic validators that raise it report it as a
    validation error of the field.
    """


class ConfigError(MimikitError):
    """Raised when a ``MIMIKIT_*`` setting is missing or invalid."""


class AlreadyRunning(MimikitError):
    """Raised when ``mimikit up`` finds another instance holding the state dir."""


class NotFound(MimikitError):
    """Raised when a task, trigger or result id is unknown."""


class InvalidTransition(MimikitError):
    """Raised when a task status change is not allowed (e.g. done -> running)."""


class LLMUnavailable(MimikitError):
    """Raised when the LLM is not configured, refuses the request for good (a bad key, an
    unknown model, a request it will never take), or cannot be reached after retries."""


class LLMAway(LLMUnavailable):
    """Raised when the LLM stays unreachable, or answers 5xx or 429, past the client's
    retries: it is expected back, so the work waits for it instead of failing."""


class LLMStopped(MimikitError):
    """Raised when a run's LLM request is abandoned because the run was told to stop
    (canceled, past its deadline, taken over by another delivery)."""


class ToolError(MimikitError):
    """Raised by a tool; the message is returned to the model as the tool result."""


class TaskCanceled(MimikitError):
    """Raised inside a task body when its task was canceled while it ran."""


class TaskTimedOut(MimikitError):
    """Raised inside a task body when its task ran past its timeout."""


class WaitStopped(MimikitError):
    """Raised when a run stops (canceled, past its deadline) while it waits for a host slot
    to run a shell command or codex in."""


class McpFailure(MimikitError):
    """Raised when an MCP server cannot be started or listed, or a call to it fails (it
    exited, hung past the call's timeout, or could not be reached); the message names the
    server, what happened and, when it said anything on stderr, its last words."""
