"""The visit and the pick of ``victims.pick`` as one CUDA block, the
scatter of changed pod-table rows into the resident tables (from a kept
flat buffer of which the first rows are the new ones), and the stage's
allocatable lowered on a few rows (the nominated pods' requests).

``pick_kernel`` (one block of ``PICK_THREADS``, each thread a contiguous
chunk of positions): per-thread counts of non-violating / violating
candidates, a block prefix scan of them, the first stop position (block
min), then each thread's best listed candidate among the visited positions
(``_core.ranks_before``) and its Filter calls, reduced over the block.  It
writes ``out`` [OUT_VICTIMS + C] int64: visited, calls, chosen position
(-1 none), the chosen position's 7 statistics, then its victim slots.
"""

from __future__ import annotations

from numba import cuda, int64

from tensorsched.kernels._deps import CUDA_SIMULATOR

from ._cuda import core

OUT_VISITED = 0
OUT_CALLS = 1
OUT_CHOSEN = 2
OUT_STATS = 3                   # 7 entries
OUT_VICTIMS = 10
# A power of two (tree reductions); the simulator runs a Python thread per
# CUDA thread, so it gets a small block.
PICK_THREADS = 16 if CUDA_SIMULATOR else 512
SCATTER_THREADS = 128

ranks_before = core["ranks_before"]


@cuda.jit
def pick_kernel(stats, victims, m, cap, out):
    t = cuda.threadIdx.x
    n_t = PICK_THREADS
    per = (m + n_t - 1) // n_t
    lo = min(t * per, m)
    hi = min(lo + per, m)
    pre_a = cuda.shared.array(PICK_THREADS, int64)
    pre_b = cuda.shared.array(PICK_THREADS, int64)
    red = cuda.shared.array(PICK_THREADS, int64)
    red_calls = cuda.shared.array(PICK_THREADS, int64)
    a = 0
    b = 0
    for j in range(lo, hi):
        if stats[j, 0] == 0:
            if stats[j, 2] > 0:
                b += 1
            else:
                a += 1
    pre_a[t] = a
    pre_b[t] = b
    cuda.syncthreads()
    off = 1
    while off < n_t:                    # inclusive scan (Hillis-Steele)
        va = 0
        vb = 0
        if t >= off:
            va = pre_a[t - off]
            vb = pre_b[t - off]
        cuda.syncthreads()
        pre_a[t] += va
        pre_b[t] += vb
        cuda.syncthreads()
        off *= 2
    # The first position where the lists are full enough (block min).
    run_a = pre_a[t] - a
    run_b = pre_b[t] - b
    stop = m
    for j in range(lo, hi):
        if stats[j, 0] == 0:
            if stats[j, 2] > 0:
                run_b += 1
            else:
                run_a += 1
            na = min(run_a, cap)
            if na >= 1 and na + min(run_b, cap) >= cap:
                stop = j
                break
    red[t] = stop
    cuda.syncthreads()
    half = n_t // 2
    while half > 0:
        if t < half and red[t + half] < red[t]:
            red[t] = red[t + half]
        cuda.syncthreads()
        half //= 2
    visited = m if red[0] >= m else red[0] + 1
    cuda.syncthreads()
    # Each thread's best listed candidate and calls among visited positions.
    run_a = pre_a[t] - a
    run_b = pre_b[t] - b
    best = -1
    calls = 0
    for j in range(lo, min(hi, visited)):
        calls += stats[j, 3]
        if stats[j, 0] == 0:
            if stats[j, 2] > 0:
                run_b += 1
                keep = run_b <= cap
            else:
                run_a += 1
                keep = run_a <= cap
            if keep and (best < 0 or ranks_before(stats, j, best)):
                best = j
    red[t] = best
    red_calls[t] = calls
    cuda.syncthreads()
    half = n_t // 2
    while half > 0:
        if t < half:
            other = red[t + half]
            if other >= 0 and (red[t] < 0 or ranks_before(stats, other, red[t])):
                red[t] = other
            red_calls[t] += red_calls[t + half]
        cuda.syncthreads()
        half //= 2
    chosen = red[0]
    if t == 0:
        out[OUT_VISITED] = visited
        out[OUT_CALLS] = red_calls[0]
        out[OUT_CHOSEN] = chosen
        for c in range(7):
            out[OUT_STATS + c] = stats[chosen, c] if chosen >= 0 else 0
    if chosen >= 0:
        for s in range(t, victims.shape[1], n_t):
            out[OUT_VICTIMS + s] = victims[chosen, s]


