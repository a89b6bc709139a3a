"""The chat engine: turns, streaming events, titles, usage and the cost guard, traces."""
