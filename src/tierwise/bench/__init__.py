"""Benchmarks that measure tierwise against peers in the same process."""
