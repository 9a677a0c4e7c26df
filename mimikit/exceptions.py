"""Errors raised by Mimikit; each message says what failed, the value, and the fix."""


class MimikitError(Exception):
    """Base of every error Mimikit raises on purpose."""


class ConfigError(MimikitError):
    """Raised when a ``MIMIKIT_*`` setting is missing or invalid."""


class AlreadyRunning(MimikitError):
    """Raised when ``mimikit up`` finds another instance holding the state dir."""


class NotFound(MimikitError):
    """Raised when a task, trigger or result id is unknown."""


class InvalidTransition(MimikitError):
    """Raised when a task status change is not allowed (e.g. done -> running)."""


class LLMUnavailable(MimikitError):
    """Raised when the LLM is not configured or cannot be reached after retries."""


class ToolError(MimikitError):
    """Raised by a tool; the message is returned to the model as the tool result."""
