"""Delivery: getting a task onto a Celery queue and running one delivery of it.

Queue names, routes and priorities (``queues``), sending work and reading queue depths
(``dispatch``), one delivery with its claim, heartbeat, cancel and deadline (``execution``), the
retry policy (``retry``), which Celery workers are alive (``workers``), and the broker
transport that lets a worker reconnect after Redis went away (``transport``).
"""
