"""Mimikit: a self-hosted LLM agent runtime on Celery and Redis."""

from mimikit.config import Settings, load_settings
from mimikit.exceptions import MimikitError
from mimikit.models import Message, Result, Task
from mimikit.store.runtime import Runtime, build_runtime

__version__ = "0.1.0"
__all__ = ["Message", "MimikitError", "Result", "Runtime", "Settings", "Task", "build_runtime",
           "load_settings"]
