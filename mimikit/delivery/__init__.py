"""Delivery: getting a task onto a Celery queue.

Queue names, routes and priorities (``queues``), sending work, reading queue depths and
stopping a running delivery (``dispatch``), the retry policy (``retry``), and which Celery
workers are alive (``workers``). Running one delivery is ``mimikit.lifecycle.execution``.
"""
