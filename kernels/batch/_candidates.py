"""DefaultPreemption's visit of the potential nodes, the part every
batched engine shares: how many candidates it lists (numCandidates) and
where the visit starts (the seeded offset), as the Scheduler's
``framework/preemption/evaluator.py`` (``num_candidates``,
``seeded_offset``) decides them; and where a visited node's bound pods
come from (each row's list of the pods bound there: ``row_push``,
``row_low``).

Plain Python on scalars and arrays, compiled into each engine's namespace below its
preemption steps (``_gpu_preempt`` in ``cpu``, ``cuda``,
``openb_events_cuda``; ``_local_preempt`` in ``local_preempt``,
``local_trace_cuda``), with ``njit`` or ``cuda.jit(device=True)``.
"""

from numba import int64, uint64

OFFSET_SALT = 0x5EED0FF5E7          # evaluator._OFFSET_SALT

# The functions whose uint64 arithmetic wraps mod 2**64 by design (quiet
# about it under the CUDA simulator: ``kernels.mod64.device_jit``).
WRAPS_MOD_2_64 = ("preempt_offset",)


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
    2**64) + the attempt number + salt), mod ``n``.  The sums and
    products wrap mod 2**64 by design."""
    z = (uint64(seed_mix) + uint64(attempt) + uint64(OFFSET_SALT)
         + uint64(0x9E3779B97F4A7C15))
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    z = z ^ (z >> uint64(31))
    return int64(z % uint64(n))


# Each row's list of the pods bound there (``nhead`` [N] the first, -1
# none; ``pnext`` [pods] the next): a pod is pushed when it binds (a
# manifests' bound pod at the start), and the pods gone since are unlinked
# when a walk passes them, so the victim search reads a row's bound pods,
# not every pod of the run.  A pod x below ``pst.shape[0]`` is a queue pod
# (bound while ``pst[x]`` is ``P_BOUND``, gone for good at ``P_GONE``);
# above, a manifests' bound pod of the node-local engines (``gone[x]``: 0
# bound, ``B_GONE`` gone for good; another value, a drain's mark, is
# neither: kept in the list, not read).
P_BOUND = 4             # _queue.BOUND
P_GONE = 5              # _queue.GONE
B_GONE = 1              # _local_preempt_events.B_GONE (``_local_preempt``'s ``gone`` 1)
LOW_NONE = 4611686018427387904      # a row without bound pods' lowest priority


def row_push(i, k, nhead, pnext):
    """Pod ``k`` bound on row ``i``: first in the row's list."""
    pnext[k] = nhead[i]
    nhead[i] = k


def row_low(i, pj, prio, pst, gone, nhead, pnext, slot, off, put):
    """Row ``i``'s bound pods of a priority below ``pj``, from its list
    (the pods gone for good since unlinked on the way): put at
    ``slot[off:]`` where ``put``; returns (how many, the lowest priority
    among the row's bound pods, ``LOW_NONE`` none).  ``gone`` is read for
    the pods above ``pst.shape[0]`` only (the openb engines pass an empty
    view).  Reads and writes row ``i``'s list only (threads on different
    rows run it at once)."""
    n_q = pst.shape[0]
    k = 0
    lowest = LOW_NONE
    prev = -1
    x = nhead[i]
    while x >= 0:
        nx = pnext[x]
        if x < n_q:
            bound = pst[x] == P_BOUND
            left = pst[x] == P_GONE
        else:
            bound = gone[x] == 0
            left = gone[x] == B_GONE
        if left:
            if prev < 0:
                nhead[i] = nx
            else:
                pnext[prev] = nx
        else:
            if bound:
                if prio[x] < lowest:
                    lowest = prio[x]
                if prio[x] < pj:
                    if put:
                        slot[off + k] = x
                    k += 1
            prev = x
        x = nx
    return k, lowest
