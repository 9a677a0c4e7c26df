"""The agent roles: Teller, Planner, Worker, and the llm_eval judge.

Each role module runs one delivery of its role: it builds the prompt (``prompts``, with history
and memory from ``context``), runs the agent loop with the role's tools (``common``), and turns
the run into a result.
"""
