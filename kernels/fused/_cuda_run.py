"""Compiled runs on the device: one block places a whole run of alike pods in
one launch, each pod exactly as its own cycle would (``_numba``'s
``place_run_scan`` semantics, which with every node scored are also
``place_run``'s).

The block's threads split the evaluated positions into contiguous chunks
(thread order = evaluation order).  Per pod:

1. each thread marks its positions' feasibility once (built-in reasons from
   the device row cache, then the per-domain rules of
   ``kernels.domain_rules``) and counts them; below every node
   (percentageOfNodesToScore) a block scan of the counts says which thread
   holds the ``num_to_find``-th feasible row, and that thread alone finds
   where the scan stops (every node scored: no scan);
2. the normalization maxima over the scanned feasible rows: one block
   reduction for every slot together (none without a normalized slot);
3. with the pod-to-pod scores (ScheduleAnyway spread, pod affinity weights)
   their raw values by position and the block's minima and maxima (one
   reduction for both scores' four extremes; each
   spread constraint's distinct domains counted by atomics: the first
   thread to stamp a domain for this pod counts it);
4. each row's total: the built-in slots' weighted sum comes from a per-row
   cache (``base_by_row``) that stays valid while the maxima stay put, so
   only the row the last pod was placed on is recomputed, unless a maximum
   moved; each scanned row's tie key (``_core.tie_key`` of its total and
   ``tie_rank`` with the pods it holds now), the block's largest key (block
   max) and the lowest row holding it (block min): the tie rule's pick.
5. thread 0 accounts the pod on that row, recomputes that row's reasons and
   raw scores (``stage_reasons`` / ``stage_raw_scores``) and counts the pod
   in the rules and the pod-to-pod domain sums.

Reductions are warp shuffles (``_cuda_block``): no thread loops over the
other threads' partials.  Arithmetic is 32-bit where bounds prove it fits:
positions, chunk bounds and feasible counts are int32 (a state holds
fewer than 2**31 node rows; the launcher checks), and the per-row divisions
of the normalizations are 32-bit unsigned when the operands fit (see
``_scaled``); scores, totals, tie keys and the tie rank's hash stay 64-bit.
Import this module only after ``_deps.cuda_unavailable_reason()`` said yes.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numba import cuda, int32, int64, uint32

from tensorsched.kernels._compile import compile_source

from . import _cuda_block as CB
from . import stage_args as SA
from ._cuda import core, stage_raw_scores, stage_reasons, write_staged_row

# The tie rank's arithmetic wraps mod 2**64 by design; under the CUDA
# simulator it runs as NumPy scalar operations (on the simulator's threads,
# so ``np.errstate`` cannot reach it), which warn on every wrap.
for _module in (__name__, f"{__package__}._core"):     # the tie rank is _core's
    warnings.filterwarnings("ignore", r".*overflow encountered in scalar", RuntimeWarning,
                            module=_module)

# The most threads a run block uses: 256 on a GPU; a block reduction's
# second step has one lane per warp, so at most WARP warps (under the
# simulator's 4-thread warps, 16 threads).
RUN_THREADS = min(256, CB.WARP * CB.WARP)
MAX_RUN_SLOTS = 16          # score slots the block keeps maxima for
MAX_ROWS = (1 << 31) - 1    # positions are int32

# run parameters: rp[0:RP_HEADER] scalars, then the pod's vectors
RP_COUNT, RP_START, RP_TO_FIND, RP_SLOTS, RP_RESOURCES, RP_HEADER = range(6)

spread_raw = core["spread_raw"]
affinity_raw = core["affinity_raw"]
count_placed = core["count_placed"]
rule_fails_row = core["rule_fails_row"]
rule_thresholds = core["rule_thresholds"]
rule_count = core["rule_count"]
rules_group_placed = core["rules_group_placed"]
tie_rank = core["tie_rank"]
tie_key = core["tie_key"]
RES_PODS = core["RES_PODS"]

_BIG = 1 << 62
_MAX_WARPS = CB.MAX_WARPS     # module constants: the shared arrays' sizes are literals
_WARP = CB.WARP
_UNSET = -(1 << 62)         # base_by_row: not computed under the current maxima
# MAX_NODE_SCORE * v < 2**32 for 0 <= v <= _FITS32 (v is at most the maximum
# it is divided by, so the quotient fits too)
_FITS32 = (1 << 32) // 100 - 1


def pack_run_params(count, start, num_to_find, request, nonzero, active, norm,
                    weights) -> np.ndarray:
    """The run's scalars and the pod's vectors as one int64 array:
    [count, start, num_to_find, S, R], request [R], nonzero [2],
    active [S] (0/1), norm [S], weights [S]."""
    s, r = active.shape[0], request.shape[0]
    head = np.array([count, start, num_to_find, s, r], np.int64)
    return np.concatenate((head, request.astype(np.int64), nonzero.astype(np.int64),
                           active.astype(np.int64), norm.astype(np.int64),
                           weights.astype(np.int64)))


def pack_rules(rules) -> tuple:
    """``domain_rules.RuleArrays`` as the kernel takes them: (domp1 and
    count_dom [2, R, N], sums and present [2, R, D] int64, params [R, P],
    thresholds and least counts [2, R] (scratch))."""
    r = rules.params.shape[0]
    return (np.ascontiguousarray(np.stack((rules.domp1, rules.count_dom)), np.int64),
            np.ascontiguousarray(np.stack((rules.sums, rules.present.astype(np.int64)))),
            np.ascontiguousarray(rules.params, np.int64), np.zeros((2, r), np.int64))


def pack_spread(spread) -> tuple:
    """``domain_rules.SpreadArrays`` (at least one row each) as the kernel
    takes them: domp1, count_dom, size_dom [3, C, N], then sums, params,
    has_all (0/1), meta, marks; the kernel's sizes [C] scratch.  (Its
    weights [C] float64 scratch is the launch's own argument.)"""
    c = max(spread.params.shape[0], 1)
    dom = np.stack([_one_row(a) for a in (spread.domp1, spread.count_dom, spread.size_dom)])
    return (np.ascontiguousarray(dom, np.int64),
            *(_one_row(a) for a in (spread.sums, spread.params, spread.has_all, spread.meta,
                                    spread.marks)),
            np.zeros(c, np.int64))


