"""Upstream's allocation search for every node, compiled.

For claims whose requests have exact counts (no subrequests, no ``All``, no
admin access or capacity requests), ``matchAttribute`` / ``distinctAttribute``
constraints with scalar values, and devices that consume counters of their
node's pools, the depth-first search of the structured allocator fits in
flat arrays: depth d is one device of one request (requests of all claims
flattened in order), each depth scans the node's candidate list from the
start, skipping devices in use or taken at a shallower depth, and a dead end
backtracks to the next candidate one level up.  That is the allocator's own
search, so the first solution found is its solution and an exhausted tree is
its "no solution".

Codes: ``FIT`` (``picks[n, d]`` = device row chosen at depth d), ``NO_FIT``,
``UNDECIDED`` (the search met a selector error or a device this pass does not
judge (``blocked``), a counter already over its value, or ran past
``budget`` steps: the full search decides).

Shapes: ``ptr[N+1]``, ``rows[V]`` as in ``feasible``; ``status[R, D]`` int8;
``counts[R]``, ``req_claim[R]`` int64 (claim index of each request, claims in
order); ``in_use[D]``, ``blocked[D]`` bool; constraints grouped by claim:
``con_first[claims+1]`` (claim k owns constraints ``con_first[k]:con_first[k+1]``),
``con_applies[C, R]`` bool, ``con_code[C, D]`` int64 (the attribute's value id,
-1 absent), ``con_kind[C]`` (0 match, 1 distinct); counters:
``ctr_ptr[D+1]``, ``ctr_slot[E]``, ``ctr_amt[E]`` int64 (what device d consumes
of which counter slot), ``slot_cap[K]`` int64 -> codes ``[N]`` int8 and
``picks[N, max(T, 1)]`` int64.
"""

from __future__ import annotations

FIT, NO_FIT, UNDECIDED = 1, 0, 2


def first_fit_search(
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
    budget: int = 200_000,
    engine: str = "numba",
):
    """``engine``: ``numba`` (CPU) or ``cuda`` (one thread per node).  There is
    no NumPy twin: a depth-first search does not vectorize (the allocator's
    NumPy engine runs its host search per node instead)."""
    # coerced to their dtypes, with the scratch, by ``search_args.prepare``
    args = (ptr, rows, status, counts, req_claim, in_use, blocked, con_first, con_applies,
            con_code, con_kind, ctr_ptr, ctr_slot, ctr_amt, slot_cap, int(budget))
    if engine in ("numba", "auto"):
        from ._search_numba import first_fit_search_numba

        return first_fit_search_numba(*args)
    if engine == "cuda":
        from ._search_cuda import first_fit_search_cuda

        return first_fit_search_cuda(*args)
    raise ValueError(f"unknown engine {engine!r} (numba, cuda)")
