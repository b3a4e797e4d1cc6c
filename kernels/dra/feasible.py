"""Can each node's devices satisfy a list of plain device requests?

The structured allocator searches depth first: request after request, device
after device in the node's search order, backtracking at a dead end.  For
requests with exact counts and no constraints its first path is the greedy
first fit: each request takes the first free devices it matches.  This
kernel runs that first fit for every node at once:

- ``FIT``: every request got its devices (the search's own first solution);
- ``NO_FIT``: a request lacks candidates even ignoring what earlier requests
  took, and no device the search could meet raises an error: no solution;
- ``UNDECIDED``: the full search must decide (a dead end that backtracking
  might escape, a selector error on the way, or a device the first fit does
  not judge: ``blocked``).

Shapes: ``ptr[N+1]`` int64 (node n's candidate list is
``rows[ptr[n]:ptr[n+1]]``, device rows in search order), ``rows[V]`` int64,
``status[R, D]`` int8 per request and device (0 no match, 1 match, 2 error),
``counts[R]`` int64, ``in_use[D]`` bool, ``blocked[D]`` bool -> ``[N]`` int8.
A row appears at most once per node.
"""

from __future__ import annotations

import numpy as np

FIT, NO_FIT, UNDECIDED = 1, 0, 2


def _seg_cumsum(x: np.ndarray, ptr: np.ndarray, node_of: np.ndarray) -> np.ndarray:
    c = np.cumsum(x, dtype=np.int64)
    before = np.concatenate(([0], c))[ptr[:-1]]
    return c - before[node_of]


def greedy_first_fit_numpy(ptr, rows, status, counts, in_use, blocked) -> np.ndarray:
    """The NumPy twin: requests in turn, all nodes at once."""
    n = len(ptr) - 1
    seg = np.diff(ptr)
    node_of = np.repeat(np.arange(n), seg)
    free_v = ~in_use[rows]
    blocked_v = blocked[rows]
    dirty_v = np.zeros(len(rows), bool)
    for r in range(len(counts)):
        s = status[r, rows]
        dirty_v |= free_v & (s != 0) & ((s == 2) | blocked_v)
    dirty = np.bincount(node_of, weights=dirty_v, minlength=n) > 0
    code = np.full(n, FIT, np.int8)
    open_ = np.ones(n, bool)
    taken_v = np.zeros(len(rows), bool)
    for r in range(len(counts)):
        need = counts[r]
        if need == 0:
            continue
        s = status[r, rows]
        elig = free_v & ~taken_v & (s != 0) & open_[node_of]
        bad = elig & ((s == 2) | blocked_v)
        good = elig & ~bad
        cum = _seg_cumsum(good, ptr, node_of)
        take = good & (cum <= need)
        got = np.bincount(node_of, weights=take, minlength=n)
        # an error or unjudged device met before the need-th good one
        hit_bad = np.bincount(node_of, weights=bad & (cum < need), minlength=n) > 0
        undecided = open_ & hit_bad
        failed = open_ & ~hit_bad & (got < need)
        avail = np.bincount(node_of, weights=free_v & (s == 1), minlength=n)
        code[undecided] = UNDECIDED
        code[failed] = np.where((avail[failed] < need) & ~dirty[failed], NO_FIT, UNDECIDED)
        open_ &= ~(undecided | failed)
        taken_v |= take & open_[node_of]
    return code


def greedy_first_fit(
    ptr, rows, status, counts, in_use, blocked, engine: str = "auto"
) -> np.ndarray:
    """Dispatch: ``engine`` in {"auto", "numba", "numpy"} ("auto" = numba)."""
    args = (
        np.ascontiguousarray(ptr, np.int64),
        np.ascontiguousarray(rows, np.int64),
        np.ascontiguousarray(status, np.int8),
        np.ascontiguousarray(counts, np.int64),
        np.ascontiguousarray(in_use, np.bool_),
        np.ascontiguousarray(blocked, np.bool_),
    )
    if engine == "numpy":
        return greedy_first_fit_numpy(*args)
    if engine in ("auto", "numba"):
        from ._numba import greedy_first_fit_numba

        return greedy_first_fit_numba(*args)
    raise ValueError(f"unknown engine {engine!r} (numpy, numba, auto)")