# The run's arrays in the one int64 buffer the kernel takes (``pack_run``),
# in this order, with their dimensions: the run parameters, the evaluated
# rows, the rules (``pack_rules``), spread (``pack_spread``) and affinity
# (``pack_affinity``) arrays.
RUN_PARTS = (("rp", 1), ("rows", 1),
             ("r_dom", 3), ("r_counts", 3), ("r_params", 2), ("r_state", 2),
             ("sp_dom", 3), ("sp_sums", 2), ("sp_params", 2), ("sp_has_all", 1),
             ("sp_meta", 1), ("sp_marks", 2), ("sp_sizes", 1),
             ("af_dom", 3), ("af_sums", 2), ("af_params", 2), ("af_meta", 1))
_PART_HEAD = 4                  # a part's header: offset, then up to 3 dimensions


def pack_run(rp, rows, rules, spread, affinity) -> np.ndarray:
    """One int64 buffer with every array of a run (``RUN_PARTS`` order):
    header [4 x parts] (each part's offset into the buffer and its
    dimensions, 1 for the absent ones), then the parts, C order, bools as
    0/1.  One copy to the device, one launch argument (numba-cuda pays
    microseconds per array argument at each launch)."""
    parts = (rp, rows, *pack_rules(rules), *pack_spread(spread), *pack_affinity(affinity))
    head = np.ones((len(RUN_PARTS), _PART_HEAD), np.int64)
    at = head.size
    for k, ((name, dims), a) in enumerate(zip(RUN_PARTS, parts)):
        if a.ndim != dims:
            raise ValueError(f"run part {name}: {a.ndim} dimensions, {dims} declared")
        head[k, 0] = at
        head[k, 1:1 + dims] = a.shape
        at += a.size
    out = np.empty(at, np.int64)
    out[:head.size] = head.reshape(-1)
    for k, a in enumerate(parts):
        out[head[k, 0]:head[k, 0] + a.size] = a.reshape(-1)
    return out


