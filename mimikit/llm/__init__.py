"""The LLM client (any OpenAI-compatible API, ``client``) and the agent loop (``loop``).

Nothing is imported here, so that a module of this package (a server profile, a constant)
costs a command no import of the OpenAI SDK."""
