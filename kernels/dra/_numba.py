"""Numba driver of ``feasible.greedy_first_fit``: one node per ``prange``
iteration, the node's candidate list walked once per request."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

FIT, NO_FIT, UNDECIDED = 1, 0, 2


@njit(cache=True, nogil=True, parallel=True)
def greedy_first_fit_numba(ptr, rows, status, counts, in_use, blocked):  # pragma: no cover - compiled
    n = ptr.shape[0] - 1
    n_req = counts.shape[0]
    out = np.empty(n, np.int8)
    for node in prange(n):
        lo, hi = ptr[node], ptr[node + 1]
        # a request's search can meet an error or a device the greedy pass
        # does not judge: then only the full search knows
        dirty = False
        for r in range(n_req):
            for v in range(lo, hi):
                row = rows[v]
                s = status[r, row]
                if not in_use[row] and s != 0 and (s == 2 or blocked[row]):
                    dirty = True
        taken = np.zeros(hi - lo, np.bool_)
        code = FIT
        for r in range(n_req):
            need = counts[r]
            got = 0
            if need == 0:
                continue
            for v in range(lo, hi):
                row = rows[v]
                if in_use[row] or taken[v - lo]:
                    continue
                s = status[r, row]
                if s == 0:
                    continue
                if s == 2 or blocked[row]:
                    code = UNDECIDED
                    break
                taken[v - lo] = True
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