def unpack_run(buf: np.ndarray) -> tuple:
    """The parts of a ``pack_run`` buffer as arrays (tests)."""
    out = []
    for k, (_name, dims) in enumerate(RUN_PARTS):
        at, *shape = buf[_PART_HEAD * k:_PART_HEAD * (k + 1)]
        shape = tuple(int(d) for d in shape[:dims])
        out.append(buf[at:at + int(np.prod(shape))].reshape(shape))
    return tuple(out)


def pack_affinity(affinity) -> tuple:
    """``domain_rules.AffinityArrays`` as the kernel takes them: domp1 and
    count_dom [2, C, N], sums, params, meta."""
    dom = np.stack([_one_row(a) for a in (affinity.domp1, affinity.count_dom)])
    return (np.ascontiguousarray(dom, np.int64),
            *(_one_row(a) for a in (affinity.sums, affinity.params, affinity.meta)))


def _one_row(a: np.ndarray) -> np.ndarray:
    """``a`` with one zero row when it has none (no empty device arrays)."""
    a = np.ascontiguousarray(a)
    if a.shape[0] == 0:
        return np.zeros((1,) + a.shape[1:], a.dtype)
    return a


@cuda.jit(device=True)
def _scaled(v, hi):
    """MAX_NODE_SCORE * v // hi (v, hi >= 0 when called), as a 32-bit
    unsigned division when both fit (the normalized built-in slots: taint
    counts, node-affinity weight sums, spread counts by a log weight, all far
    below 42,949,672), else 64-bit."""
    if v >= 0 and hi <= _FITS32 and v <= _FITS32:
        return int64(uint32(uint32(100) * uint32(v)) // uint32(hi))
    return (100 * v) // hi


@cuda.jit(device=True)
def _normalized(v, mode, hi):
    """``_core.normalized`` with ``_scaled``'s division."""
    if mode == 0:
        return v
    if hi == 0:
        return 100 if mode == 2 else 0
    q = _scaled(v, hi) if v >= 0 else (100 * v) // hi
    return 100 - q if mode == 2 else q


@cuda.jit(device=True)
def _base_total(i, raw_by_row, active, norm, weights, hi, skip_slot):
    """``_core.base_total`` (the weighted normalized slots but ``skip_slot``)."""
    t = int64(0)
    for s in range(raw_by_row.shape[1]):
        if active[s] != 0 and s != skip_slot:
            t += _normalized(raw_by_row[i, s], norm[s], hi[s]) * weights[s]
    return t


@cuda.jit(device=True)
def _dense_total(base, has_all, sp_raw, sp_lo, sp_hi, sp_on, sp_weight, af_raw, af_lo, af_span,
                 af_weight):
    """``_core.dense_total`` with the spread's division by ``_scaled``
    (sp_hi + sp_lo - sp_raw lies in [sp_lo, sp_hi] for a scanned row)."""
    t = base
    if af_span > 0:
        t += int64(math.trunc(100.0 * (float(af_raw - af_lo) / float(af_span)))) * af_weight
    if sp_on and has_all:
        if sp_hi == 0:
            t += 100 * sp_weight
        else:
            t += _scaled(sp_hi + sp_lo - sp_raw, sp_hi) * sp_weight
    return t


@cuda.jit(device=True)
def _feasible(row, reasons_by_row, r_domp1, r_sums, r_params, r_thr):
    """The row passes the built-in filters and every per-domain rule."""
    if reasons_by_row[row] != 0:
        return False
    for r in range(r_params.shape[0]):
        if rule_fails_row(r, row, r_domp1, r_sums, r_params, r_thr):
            return False
    return True


@cuda.jit(device=True)
def _rules_count(row, r_count_dom, r_sums, r_present, r_params, r_thr, r_at_min):
    """A pod placed on ``row``: counted in every rule that counts it."""
    for r in range(r_params.shape[0]):
        if r_params[r, 6] == 0:
            continue
        d = r_count_dom[r, row]
        if d < 0:
            continue
        if r_params[r, 8] != 0:
            rules_group_placed(r_params)
        rule_count(r, d, r_sums, r_present, r_params, r_thr, r_at_min)


# where ``requested`` and ``nonzero_requested`` start in node_i64: their
# spans are in the query buffer's header (``stage_args.pack_query``)
_REQUESTED_AT = 2 * SA.NODE_NAMES.index("requested")
_NONZERO_AT = 2 * SA.NODE_NAMES.index("nonzero_requested")


@cuda.jit(device=True)
def _account(node_i64, qbuf, row, pod_request, pod_nonzero):
    """The pod's requests added to its row's requested columns."""
    at = qbuf[_REQUESTED_AT]
    for r in range(pod_request.shape[0]):
        node_i64[row, at + r] += pod_request[r]
    at = qbuf[_NONZERO_AT]
    node_i64[row, at] += pod_nonzero[0]
    node_i64[row, at + 1] += pod_nonzero[1]


@cuda.jit(device=True)
def _place_run_body(seed_mix, node_i64, node_flags, label_vals, qbuf, reasons_by_row,
                    raw_by_row, out, scratch, sp_weights, rp, rows, r_dom, r_counts, r_params,
                    r_state, sp_dom, sp_sums, sp_params, sp_has_all, sp_meta, sp_marks,
                    sp_sizes, af_dom, af_sums, af_params, af_meta):
    """Place up to rp[RP_COUNT] pods; out[0] = pods placed, out[1] = the next
    start position, out[2 + i] = pod i's row.  ``scratch`` [3 M + N] int64:
    feasibility by position, raw spread and affinity by position, the
    per-row base totals; ``sp_weights`` [C] float64 scratch.  The rules,
    spread and affinity arrays come stacked (``pack_rules`` etc.):
    same-shaped arrays along a first axis.  (The kernel,
    ``place_run_kernel``, unpacks them from one buffer.)"""
    tid = int32(cuda.threadIdx.x)
    nt = int32(cuda.blockDim.x)
    n_warps = int32(nt // _WARP)
    m = int32(rows.shape[0])
    n_rows = raw_by_row.shape[0]
    n_slots = int32(raw_by_row.shape[1])
    count = rp[RP_COUNT]
    num_to_find = rp[RP_TO_FIND]
    n_res = rp[RP_RESOURCES]
    o = RP_HEADER
    pod_request = rp[o:o + n_res]
    pod_nonzero = rp[o + n_res:o + n_res + 2]
    o += n_res + 2
    active = rp[o:o + n_slots]
    norm = rp[o + n_slots:o + 2 * n_slots]
    weights = rp[o + 2 * n_slots:o + 3 * n_slots]
    feas = scratch[0:m]
    sp_raw = scratch[m:2 * m]
    af_raw = scratch[2 * m:3 * m]
    base_by_row = scratch[3 * m:3 * m + n_rows]
    pods_at = qbuf[_REQUESTED_AT] + RES_PODS    # the pods column in node_i64
    r_domp1 = r_dom[0]
    r_count_dom = r_dom[1]
    r_sums = r_counts[0]
    r_present = r_counts[1]
    r_thr = r_state[0]
    r_at_min = r_state[1]
    sp_domp1 = sp_dom[0]
    sp_count_dom = sp_dom[1]
    sp_size_dom = sp_dom[2]
    af_domp1 = af_dom[0]
    af_count_dom = af_dom[1]

    wbuf = cuda.shared.array(_MAX_WARPS, int64)
    wcount = cuda.shared.array(_MAX_WARPS, int32)
    wslots = cuda.shared.array((MAX_RUN_SLOTS, _MAX_WARPS), int64)
    run = cuda.shared.array(3, int64)       # start, placed, stop position
    hi = cuda.local.array(MAX_RUN_SLOTS, int64)
    hi_norm = cuda.local.array(MAX_RUN_SLOTS, int64)
    hi_prev = cuda.local.array(MAX_RUN_SLOTS, int64)
    norm_slots = cuda.local.array(MAX_RUN_SLOTS, int32)
    ext4 = cuda.local.array(4, int64)       # the pod-to-pod scores' extremes

    n_terms = sp_meta[2]
    n_af = af_meta[1]
    dense = n_terms > 0 or n_af > 0
    sp_slot = sp_meta[0]
    require_all = sp_meta[1] != 0
    sp_on = n_terms > 0 and active[sp_slot] != 0
    sp_w = weights[sp_slot] if sp_on else 0
    skip_slot = sp_slot if n_terms > 0 else -1
    chunk = int32((m + nt - 1) // nt)
    lo = int32(min(m, tid * chunk))
    hi_pos = int32(min(m, lo + chunk))
    n_norm = 0                              # the active normalized slots: their maxima
    for s in range(n_slots):
        hi_prev[s] = -1                     # no maxima yet: every base total is computed
        hi[s] = 0                           # (the other slots' stay 0: unused)
        if active[s] != 0 and norm[s] != 0:
            norm_slots[n_norm] = s
            n_norm += 1
    for r in range(tid, n_rows, nt):
        base_by_row[r] = _UNSET
    if tid == 0:
        run[0] = rp[RP_START]
        run[1] = 0
        rule_thresholds(r_sums, r_present, r_params, r_thr, r_at_min)
    cuda.syncthreads()
    for i in range(count):
        start = int32(run[0])
        # 1. feasibility, once per position; where the scan stops
        c = int32(0)
        for j in range(lo, hi_pos):
            jj = start + j
            if jj >= m:
                jj -= m
            f = _feasible(rows[jj], reasons_by_row, r_domp1, r_sums, r_params, r_thr)
            feas[j] = 1 if f else 0
            if f:
                c += 1
        processed = m
        if 0 < num_to_find < m:             # uniform; else every position is scanned
            before, found = CB.block_scan32(c, wcount, n_warps)
            if found >= num_to_find:
                if before < num_to_find and before + c >= num_to_find:
                    need = num_to_find - before
                    for j in range(lo, hi_pos):
                        if feas[j] != 0:
                            need -= 1
                            if need == 0:
                                run[2] = j + 1
                                break
                cuda.syncthreads()
                processed = int32(run[2])
        stop = int32(min(hi_pos, processed))
        # 2. normalization maxima over the scanned feasible rows
        for k in range(n_norm):
            hi_norm[k] = 0
        for j in range(lo, stop):
            if feas[j] == 0:
                continue
            jj = start + j
            if jj >= m:
                jj -= m
            row = rows[jj]
            for k in range(n_norm):
                v = raw_by_row[row, norm_slots[k]]
                if v > hi_norm[k]:
                    hi_norm[k] = v
        if n_norm > 0:                      # uniform
            CB.block_max_slots(hi_norm, n_norm, wslots, n_warps)
        for k in range(n_norm):
            hi[norm_slots[k]] = hi_norm[k]
        moved = False                       # uniform: every thread holds the same maxima
        for s in range(n_slots):
            if hi[s] != hi_prev[s]:
                moved = True
            hi_prev[s] = hi[s]
        # 3. the pod-to-pod scores over the scanned rows
        if dense:
            if tid == 0:
                for cc in range(n_terms):
                    sp_sizes[cc] = 0
            cuda.syncthreads()
            counted = int32(0)
            for j in range(lo, stop if n_terms > 0 else lo):
                jj = start + j
                if jj >= m:
                    jj -= m
                row = rows[jj]
                if feas[j] == 0 or not sp_has_all[row]:
                    continue
                counted += 1
                for cc in range(n_terms):
                    if sp_params[cc, 0] == 0:
                        # the first thread to mark a domain for this pod counts it
                        if cuda.atomic.max(sp_marks, (cc, sp_size_dom[cc, row]), i + 1) < i + 1:
                            cuda.atomic.add(sp_sizes, cc, 1)
            _b, all_counted = CB.block_scan32(counted, wcount, n_warps)
            if tid == 0:
                for cc in range(n_terms):
                    size = all_counted if sp_params[cc, 0] != 0 else sp_sizes[cc]
                    sp_weights[cc] = math.log(float(size + 2))
            cuda.syncthreads()
            s_lo = int64(_BIG)
            s_hi = int64(-_BIG)
            a_lo = int64(_BIG)
            a_hi = int64(-_BIG)
            for j in range(lo, stop):
                if feas[j] == 0:
                    continue
                jj = start + j
                if jj >= m:
                    jj -= m
                row = rows[jj]
                if n_terms > 0 and sp_has_all[row]:
                    v = spread_raw(row, sp_domp1, sp_sums, sp_params, sp_weights, require_all,
                                   n_terms)
                    sp_raw[j] = v
                    s_lo = min(s_lo, v)
                    s_hi = max(s_hi, v)
                if n_af > 0:
                    v = affinity_raw(row, af_domp1, af_sums, af_params, n_af)
                    af_raw[j] = v
                    a_lo = min(a_lo, v)
                    a_hi = max(a_hi, v)
            # both extremes of both scores in one block reduction (minima negated)
            ext4[0] = -s_lo
            ext4[1] = s_hi
            ext4[2] = -a_lo
            ext4[3] = a_hi
            CB.block_max_slots(ext4, 4, wslots, n_warps)
            s_lo = -ext4[0]
            s_hi = ext4[1]
            a_lo = -ext4[2]
            a_hi = ext4[3]
            if s_lo == _BIG:                # nothing scored: both 0
                s_lo = 0
                s_hi = 0
            if a_lo == _BIG:
                a_lo = 0
                a_hi = 0
        else:
            s_lo = s_hi = a_lo = a_hi = int64(0)
        # 4. totals and tie keys; the largest key, then the lowest row at it
        best = int64(-1)
        best_row = int64(n_rows)
        for j in range(lo, stop):
            if feas[j] == 0:
                continue
            jj = start + j
            if jj >= m:
                jj -= m
            row = rows[jj]
            b = base_by_row[row]
            if moved or b == _UNSET:
                b = _base_total(row, raw_by_row, active, norm, weights, hi, skip_slot)
                base_by_row[row] = b
            t = b
            if dense:
                t = _dense_total(b, sp_has_all[row], sp_raw[j], s_lo, s_hi, sp_on, sp_w,
                                 af_raw[j] if n_af > 0 else 0, a_lo,
                                 a_hi - a_lo if n_af > 0 else 0, af_meta[2])
            key = tie_key(t, tie_rank(seed_mix, row, node_i64[row, pods_at]))
            if key > best or (key == best and row < best_row):
                best = key
                best_row = row
        top = CB.block_max(best, wbuf, n_warps)
        if top < 0:
            break                           # uniform: no feasible row for this pod
        chosen = CB.block_min(best_row if best == top else int64(n_rows), wbuf, n_warps)
        # 5. thread 0 places the pod and recomputes its row
        if tid == 0:
            row = chosen
            out[2 + i] = row
            _account(node_i64, qbuf, row, pod_request, pod_nonzero)
            rr = stage_reasons(row, node_i64, node_flags, label_vals, qbuf)
            reasons_by_row[row] = rr
            if rr == 0:
                stage_raw_scores(row, row, raw_by_row, node_i64, node_flags, label_vals, qbuf)
            base_by_row[row] = _UNSET
            _rules_count(row, r_count_dom, r_sums, r_present, r_params, r_thr, r_at_min)
            count_placed(row, sp_count_dom, sp_sums, sp_params, n_terms, 2)
            count_placed(row, af_count_dom, af_sums, af_params, n_af, 1)
            run[0] = (start + processed) % m
            run[1] = i + 1
        cuda.syncthreads()
    if tid == 0:
        out[0] = run[1]
        out[1] = run[0]


_KERNEL_TEMPLATE = """
def place_run_kernel(seed_mix, staged, k, run, node_i64, node_flags, label_vals, qbuf,
                     reasons_by_row, raw_by_row, work, sp_weights):
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for j in range(tid, k, nt):
        write_staged_row(j, k, staged, node_i64, node_flags, label_vals, qbuf, reasons_by_row,
                         raw_by_row)
    cuda.syncthreads()
{unpack}    count = rp[RP_COUNT]
    place_run_body(seed_mix, node_i64, node_flags, label_vals, qbuf, reasons_by_row,
                   raw_by_row, work[:count + 2], work[count + 2:], sp_weights, {parts})
"""


def _unpack_lines(indent: str) -> str:
    """Source lines binding each of ``RUN_PARTS`` to its view of ``run``
    (a ``pack_run`` buffer: offset and dimensions in its header)."""
    lines = []
    for k, (name, dims) in enumerate(RUN_PARTS):
        h = _PART_HEAD * k
        at = f"run[{h}]"
        shape = [f"run[{h + 1 + d}]" for d in range(dims)]
        view = f"run[{at}:{at} + {' * '.join(shape)}]"
        if dims > 1:
            view += f".reshape(({', '.join(shape)}))"
        lines.append(f"{name} = {view}")
    return "".join(f"{indent}{line}\n" for line in lines)


# The kernel: the ``k`` rows written since the row cache's last pass
# (``staged_rows``; k may be 0) written into the packs and recomputed, a
# thread each (``_cuda.write_staged_row``, as the cycle pick's launch
# does), then the run's parts unpacked from one buffer (views, generated
# from RUN_PARTS) and the body (a device function may not return a view it
# made, so the unpacking is the kernel's own code).
place_run_kernel = compile_source(
    f"{__name__}.kernel",
    _KERNEL_TEMPLATE.format(unpack=_unpack_lines("    "),
                            parts=", ".join(name for name, _ in RUN_PARTS)),
    cuda.jit, ("place_run_kernel",),
    namespace={"place_run_body": _place_run_body, "RP_COUNT": RP_COUNT, "cuda": cuda,
               "write_staged_row": write_staged_row},
    filename="<device run kernel>")["place_run_kernel"]


def run_threads(n_rows: int) -> int:
    """Threads of a run block: whole warps, at most RUN_THREADS, no more
    than the evaluated rows need."""
    threads = CB.WARP
    while threads < min(n_rows, RUN_THREADS):
        threads *= 2
    return threads


def work_size(count: int, m: int, n: int) -> int:
    """int64 values of the run's ``work`` buffer: out [count + 2], then
    scratch [3 M + N]."""
    return count + 2 + 3 * m + n


def launch_place_run(n_rows: int, seed_mix, staged, k: int, run, packs, qbuf, reasons_by_row,
                     raw_by_row, work, sp_weights) -> None:
    """Run ``place_run_kernel`` as one block of ``run_threads(n_rows)``
    (``staged`` holds ``k`` rows, ``run`` from ``pack_run`` on the device,
    ``packs`` the device node packs): twelve arguments."""
    if n_rows > MAX_ROWS:
        raise ValueError(f"a device run takes at most {MAX_ROWS} rows, got {n_rows}")
    place_run_kernel[1, run_threads(n_rows)](seed_mix, staged, np.int64(k), run, *packs, qbuf,
                                             reasons_by_row, raw_by_row, work, sp_weights)
