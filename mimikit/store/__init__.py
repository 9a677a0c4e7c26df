"""The store: all runtime state of one instance, in Redis, one store per aggregate.

Key names (``keys``); the event log and the transactions that carry their log lines and live
events (``eventlog``, ``writepipe``); tasks and results (``tasks``); what triggers wait on
(``triggers``); the conversation and the pending question (``conversation``); the Teller's
inbox (``inbox``); agent runs, live and finished (``runs``); duplicate delegations
(``fingerprints``); leases held by one process at a time (``lease``); riding out a Redis
outage (``outage``); who a process is (``identity``); and the per-process wiring of settings,
Redis and the stores (``runtime``).
"""
