"""DefaultPreemption's evaluator: the victim table of bound pods, candidate
search on every node at once (``kernels.victims``), and the host-side victim
search for filters that live outside the fused kernel.

May import: ``kernels``, ``framework.errors``, ``parsing``, ``records``, ``config``,
``state``, ``runtime``; plugins take part through ``runtime`` protocols.
"""
