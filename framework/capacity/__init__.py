"""Capacity questions answered by the real scheduler: how many more pods
fit, how many nodes to add, which nodes can go.

May import: ``scheduler`` and everything below it in ``framework``.
"""
