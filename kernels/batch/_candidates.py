"""DefaultPreemption's visit of the potential nodes, the part every
batched engine shares: how many candidates it lists (numCandidates) and
where the visit starts (the seeded offset), as the Scheduler's
``framework/preemption/evaluator.py`` (``num_candidates``,
``seeded_offset``) decides them.

Plain Python on scalars, compiled into each engine's namespace below its
preemption steps (``_gpu_preempt`` in ``cpu``, ``cuda``,
``openb_events_cuda``; ``_local_preempt`` in ``local_preempt``,
``local_trace_cuda``), with ``njit`` or ``cuda.jit(device=True)``.
"""

from numba import int64, uint64

OFFSET_SALT = 0x5EED0FF5E7          # evaluator._OFFSET_SALT


def num_candidates(n, pct, least):
    """numCandidates of ``n`` potential nodes: ``pct`` percent of them
    (minCandidateNodesPercentage, rounded down), at least ``least``
    (minCandidateNodesAbsolute), at most ``n``."""
    k = n * pct // 100
    if k < least:
        k = least
    if k > n:
        k = n
    return k


def preempt_offset(seed_mix, attempt, n):
    """``evaluator.seeded_offset`` of ``n`` (> 0) potential nodes, in 0 ..
    n - 1: splitmix64 of (``seed_mix`` (the seed x golden ratio, mod
    2**64) + the attempt number + salt), mod ``n``."""
    z = (uint64(seed_mix) + uint64(attempt) + uint64(OFFSET_SALT)
         + uint64(0x9E3779B97F4A7C15))
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    z = z ^ (z >> uint64(31))
    return int64(z % uint64(n))
