"""Mimikit's beat scheduler: RedBeat, keeping its entries and lock in Redis."""

from __future__ import annotations

import logging

from redbeat import RedBeatScheduler

log = logging.getLogger("mimikit.beat")


class Scheduler(RedBeatScheduler):
    """RedBeat with Mimikit's settings (entries under ``KEY_PREFIX:redbeat:``)."""
