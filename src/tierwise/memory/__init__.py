"""Hierarchical conversation memory: turns, segments (header · summary · full), narrative, retrieval."""
