"""Launching one round: the executor (local, fake), CPU pinning, readings parsed from output."""
