"""The store: all runtime state of one instance, in Redis.

Key names (``keys``), transactions that carry their log lines and live events (``writepipe``,
``state``, ``conversation``), leases held by one process at a time (``lease``), riding out a
Redis outage (``outage``), who a process is (``identity``), and the per-process wiring of
settings, Redis and the state store (``runtime``).
"""
