"""Per-node rules of ``search.first_fit_search``, plain Python on scalars and
1-D/2-D views: compiled by ``_search_numba`` (``njit``) and ``_search_cuda``
(``cuda.jit(device=True)``).  Scratch arrays come from the caller: ``taken``
per candidate entry and ``used`` per counter slot are shared by all nodes
(entries and node-local counter slots belong to one node each); ``con_count``,
``con_stack`` and ``pos`` are the node's own rows."""

FIT = 1
NO_FIT = 0
UNDECIDED = 2


def fits_constraints(c_lo, c_hi, r, row, con_applies, con_code, con_kind, con_count, con_stack):
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


def search_node(
    node,
    ptr,
    rows,
    status,
    counts,
    req_claim,
    req_of,
    total,
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
    taken,
    used,
    con_count,
    con_stack,
    pos,
    picks,
):
    """One node: FIT (``picks[d]`` = the row chosen at depth d), NO_FIT or
    UNDECIDED; leaves ``taken`` and ``used`` as it found them (zero)."""
    lo = ptr[node]
    hi = ptr[node + 1]
    n_req = counts.shape[0]
    code = FIT
    # per request: candidates at all, and anything the search could meet that
    # this pass does not judge (an error, a blocked device)
    dirty = False
    short = False
    for r in range(n_req):
        avail = 0
        for v in range(lo, hi):
            row = rows[v]
            s = status[r, row]
            if s != 0 and not in_use[row]:
                if s == 2 or blocked[row]:
                    dirty = True
                else:
                    avail += 1
        if avail < counts[r]:
            short = True
    # counters held by devices in use; one already over its value blocks its
    # whole pool upstream (every counter is compared): the full search decides
    for v in range(lo, hi):
        row = rows[v]
        if in_use[row]:
            for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
                used[ctr_slot[e]] += ctr_amt[e]
    for v in range(lo, hi):
        row = rows[v]
        for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
            if used[ctr_slot[e]] > slot_cap[ctr_slot[e]]:
                code = UNDECIDED
    # a request without enough candidates at all: no solution
    if code == FIT and short:
        code = UNDECIDED if dirty else NO_FIT
    for c in range(con_count.shape[0]):
        con_count[c] = 0
    d = 0
    if code == FIT:
        steps = 0
        pos[0] = lo
        while d < total:
            r = req_of[d]
            c_lo = con_first[req_claim[r]]
            c_hi = con_first[req_claim[r] + 1]
            found = False
            p = pos[d]
            while p < hi:
                steps += 1
                row = rows[p]
                if in_use[row] or taken[p] or status[r, row] == 0:
                    p += 1
                    continue
                if status[r, row] == 2 or blocked[row]:
                    code = UNDECIDED
                    break
                ok = True
                for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
                    if used[ctr_slot[e]] + ctr_amt[e] > slot_cap[ctr_slot[e]]:
                        ok = False
                if ok:
                    ok = fits_constraints(
                        c_lo, c_hi, r, row, con_applies, con_code, con_kind, con_count, con_stack
                    )
                if ok:
                    taken[p] = True
                    for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
                        used[ctr_slot[e]] += ctr_amt[e]
                    for c in range(c_lo, c_hi):
                        if con_applies[c, r]:
                            con_stack[c, con_count[c]] = con_code[c, row]
                            con_count[c] += 1
                    pos[d] = p
                    picks[d] = row
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
                    # the whole tree was walked without meeting an error or an
                    # unjudged device: exactly the allocator's "no solution"
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
                picks[d] = -1
                pos[d] = p + 1
    # clean scratch for whoever comes next
    for v in range(lo, hi):
        taken[v] = False
        row = rows[v]
        for e in range(ctr_ptr[row], ctr_ptr[row + 1]):
            used[ctr_slot[e]] = 0
    if code != FIT:
        for k in range(picks.shape[0]):
            picks[k] = -1
    return code
