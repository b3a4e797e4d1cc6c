"""A one-at-a-time cycle on the device in one launch: one block brings the
device row cache (reasons [N], raw scores [N, S]) up to date with the rows
written since its last cycle and writes the row the cycle takes, its
position, rows processed and feasible found (4 numbers), so a placement
cycle costs one copy of the written rows up (``staged_rows``; none when
nothing was written), this launch and one copy of O(1) numbers back; the
row cache never leaves the device.

0. the staged rows, a thread each (``_cuda.write_staged_row``): their
   columns written into the node packs, their reasons and raw scores
   recomputed, and the per-domain rules' moved sums written into the
   device's copy (``domain_rules_cycle.DeviceRuleTable.stage``); a
   barrier, then the pick reads the cache.

A row is feasible when its cached reasons are 0 and no per-domain rule
fails it (``_cycle_core.row_feasible``; no rules for a cycle without a
host filter): a host filter that has a per-domain form (PodTopologySpread's
DoNotSchedule) is answered here, not over every node on the host.

For the pick the block's threads own contiguous chunks of the evaluation
positions (thread order = evaluation order), and run ``_cycle_core``'s
pieces (compiled with ``cuda.jit(device=True)`` on top of the fused core's
device rules: the same source as the host twin ``fused.cycle``):

1. each thread counts its feasible rows; a prefix count over the threads
   (warp shuffles, then the warps' sums) says which thread holds the
   ``num_to_find``-th feasible row (percentageOfNodesToScore), and that
   thread alone finds where the scan stops;
2. the normalization extremes over exactly the scanned feasible rows: one
   block reduction for every slot together (a min-max slot's minimum
   negated, so it reduces as a maximum: a warp maximum by shuffles, then
   a shared atomic per warp);
3. each scanned feasible row's total and tie key
   (``tie_key(total, tie_rank(seed, row, pods))``), the block's largest
   key (as the extremes) and the lowest row holding it (a shared atomic
   minimum among the few threads at that key): the tie
   rule's pick, which the numba backend's ``finalize_rows`` followed by
   ``ties.pick_tied`` gives.

Four to six barriers a launch.  Positions and counts are int32 (fewer than
2**31 rows: the launcher checks), scores, totals and keys int64.  Import
this module only after ``_deps.cuda_unavailable_reason()`` said yes.
"""

from __future__ import annotations

import inspect

import numpy as np
from numba import cuda, int32, int64

from tensorsched.kernels import domain_rules_cycle as DRC
from tensorsched.kernels._compile import compile_module
from tensorsched.kernels._deps import CUDA_SIMULATOR

from . import _cuda_block as CB
from . import _cycle_core
from ._cuda import core as _fused_core
from ._cuda import write_staged_row

core = compile_module(_cycle_core, lambda f: cuda.jit(f, device=True), _fused_core)
chunk_feasible = core["chunk_feasible"]
chunk_stop = core["chunk_stop"]
start_extremes = core["start_extremes"]
chunk_extremes = core["chunk_extremes"]
extremes_finish = core["extremes_finish"]
chunk_best = core["chunk_best"]

# The most threads the block uses: 1,024 on a GPU (10,000 rows: ten a
# thread); a block reduction's second step has one lane per warp, so at
# most WARP warps (under the simulator's 4-thread warps, 16 threads).
CYCLE_THREADS = min(1024, CB.WARP * CB.WARP)
MAX_CYCLE_SLOTS = 16        # score slots the block keeps extremes for
MAX_ROWS = (1 << 31) - 1    # positions are int32
_MAX_EXT = 2 * MAX_CYCLE_SLOTS
_MAX_WARPS = CB.MAX_WARPS   # module constants: the shared arrays' sizes are literals
_WARP = CB.WARP
_BIG = 1 << 62
_WARP_FIRST = not CUDA_SIMULATOR    # see _block_max_into
_MINMAX = 3                  # fused._core.NORM_MINMAX
# cells: [0, 2 S) the extremes, then the top key, the lowest row at it,
# where the scan stops
_TOP_KEY = _MAX_EXT
_TOP_ROW = _MAX_EXT + 1
_STOP = _MAX_EXT + 2
_CELLS = _MAX_EXT + 3
# A block of CYCLE_THREADS must fit one multiprocessor's registers (64 a
# thread at 1,024) with the fused rules inlined for the staged rows: the
# bound holds the compiler to it (the simulator, and a numba-cuda without
# the option, take none).
_BOUNDED = not CUDA_SIMULATOR and "launch_bounds" in inspect.signature(cuda.jit).parameters
_KERNEL_OPTIONS = {"launch_bounds": CYCLE_THREADS} if _BOUNDED else {}


