"""The LLM client (any OpenAI-compatible API, ``client``) and the agent loop (``loop``).

Nothing is imported here: a command that needs one module of this package (a server profile,
a constant) does not pay for importing the OpenAI SDK."""
