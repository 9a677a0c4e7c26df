"""Scheduling: when work runs.

Slots and cron (``slots``, ``cron``), a condition's atoms checked and evaluated
(``conditions``), triggers installed, routed to and given up on (``triggers``), whether one is
spent (``retirement``), timed firings (``timed``), the RedBeat scheduler and its entries
(``beat``, ``entries``), checks of schedules as models write them (``validation``), and the
collection of the batched ``llm_eval`` conditions (``llm_eval``).
"""