@cuda.jit(device=True)
def _block_max_into(v, cells, k):
    """``v``'s block maximum folded into shared ``cells[k]`` (at most every
    ``v`` before; the caller's barrier makes it visible): on a device the
    warp's maximum by shuffles, then one atomic per warp.  Under the
    simulator every thread's atomic (each shuffle stand-in costs a block
    barrier there; a maximum is the same either way, and the shuffles are
    ``_cuda_block``'s, tested on their own)."""
    if _WARP_FIRST:
        v = CB.warp_max(int64(v))
        if cuda.threadIdx.x % _WARP == 0:
            cuda.atomic.max(cells, k, v)
    else:
        cuda.atomic.max(cells, k, int64(v))


@cuda.jit(device=True)
def _prefix_count(c, wcount, n_warps):
    """(the sum of ``c`` over the threads before this one, the block's sum):
    an inclusive sum inside the warp by shuffles, the warps' sums through
    shared ``wcount`` [MAX_WARPS] int32 (one barrier), each thread adding
    the at most 32 warps' sums itself."""
    warp = cuda.threadIdx.x // _WARP
    inc = CB.warp_inclusive_sum32(c)
    if cuda.threadIdx.x % _WARP == _WARP - 1:
        wcount[warp] = inc
    cuda.syncthreads()
    before = int32(inc - c)
    total = int32(0)
    for w in range(n_warps):
        x = wcount[w]
        if w < warp:
            before += x
        total += x
    return before, total


