"""Numba driver of ``feasible.greedy_first_fit``: one node per iteration, the
node's candidate list walked once per request.  Serial on purpose: a pod's
pass over a few thousand candidates takes microseconds, less than waking a
thread pool (``parallel=True`` costs about a millisecond a call)."""

from __future__ import annotations

import numpy as np
from numba import njit

FIT, NO_FIT, UNDECIDED = 1, 0, 2


@njit(cache=True, nogil=True)
def greedy_first_fit_numba(
    ptr, rows, status, counts, in_use, blocked
):  # pragma: no cover - compiled
    n = ptr.shape[0] - 1
    n_req = counts.shape[0]
    out = np.empty(n, np.int8)
    taken = np.zeros(rows.shape[0], np.bool_)  # per candidate entry; a row is once per node
    for node in range(n):
        lo, hi = ptr[node], ptr[node + 1]
        # a request's search can meet an error or a device the greedy pass
        # does not judge: then only the full search knows
        dirty = False
        for r in range(n_req):
            for v in range(lo, hi):
                row = rows[v]
                s = status[r, row]
                if s != 0 and not in_use[row] and (s == 2 or blocked[row]):
                    dirty = True
        code = FIT
        for r in range(n_req):
            need = counts[r]
            got = 0
            if need == 0:
                continue
            for v in range(lo, hi):
                row = rows[v]
                if in_use[row] or taken[v]:
                    continue
                s = status[r, row]
                if s == 0:
                    continue
                if s == 2 or blocked[row]:
                    code = UNDECIDED
                    break
                taken[v] = True
                got += 1
                if got == need:
                    break
            if code == UNDECIDED:
                break
            if got < need:
                avail = 0
                for v in range(lo, hi):
                    row = rows[v]
                    if not in_use[row] and status[r, row] == 1:
                        avail += 1
                code = NO_FIT if (avail < need and not dirty) else UNDECIDED
                break
        out[node] = code
    return out
