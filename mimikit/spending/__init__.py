"""Spending: what LLM calls cost, and the caps on it.

The book of tokens and cost per trace, task, trigger and day (``book``), the budgets that stop
a run between steps before it would exceed its cap, counted atomically in Redis across every
worker (``budget``), and the metered client of one run (``meter``). What a model costs is
``mimikit.prices``.
"""
