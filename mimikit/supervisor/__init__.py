"""The supervisor: code-only housekeeping, no LLM.

It routes finished tasks to the chat, the triggers waiting on them and the Teller (``routing``),
recovers work whose worker died or whose message was lost (``recovery``), archives memory
(``archival``), and runs all of it from one periodic pass (``tick``).
"""
