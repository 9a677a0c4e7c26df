"""The conversation: user input, the one-at-a-time Teller and its wakes, the pending question,
and the LLM outage state that holds the Teller back while the model is away."""