@cuda.jit(**_KERNEL_OPTIONS)
def cycle_pick_kernel(staged, k, node_i64, node_flags, label_vals, qbuf, rows, reasons_by_row,
                      raw_by_row, sparams, start, num_to_find, seed_mix, pods_at, out, n_rules,
                      r_domp1, r_sums, r_params, rbuf, n_upd):
    """The ``k`` staged rows (``staged_rows``; k may be 0) written into the
    packs (node_i64, node_flags, label_vals) and recomputed into the row
    cache under the query ``qbuf``, and the ``n_upd`` moved domain sums of
    ``rbuf`` written into ``r_sums``; then out [4] = (the picked row or -1,
    rows processed, feasible found, the picked row's evaluation position
    or -1) of the cycle over ``rows`` [M] from position ``start``;
    ``sparams`` [3, S] (active, mode, weight); ``node_i64[row, pods_at]``
    the pods on a row; ``n_rules`` per-domain rules (``r_domp1`` [R, N],
    ``r_sums`` [R, D], ``r_params`` [R, N_PARAMS]; ``rbuf``: their
    thresholds [R], then ``n_upd`` flat indices r x D + d and as many sums,
    ``domain_rules_cycle.DeviceRuleTable``)."""
    tid = int32(cuda.threadIdx.x)
    nt = int32(cuda.blockDim.x)
    # 0. the rows written since and the domain sums moved since (uniform
    # barrier: every thread reaches it)
    for j in range(tid, k, nt):
        write_staged_row(j, k, staged, node_i64, node_flags, label_vals, qbuf, reasons_by_row,
                         raw_by_row)
    d_width = r_sums.shape[1]
    for j in range(tid, n_upd, nt):
        at = rbuf[n_rules + j]
        r = at // d_width
        r_sums[r, at - r * d_width] = rbuf[n_rules + n_upd + j]
    cuda.syncthreads()
    pods_src = node_i64
    n_warps = int32(nt // _WARP)
    m = int32(rows.shape[0])
    n_slots = raw_by_row.shape[1]
    wcount = cuda.shared.array(_MAX_WARPS, int32)
    # the block's extremes [2 S], then its top key and the lowest row at it
    cells = cuda.shared.array(_CELLS, int64)
    ext = cuda.local.array(_MAX_EXT, int64)
    best = cuda.local.array(3, int64)
    if tid == 0:
        for k in range(_MAX_EXT + 2):
            cells[k] = -_BIG
        cells[_TOP_ROW] = _BIG
    chunk = int32((m + nt - 1) // nt)
    lo = int32(min(m, tid * chunk))
    hi = int32(min(m, lo + chunk))
    # 1. feasible counts; where the scan stops (the scan's barriers also
    # publish thread 0's cells)
    c = chunk_feasible(rows, start, lo, hi, reasons_by_row, n_rules, r_domp1, r_sums, r_params,
                       rbuf)
    before, found = _prefix_count(c, wcount, n_warps)
    processed = int64(m)
    got = int64(found)
    if num_to_find > 0 and found >= num_to_find:     # uniform
        if before < num_to_find and before + c >= num_to_find:
            cells[_STOP] = chunk_stop(rows, start, lo, hi, reasons_by_row, num_to_find - before,
                                      n_rules, r_domp1, r_sums, r_params, rbuf)
        cuda.syncthreads()
        processed = cells[_STOP]
        got = int64(num_to_find)
    stop = min(int64(hi), processed)
    # 2. normalization extremes over the scanned feasible rows, only of the
    # slots that have them (uniform loop)
    start_extremes(sparams, n_slots, ext)
    chunk_extremes(rows, start, lo, stop, reasons_by_row, raw_by_row, sparams, ext, n_rules,
                   r_domp1, r_sums, r_params, rbuf)
    reduced = False
    for s in range(n_slots):
        if sparams[0, s] != 0 and sparams[1, s] != 0:
            _block_max_into(ext[s], cells, s)
            reduced = True
            if sparams[1, s] == _MINMAX:
                _block_max_into(ext[n_slots + s], cells, n_slots + s)
    if reduced:
        cuda.syncthreads()
        for s in range(n_slots):
            if sparams[0, s] != 0 and sparams[1, s] != 0:
                ext[s] = cells[s]
                if sparams[1, s] == _MINMAX:
                    ext[n_slots + s] = cells[n_slots + s]
    extremes_finish(sparams, n_slots, ext)
    # 3. totals and tie keys: the largest key, then the lowest row at it
    chunk_best(rows, start, lo, stop, reasons_by_row, raw_by_row, sparams, ext, seed_mix,
               pods_src, pods_at, best, n_rules, r_domp1, r_sums, r_params, rbuf)
    _block_max_into(best[0], cells, _TOP_KEY)
    cuda.syncthreads()
    top = cells[_TOP_KEY]
    mine = top >= 0 and best[0] == top
    if mine:
        cuda.atomic.min(cells, _TOP_ROW, best[1])
    cuda.syncthreads()
    if mine and best[1] == cells[_TOP_ROW]:
        out[0] = best[1]
        out[3] = best[2]
    if tid == 0:
        if top < 0:
            out[0] = -1
            out[3] = -1
        out[1] = processed
        out[2] = got


def cycle_threads(n_rows: int) -> int:
    """Threads of the cycle block: whole warps, at most CYCLE_THREADS, no
    more than the evaluated rows need."""
    threads = CB.WARP
    while threads < min(n_rows, CYCLE_THREADS):
        threads *= 2
    return threads


_NO_RULES: list = []


def no_rules():
    """(0, domp1, sums, params, rbuf): empty rules on the device (one row
    of zeros each, made once)."""
    if not _NO_RULES:
        h = DRC.no_rules()
        _NO_RULES.append((0, cuda.to_device(h.domp1), cuda.to_device(h.sums),
                          cuda.to_device(h.params), cuda.to_device(h.thr)))
    return _NO_RULES[0]


def launch_cycle_pick(n_rows: int, staged, k: int, packs, qbuf, rows, reasons_by_row,
                      raw_by_row, sparams, start: int, num_to_find: int, seed_mix: int,
                      pods_at: int, out, rules=None) -> None:
    """Run ``cycle_pick_kernel`` as one block of ``cycle_threads(n_rows)``
    (``n_rows`` = rows.shape[0] >= 1, at most MAX_ROWS); ``packs``: the
    device (node_i64, node_flags, label_vals); ``staged`` holds ``k`` rows;
    ``rules``: (a ``domain_rules_cycle.DeviceRuleTable``, its staged
    buffer, the moved sums in it), None for none."""
    if not 0 < n_rows <= MAX_ROWS:
        raise ValueError(f"a device cycle takes 1 to {MAX_ROWS} rows, got {n_rows}")
    if rules is None:
        n_rules, domp1, sums, params, rbuf = no_rules()
        n_upd = 0
    else:
        table, rbuf, n_upd = rules
        n_rules, domp1, sums, params = table.n_rules, table.domp1, table.sums, table.params
    cycle_pick_kernel[1, cycle_threads(n_rows)](
        staged, np.int64(k), *packs, qbuf, rows, reasons_by_row, raw_by_row, sparams,
        np.int64(start), np.int64(num_to_find), np.uint64(seed_mix), np.int64(pods_at), out,
        np.int64(n_rules), domp1, sums, params, rbuf, np.int64(n_upd))
