"""``search.first_fit_search`` as a Numba CUDA kernel: one thread per node
running ``_search_core.search_node`` as a device function.  Each thread has
its own rows of the constraint and depth scratch; ``taken`` (per candidate
entry) and ``used`` (per node-local counter slot) are shared, their cells
belonging to one node each."""

from __future__ import annotations

import numpy as np
from numba import cuda

from tensorsched.kernels._compile import compile_module

from . import _search_core

THREADS_PER_BLOCK = 128

core = compile_module(_search_core, lambda f: cuda.jit(f, device=True))
search_node = core["search_node"]


@cuda.jit
def search_kernel(
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
    out,
    picks,
    taken,
    used,
    con_count,
    con_stack,
    pos,
):  # pragma: no cover - compiled
    node = cuda.grid(1)
    if node >= out.shape[0]:
        return
    out[node] = search_node(
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
        con_count[node],
        con_stack[node],
        pos[node],
        picks[node],
    )


def first_fit_search_cuda(
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
):
    """Host arrays in, host arrays out (the kernel's inputs are uploaded once
    per call; the caller keeps the status columns resident when it repeats)."""
    n = ptr.shape[0] - 1
    total = int(counts.sum())
    width = max(total, 1)
    n_con = max(con_code.shape[0], 1)
    req_of = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    d = cuda.to_device
    out = cuda.device_array(max(n, 1), np.int8)
    picks = d(np.full((max(n, 1), width), -1, np.int64))
    if n:
        blocks = (n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
        search_kernel[blocks, THREADS_PER_BLOCK](
            d(ptr),
            d(rows),
            d(status),
            d(counts),
            d(req_claim),
            d(req_of),
            total,
            d(in_use),
            d(blocked),
            d(con_first),
            d(con_applies),
            d(con_code),
            d(con_kind),
            d(ctr_ptr),
            d(ctr_slot),
            d(ctr_amt),
            d(slot_cap),
            budget,
            out,
            picks,
            d(np.zeros(max(rows.shape[0], 1), np.bool_)),
            d(np.zeros(max(slot_cap.shape[0], 1), np.int64)),
            d(np.zeros((n, n_con), np.int64)),
            d(np.zeros((n, n_con, width), np.int64)),
            d(np.zeros((n, width + 1), np.int64)),
        )
    return out.copy_to_host()[:n], picks.copy_to_host()[:n]
