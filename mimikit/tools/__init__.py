"""The tools of each role, as OpenAI function calls: what a model may do and how each call is
checked (the registry machinery itself is ``mimikit.llm.registry``)."""
