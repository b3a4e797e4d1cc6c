"""Helpers shared by the tests: backends (the CUDA gate), builders, golden cases, hypothesis strategies, scheduler invariants."""