def launch_pick(stats, victims, m: int, cap: int, out) -> None:
    pick_kernel[1, PICK_THREADS](stats, victims, m, cap, out)


@cuda.jit
def scatter_packed_kernel(packed, d_rows, count, prio, start, req, ports, pdb):
    """The first ``d_rows`` rows of ``packed`` (a flat buffer, kept between
    uploads: its rows past ``d_rows`` are stale), laid out as
    ``table_rows.pack_rows`` writes them: the node row, its pod count, then
    the row's prio [C], start [C], req [C*R], ports [C*WP], pdb [C*WB]
    flattened."""
    d = cuda.grid(1)
    if d >= d_rows:
        return
    c = prio.shape[1]
    k = d * (2 + 2 * c + c * (req.shape[2] + ports.shape[2] + pdb.shape[2]))
    i = packed[k]
    count[i] = packed[k + 1]
    k += 2
    for s in range(c):
        prio[i, s] = packed[k]
        k += 1
    for s in range(c):
        start[i, s] = packed[k]
        k += 1
    for s in range(c):
        for r in range(req.shape[2]):
            req[i, s, r] = packed[k]
            k += 1
    for s in range(c):
        for w in range(ports.shape[2]):
            ports[i, s, w] = packed[k]
            k += 1
    for s in range(c):
        for w in range(pdb.shape[2]):
            pdb[i, s, w] = packed[k]
            k += 1


def launch_scatter_packed(packed, d_rows: int, *tables) -> None:
    blocks = max(1, (d_rows + SCATTER_THREADS - 1) // SCATTER_THREADS)
    scatter_packed_kernel[blocks, SCATTER_THREADS](packed, d_rows, *tables)


@cuda.jit
def scatter_flat_rows_kernel(packed, d_rows, table):
    """The first ``d_rows`` rows of ``packed`` (a flat buffer kept between
    uploads: past them it is stale), each the node row then its values of
    ``table`` [N, W] int64."""
    d = cuda.grid(1)
    if d >= d_rows:
        return
    width = table.shape[1]
    k = d * (1 + width)
    i = packed[k]
    for w in range(width):
        table[i, w] = packed[k + 1 + w]


def launch_scatter_flat_rows(packed, d_rows: int, table) -> None:
    blocks = max(1, (d_rows + SCATTER_THREADS - 1) // SCATTER_THREADS)
    scatter_flat_rows_kernel[blocks, SCATTER_THREADS](packed, d_rows, table)


@cuda.jit
def lowered_rows_kernel(out, src, packed):
    """``out`` [N, R] = ``src`` [N, R] (a view of the stage's allocatable),
    less row d's amounts ``packed[d, 1:]`` on node row ``packed[d, 0]``
    (rows ascending, each once): one thread per node row, each finding its
    own row among the few packed ones by bisection."""
    i = cuda.grid(1)
    if i >= out.shape[0]:
        return
    for r in range(out.shape[1]):
        out[i, r] = src[i, r]
    lo = 0
    hi = packed.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if packed[mid, 0] < i:
            lo = mid + 1
        else:
            hi = mid
    if lo < packed.shape[0] and packed[lo, 0] == i:
        for r in range(out.shape[1]):
            out[i, r] -= packed[lo, 1 + r]


def launch_lowered(out, src, packed) -> None:
    blocks = max(1, (out.shape[0] + SCATTER_THREADS - 1) // SCATTER_THREADS)
    lowered_rows_kernel[blocks, SCATTER_THREADS](out, src, packed)
