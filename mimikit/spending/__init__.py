"""Spending: what LLM calls cost, and the caps on it.

Prices per model (``prices``), the book of tokens and cost per trace, task, trigger and day
(``book``), and the budgets that stop a run between steps before it would exceed its cap,
counted atomically in Redis across every worker (``budget``).
"""
