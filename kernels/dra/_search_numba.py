"""Numba driver of ``search.first_fit_search``: upstream's depth-first search
for every node, compiled, with an explicit stack (depth = one device of one
request; requests of all claims flattened in order)."""

from __future__ import annotations

import numpy as np
from numba import njit

FIT, NO_FIT, UNDECIDED = 1, 0, 2


@njit(cache=True, nogil=True)
def _fits_constraints(
    c_lo, c_hi, r, row, con_applies, con_code, con_kind, con_count, con_stack
):  # pragma: no cover - compiled
    for c in range(c_lo, c_hi):
        if not con_applies[c, r]:
            continue
        code = con_code[c, row]
        if code < 0:
            return False
        n = con_count[c]
        if con_kind[c] == 0:
            if n > 0 and con_stack[c, 0] != code:
                return False
        else:
            for k in range(n):
                if con_stack[c, k] == code:
                    return False
    return True


@njit(cache=True, nogil=True)
def first_fit_search_numba(
    ptr,
    rows,
    status,
    counts,
    req_claim,
    in_use,
    blocked,
    con_first,
    con_applies,
    con_code,
    con_kind,
    ctr_ptr,
    ctr_slot,
    ctr_amt,
    slot_cap,
    budget,
):  # pragma: no cover - compiled
    n = ptr.shape[0] - 1
    n_req = counts.shape[0]
    total = 0
    for r in range(n_req):
        total += counts[r]
    out = np.empty(n, np.int8)
    picks = np.full((n, max(total, 1)), -1, np.int64)
    req_of = np.empty(max(total, 1), np.int64)
    k = 0
    for r in range(n_req):
        for _ in range(counts[r]):
            req_of[k] = r
            k += 1
    n_con = con_code.shape[0]
    con_count = np.zeros(max(n_con, 1), np.int64)
    con_stack = np.zeros((max(n_con, 1), max(total, 1)), np.int64)
    used = np.zeros(max(slot_cap.shape[0], 1), np.int64)
    taken = np.zeros(rows.shape[0], np.bool_)
    pos = np.zeros(total + 1, np.int64)
    for node in range(n):
        lo, hi = ptr[node], ptr[node + 1]
        # what the full search could meet and this pass does not judge
        code = FIT
        dirty = False
        for r in range(n_req):
            for v in range(lo, hi):
                row = rows[v]
                s = status[r, row]
                if s != 0 and not in_use[row] and (s == 2 or blocked[row]):
                    dirty = True
        # counters held by devices in use (node-local pools)
        for v in range(lo, hi):
            row = rows[v]
            if in_use[row]:
                for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
                    used[ctr_slot[e]] += ctr_amt[e]
        # a counter already over its set's value blocks the whole pool
        # upstream (every counter is compared); leave that to the full search
        for v in range(lo, hi):
            row = rows[v]
            for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
                if used[ctr_slot[e]] > slot_cap[ctr_slot[e]]:
                    code = UNDECIDED
        # a request without enough candidates at all: no solution
        for r in range(n_req):
            if code != FIT:
                break
            avail = 0
            for v in range(lo, hi):
                row = rows[v]
                if not in_use[row] and status[r, row] == 1:
                    avail += 1
            if avail < counts[r]:
                code = NO_FIT if not dirty else UNDECIDED
                break
        if code == FIT:
            steps = 0
            d = 0
            pos[0] = lo
            while True:
                if d == total:
                    break
                r = req_of[d]
                c_lo, c_hi = con_first[req_claim[r]], con_first[req_claim[r] + 1]
                found = False
                p = pos[d]
                while p < hi:
                    steps += 1
                    row = rows[p]
                    if in_use[row] or taken[p]:
                        p += 1
                        continue
                    s = status[r, row]
                    if s == 0:
                        p += 1
                        continue
                    if s == 2 or blocked[row]:
                        code = UNDECIDED
                        break
                    ok = True
                    for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
                        if used[ctr_slot[e]] + ctr_amt[e] > slot_cap[ctr_slot[e]]:
                            ok = False
                    # counters are checked against every counter of the sets
                    # the device touches; untouched counters cannot overflow
                    if ok and not _fits_constraints(
                        c_lo, c_hi, r, row, con_applies, con_code, con_kind, con_count, con_stack
                    ):
                        ok = False
                    if ok:
                        taken[p] = True
                        for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
                            used[ctr_slot[e]] += ctr_amt[e]
                        for c in range(c_lo, c_hi):
                            if con_applies[c, r]:
                                con_stack[c, con_count[c]] = con_code[c, row]
                                con_count[c] += 1
                        pos[d] = p
                        picks[node, d] = row
                        d += 1
                        pos[d] = lo
                        found = True
                        break
                    p += 1
                if code == UNDECIDED:
                    break
                if steps > budget:
                    code = UNDECIDED
                    break
                if not found:
                    if d == 0:
                        # the whole search tree was walked without meeting an
                        # error or an unjudged device: exactly upstream's answer
                        code = NO_FIT
                        break
                    d -= 1
                    p = pos[d]
                    row = rows[p]
                    r = req_of[d]
                    taken[p] = False
                    for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
                        used[ctr_slot[e]] -= ctr_amt[e]
                    for c in range(con_first[req_claim[r]], con_first[req_claim[r] + 1]):
                        if con_applies[c, r]:
                            con_count[c] -= 1
                    picks[node, d] = -1
                    pos[d] = p + 1
            # leave the scratch state clean for the next node
            for v in range(lo, hi):
                if taken[v]:
                    taken[v] = False
            for c in range(n_con):
                con_count[c] = 0
        if code != FIT:
            for dd in range(total):
                picks[node, dd] = -1
        for v in range(lo, hi):
            row = rows[v]
            for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
                used[ctr_slot[e]] = 0
        out[node] = code
    return out, picks
