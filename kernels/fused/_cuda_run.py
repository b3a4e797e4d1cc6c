"""Compiled runs on the device: one block places a whole run of alike pods in
one launch, each pod exactly as its own cycle would (``_numba``'s
``place_run_scan`` semantics, which with every node scored are also
``place_run``'s).

The block's threads split the evaluated positions into contiguous chunks
(thread order = evaluation order).  A full pass (a run's first pod; every
pod below every node; see ``_place_run_body`` for the others):

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
4. each row's total (the built-in slots' weighted sum from a per-row cache
   valid while the maxima stay put: ``base_by_row`` and the epoch of the
   maxima it was computed under) and tie key (``_core.tie_key`` of its
   total and ``tie_rank`` with the pods it holds now); each thread keeps
   its chunk's maxima, extremes and best key; one pair reduction gives the
   largest key and the lowest row holding it: the tie rule's pick.
5. thread 0 accounts the pod on that row, recomputes that row's reasons and
   raw scores (``stage_reasons`` / ``stage_raw_scores``), counts the pod
   in the rules and the pod-to-pod domain sums, and lists what it changed:
   the rule domains whose answer flipped (stamped), the domain each spread
   and affinity term counted it in.

With every node scored, each later pod (step A) re-tests and re-reads only
the rows that list names (the placed row; a zone's rows where a zone term
counted the pod, one row for hostname), a chunk holding one re-reads its
extremes from the cached answers and keys its changed rows, and the best
key is reduced with one flag: whether a rescan is due (a counted spread
row's feasibility flipped: the weights may move) or a chunk's extremes
moved.  Only then are the extremes reduced, and only if one of them really
moved is every row keyed again (or every position rescanned): three
barriers a pod where nothing moved.

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

import numpy as np
from numba import cuda, int32, int64, uint32

from tensorsched.kernels._compile import compile_source

from . import _cuda_block as CB
from . import stage_args as SA
from ._cuda import core, stage_raw_scores, stage_reasons, write_staged_row

# The most threads a run block uses: 256 on a GPU; a block reduction's
# second step has one lane per warp, so at most WARP warps (under the
# simulator's 4-thread warps, 16 threads).
RUN_THREADS = min(256, CB.WARP * CB.WARP)
MAX_RUN_SLOTS = 16          # score slots the block keeps maxima for
_RED_SLOTS = MAX_RUN_SLOTS + 4  # one reduction's values: the maxima, then 4 extremes
MAX_ROWS = (1 << 31) - 1    # positions are int32

# run parameters: rp[0:RP_HEADER] scalars, then the pod's vectors
RP_COUNT, RP_START, RP_TO_FIND, RP_SLOTS, RP_RESOURCES, RP_HEADER = range(6)
# out: pods placed, next start, then a row per pod, then three counters
# (``run_counters``)
OUT_EXTRA = 5

spread_raw = core["spread_raw"]
affinity_raw = core["affinity_raw"]
count_placed = core["count_placed"]
rule_fails_row = core["rule_fails_row"]
rule_thresholds = core["rule_thresholds"]
rule_fails_count = core["rule_fails_count"]
rule_count = core["rule_count"]
rules_group_placed = core["rules_group_placed"]
tie_rank = core["tie_rank"]
tie_key = core["tie_key"]
RES_PODS = core["RES_PODS"]

_BIG = 1 << 62
_MAX_WARPS = CB.MAX_WARPS     # module constants: the shared arrays' sizes are literals
_WARP = CB.WARP
_STALE = -2                 # key_pos: a changed row's key, to recompute (keys are >= -1)
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
def _position_row(rows, start, j):
    """The node row at scanned position ``j`` (positions count from ``start``,
    wrapping at the end of ``rows``)."""
    jj = start + j
    if jj >= rows.shape[0]:
        jj -= rows.shape[0]
    return rows[jj]


@cuda.jit(device=True)
def _rules_count_flips(row, stamp, r_count_dom, r_sums, r_present, r_params, r_thr, r_at_min,
                       flip, most):
    """A pod placed on ``row`` counted in every rule that counts it, and
    whose answers moved listed: ``flip``
    [R x D] (rule r, domain d at r * D + d) gets ``stamp`` for every domain
    whose answer the count flipped (``_numba.rules_count_rows``'s test).
    False when they cannot be listed, so every row must be re-tested: a
    group's first pod (every such rule changes) or a moved threshold over
    more than ``most`` domains (one thread would walk them all)."""
    n_dom = r_sums.shape[1]
    listed = True
    for r in range(r_params.shape[0]):
        if r_params[r, 6] == 0:
            continue
        d = r_count_dom[r, row]
        if d < 0:
            continue
        if r_params[r, 8] != 0:
            rules_group_placed(r_params)
            listed = False
        before = rule_fails_count(r, r_sums[r, d], r_params, r_thr)
        old_thr = rule_count(r, d, r_sums, r_present, r_params, r_thr, r_at_min)
        if not listed:
            continue
        if r_thr[r] != old_thr:
            if r_params[r, 7] > most:
                listed = False
                continue
            for dd in range(r_params[r, 7]):
                s_old = r_sums[r, dd] - 1 if dd == d else r_sums[r, dd]
                was = r_params[r, 4] != 0 if s_old > old_thr else r_params[r, 5] != 0
                if rule_fails_count(r, r_sums[r, dd], r_params, r_thr) != was:
                    flip[r * n_dom + dd] = stamp
        elif rule_fails_count(r, r_sums[r, d], r_params, r_thr) != before:
            flip[r * n_dom + d] = stamp
    return listed


@cuda.jit(device=True)
def _row_changed(row, placed, stamp, r_domp1, flip, n_dom, term_dom, sp_domp1, n_terms,
                 af_domp1, n_af, af_at):
    """Whether the last placement (on row ``placed``, its flips stamped
    ``stamp``) changed an input of ``row``'s answers: the row itself (its
    columns, reasons, raw scores and pods), a rule's answer for the row's
    domain (``flip``), a spread or affinity term's count in the row's
    domain (``term_dom`` [C + A]: the domain each term counted the pod in,
    -1 none; the affinity terms from ``af_at``)."""
    if row == placed:
        return True
    for r in range(r_domp1.shape[0]):
        d1 = r_domp1[r, row]
        if d1 > 0 and flip[r * n_dom + d1 - 1] == stamp:
            return True
    for c in range(n_terms):
        d = term_dom[c]
        if d >= 0 and sp_domp1[c, row] == d + 1:
            return True
    for c in range(n_af):
        d = term_dom[af_at + c]
        if d >= 0 and af_domp1[c, row] == d + 1:
            return True
    return False


@cuda.jit(device=True)
def _row_base(row, epoch, base_by_row, base_epoch, raw_by_row, active, norm, weights, hi,
              skip_slot):
    """Row ``row``'s built-in weighted sum (``_base_total``), from the cache
    when it was computed under the current maxima (``epoch``: they moved
    that many times), else computed and kept."""
    if base_epoch[row] != epoch:
        base_by_row[row] = _base_total(row, raw_by_row, active, norm, weights, hi, skip_slot)
        base_epoch[row] = epoch
    return base_by_row[row]


@cuda.jit(device=True)
def _chunk_extremes(lo, hi_pos, start, rows, feas, raw_by_row, norm_slots, n_norm, dense,
                    n_terms, n_af, sp_has_all, sp_raw, af_raw, p_hi, p_ext):
    """This thread's chunk [lo, hi_pos) of positions: ``p_hi`` [n_norm] the
    normalized slots' maxima over its feasible rows (0 at least), ``p_ext``
    [4] (-min, max) of the raw spread (rows with every key) then of the raw
    affinity (-2**62 where none); reads the cached answers only."""
    for k in range(n_norm):
        p_hi[k] = 0
    for q in range(4):
        p_ext[q] = -_BIG
    for j in range(lo, hi_pos):
        if feas[j] == 0:
            continue
        row = _position_row(rows, start, j)
        for k in range(n_norm):
            v = raw_by_row[row, norm_slots[k]]
            if v > p_hi[k]:
                p_hi[k] = v
        if dense:
            if n_terms > 0 and sp_has_all[row]:
                p_ext[0] = max(p_ext[0], -sp_raw[j])
                p_ext[1] = max(p_ext[1], sp_raw[j])
            if n_af > 0:
                p_ext[2] = max(p_ext[2], -af_raw[j])
                p_ext[3] = max(p_ext[3], af_raw[j])


@cuda.jit(device=True)
def _place_run_body(seed_mix, node_i64, node_flags, label_vals, qbuf, reasons_by_row,
                    raw_by_row, out, scratch, sp_weights, rp, rows, r_dom, r_counts, r_params,
                    r_state, sp_dom, sp_sums, sp_params, sp_has_all, sp_meta, sp_marks,
                    sp_sizes, af_dom, af_sums, af_params, af_meta):
    """Place up to rp[RP_COUNT] pods; out [count + OUT_EXTRA]: out[0] = pods placed,
    out[1] = the next start position, out[2 + i] = pod i's row, then
    summed over the pods: out[-3] rows re-tested and re-read (feasibility,
    raw pod-to-pod scores), out[-2] keys recomputed, out[-1] pods that
    rescanned every position.  ``scratch`` (``scratch_size``):
    feasibility, raw spread, raw affinity and tie key by position [4 M],
    the per-row base totals and the maxima epoch each was computed under
    [2 N], the rules' flip stamps [R x D], the domain each spread and
    affinity term counted the last pod in [C + A]; ``sp_weights`` [C]
    float64 scratch.  The rules, spread and affinity arrays come stacked
    (``pack_rules`` etc.): same-shaped arrays along a first axis.  (The
    kernel, ``place_run_kernel``, unpacks them from one buffer.)"""
    tid = int32(cuda.threadIdx.x)
    nt = int32(cuda.blockDim.x)
    n_warps = int32(nt // _WARP)
    m = int32(rows.shape[0])
    n_rows = raw_by_row.shape[0]
    n_slots = int32(raw_by_row.shape[1])
    n_out = out.shape[0]
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
    key_pos = scratch[3 * m:4 * m]
    at = 4 * m
    base_by_row = scratch[at:at + n_rows]
    base_epoch = scratch[at + n_rows:at + 2 * n_rows]
    at += 2 * n_rows
    n_dom = r_counts.shape[2]
    flip = scratch[at:at + r_params.shape[0] * n_dom]
    at += r_params.shape[0] * n_dom
    af_at = sp_params.shape[0]
    term_dom = scratch[at:at + af_at + af_params.shape[0]]
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

    wpair = cuda.shared.array((2, _MAX_WARPS), int64)
    wcount = cuda.shared.array(_MAX_WARPS, int32)
    wslots = cuda.shared.array((_RED_SLOTS, _MAX_WARPS), int64)
    # start, pods placed, stop position, the row the last pod took, whether
    # the next pod rescans every position (1) or only the rows the last
    # placement changed (0)
    run = cuda.shared.array(5, int64)
    hi = cuda.local.array(MAX_RUN_SLOTS, int64)
    hi_prev = cuda.local.array(MAX_RUN_SLOTS, int64)
    norm_slots = cuda.local.array(MAX_RUN_SLOTS, int32)
    red = cuda.local.array(_RED_SLOTS, int64)      # one block reduction's values
    # this thread's chunk: the normalized slots' maxima and the pod-to-pod
    # scores' extremes (``_chunk_extremes``) and its best key and row, kept
    # from pod to pod: a chunk none of whose rows changed keeps them
    p_hi = cuda.local.array(MAX_RUN_SLOTS, int64)
    p_ext = cuda.local.array(4, int64)
    q_hi = cuda.local.array(MAX_RUN_SLOTS, int64)      # a rescan's, to compare
    q_ext = cuda.local.array(4, int64)
    g_ext = cuda.local.array(4, int64)      # the block's s_lo, s_hi, a_lo, a_hi in use

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
    # Below every node (percentageOfNodesToScore) the scan starts where the
    # last pod's stopped: the scanned set, hence every normalization over
    # it, may change with each pod, so each pod rescans every position (an
    # exact incremental form would need a window structure over positions,
    # as ``_numba.place_run_window`` keeps).
    partial = 0 < num_to_find < m           # uniform
    n_norm = 0                              # the active normalized slots: their maxima
    for s in range(n_slots):
        hi_prev[s] = -1                     # no maxima yet: every base total is computed
        hi[s] = 0                           # (the other slots' stay 0: unused)
        if active[s] != 0 and norm[s] != 0:
            norm_slots[n_norm] = s
            n_norm += 1
    for q in range(4):
        p_ext[q] = -_BIG
        g_ext[q] = 0
    for r in range(tid, n_rows, nt):
        base_epoch[r] = -1
    for x in range(tid, flip.shape[0], nt):
        flip[x] = 0
    if tid == 0:
        run[0] = rp[RP_START]
        run[1] = 0
        run[3] = -1
        run[4] = 1                          # the first pod scans every position
        out[n_out - 3] = 0
        out[n_out - 2] = 0
        out[n_out - 1] = 0
        rule_thresholds(r_sums, r_present, r_params, r_thr, r_at_min)
    cuda.syncthreads()
    epoch = int64(0)                        # times the maxima moved (uniform)
    refreshed = int64(0)                    # rows this thread re-tested and re-read
    rekeyed = int64(0)                      # keys this thread recomputed
    p_best = int64(-1)
    p_best_row = int64(n_rows)
    for i in range(count):
        start = int32(run[0])
        full = partial or run[4] != 0       # uniform: written before the last barrier
        processed = m
        n_changed = int32(0)
        need_full = 0                       # this thread asks every position rescanned
        moved_part = 0                      # this chunk's extremes moved
        if not full:
            # A. the rows the last placement changed: their feasibility and
            # raw pod-to-pod scores again, their keys below; this chunk's
            # extremes again where any changed
            placed = run[3]
            for j in range(lo, hi_pos):
                row = _position_row(rows, start, j)
                if not _row_changed(row, placed, i, r_domp1, flip, n_dom, term_dom, sp_domp1,
                                    n_terms, af_domp1, n_af, af_at):
                    continue
                n_changed += 1
                f = _feasible(row, reasons_by_row, r_domp1, r_sums, r_params, r_thr)
                if n_terms > 0 and sp_has_all[row] and (feas[j] != 0) != f:
                    # a counted row came or went: the spread's weights (its
                    # distinct domains) may move, and with them every row
                    need_full = 1
                feas[j] = 1 if f else 0
                key_pos[j] = _STALE
                if f:
                    if n_terms > 0 and sp_has_all[row]:
                        sp_raw[j] = spread_raw(row, sp_domp1, sp_sums, sp_params, sp_weights,
                                               require_all, n_terms)
                    if n_af > 0:
                        af_raw[j] = affinity_raw(row, af_domp1, af_sums, af_params, n_af)
            refreshed += n_changed
            if n_changed > 0:
                _chunk_extremes(lo, hi_pos, start, rows, feas, raw_by_row, norm_slots, n_norm,
                                dense, n_terms, n_af, sp_has_all, sp_raw, af_raw, q_hi, q_ext)
                for k in range(n_norm):
                    if q_hi[k] != p_hi[k]:
                        moved_part = 1
                    p_hi[k] = q_hi[k]
                for q in range(4):
                    if q_ext[q] != p_ext[q]:
                        moved_part = 1
                    p_ext[q] = q_ext[q]
        # B. keys and the pick.  An incremental pod keys its changed rows
        # under the extremes in use and reduces its best key together with
        # one flag (2: a rescan is due, 1: a chunk's extremes moved); only
        # then does it reduce the extremes, and only where one really moved
        # (every row's key again) or a rescan is due does it pass again.
        # (uniform: every decision below reads reduced values)
        rekey_all = full
        top = int64(-1)
        chosen = int64(n_rows)
        done = False
        while not done:
            if full:
                if tid == 0:
                    out[n_out - 1] += 1
                # 1. feasibility, once per position; where the scan stops
                c = int32(0)
                for j in range(lo, hi_pos):
                    f = _feasible(_position_row(rows, start, j), reasons_by_row, r_domp1,
                                  r_sums, r_params, r_thr)
                    feas[j] = 1 if f else 0
                    if f:
                        c += 1
                if partial:
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
                refreshed += max(stop - lo, 0)
                # 2. normalization maxima over the scanned feasible rows (this
                # chunk's kept for the pods after)
                _chunk_extremes(lo, stop, start, rows, feas, raw_by_row, norm_slots, n_norm,
                                False, 0, 0, sp_has_all, sp_raw, af_raw, p_hi, p_ext)
                for k in range(n_norm):
                    red[k] = p_hi[k]
                if n_norm > 0:                      # uniform
                    CB.block_max_slots(red, n_norm, wslots, n_warps)
                for k in range(n_norm):
                    hi[norm_slots[k]] = red[k]
                moved = False                       # uniform: every thread holds the same maxima
                for s in range(n_slots):
                    if hi[s] != hi_prev[s]:
                        moved = True
                    hi_prev[s] = hi[s]
                if moved:
                    epoch += 1
                # 3. the pod-to-pod scores over the scanned rows
                if dense:
                    if tid == 0:
                        for cc in range(n_terms):
                            sp_sizes[cc] = 0
                    cuda.syncthreads()
                    counted = int32(0)
                    for j in range(lo, stop if n_terms > 0 else lo):
                        row = _position_row(rows, start, j)
                        if feas[j] == 0 or not sp_has_all[row]:
                            continue
                        counted += 1
                        for cc in range(n_terms):
                            if sp_params[cc, 0] == 0:
                                # the first thread to mark a domain for this pod counts it
                                if cuda.atomic.max(sp_marks, (cc, sp_size_dom[cc, row]),
                                                   i + 1) < i + 1:
                                    cuda.atomic.add(sp_sizes, cc, 1)
                    _b, all_counted = CB.block_scan32(counted, wcount, n_warps)
                    if tid == 0:
                        for cc in range(n_terms):
                            size = all_counted if sp_params[cc, 0] != 0 else sp_sizes[cc]
                            sp_weights[cc] = math.log(float(size + 2))
                    cuda.syncthreads()
                    for j in range(lo, stop):
                        if feas[j] == 0:
                            continue
                        row = _position_row(rows, start, j)
                        if n_terms > 0 and sp_has_all[row]:
                            sp_raw[j] = spread_raw(row, sp_domp1, sp_sums, sp_params, sp_weights,
                                                   require_all, n_terms)
                        if n_af > 0:
                            af_raw[j] = affinity_raw(row, af_domp1, af_sums, af_params, n_af)
                    _chunk_extremes(lo, stop, start, rows, feas, raw_by_row, norm_slots, 0, True,
                                    n_terms, n_af, sp_has_all, sp_raw, af_raw, red, p_ext)
                    # both extremes of both scores in one block reduction (minima negated)
                    for q in range(4):
                        red[q] = p_ext[q]
                    CB.block_max_slots(red, 4, wslots, n_warps)
                    g_ext[0] = -red[0]
                    g_ext[1] = red[1]
                    g_ext[2] = -red[2]
                    g_ext[3] = red[3]
                    if g_ext[0] == _BIG:            # nothing scored: both 0
                        g_ext[0] = 0
                        g_ext[1] = 0
                    if g_ext[2] == _BIG:
                        g_ext[2] = 0
                        g_ext[3] = 0
                rekey_all = True
                for j in range(lo, hi_pos):
                    if j >= stop:
                        feas[j] = 0             # outside the scan: no key
            if rekey_all or n_changed > 0:
                # this chunk's keys (all, or the changed rows'), its largest,
                # then the lowest row at it
                p_best = int64(-1)
                p_best_row = int64(n_rows)
                for j in range(lo, hi_pos):
                    row = _position_row(rows, start, j)
                    key = key_pos[j]
                    if rekey_all or key == _STALE:
                        key = int64(-1)
                        if feas[j] != 0:
                            t = _row_base(row, epoch, base_by_row, base_epoch, raw_by_row,
                                          active, norm, weights, hi, skip_slot)
                            if dense:
                                t = _dense_total(t, sp_has_all[row], sp_raw[j], g_ext[0],
                                                 g_ext[1], sp_on, sp_w,
                                                 af_raw[j] if n_af > 0 else 0, g_ext[2],
                                                 g_ext[3] - g_ext[2] if n_af > 0 else 0,
                                                 af_meta[2])
                            key = tie_key(t, tie_rank(seed_mix, row, node_i64[row, pods_at]))
                            rekeyed += 1
                        key_pos[j] = key
                    if key >= 0 and (key > p_best or (key == p_best and row < p_best_row)):
                        p_best = key
                        p_best_row = row
            if rekey_all:
                top, chosen = CB.block_argmax(p_best, p_best_row, wpair, n_warps)
                done = True
                continue
            red[0] = 2 * need_full + moved_part
            top, chosen = CB.block_argmax_slots(p_best, p_best_row, red, 1, wpair, wslots,
                                                n_warps)
            if red[0] >= 2:
                full = True                 # the pass again, every position rescanned
                continue
            if red[0] == 0:
                done = True                 # no extreme can have moved: the pick stands
                continue
            for k in range(n_norm):
                red[k] = p_hi[k]
            for q in range(4):
                red[n_norm + q] = p_ext[q]
            CB.block_max_slots(red, n_norm + 4, wslots, n_warps)
            moved = False
            for k in range(n_norm):
                if red[k] != hi[norm_slots[k]]:
                    moved = True
                hi[norm_slots[k]] = red[k]
            if moved:
                epoch += 1
                for s in range(n_slots):
                    hi_prev[s] = hi[s]
            s_lo = -red[n_norm]
            s_hi = red[n_norm + 1]
            a_lo = -red[n_norm + 2]
            a_hi = red[n_norm + 3]
            if s_lo == _BIG:                # nothing scored: both 0
                s_lo = 0
                s_hi = 0
            if a_lo == _BIG:
                a_lo = 0
                a_hi = 0
            if s_lo != g_ext[0] or s_hi != g_ext[1] or a_lo != g_ext[2] or a_hi != g_ext[3]:
                moved = True
            g_ext[0] = s_lo
            g_ext[1] = s_hi
            g_ext[2] = a_lo
            g_ext[3] = a_hi
            rekey_all = moved               # the keys in hand are current unless one moved
            done = not moved
        if top < 0:
            break                           # uniform: no feasible row for this pod
        # 5. thread 0 places the pod, recomputes its row and lists what
        # the placement changed for the next pod's step A
        if tid == 0:
            row = chosen
            out[2 + i] = row
            _account(node_i64, qbuf, row, pod_request, pod_nonzero)
            rr = stage_reasons(row, node_i64, node_flags, label_vals, qbuf)
            reasons_by_row[row] = rr
            if rr == 0:
                stage_raw_scores(row, row, raw_by_row, node_i64, node_flags, label_vals, qbuf)
            base_epoch[row] = -1
            listed = _rules_count_flips(row, i + 1, r_count_dom, r_sums, r_present, r_params,
                                        r_thr, r_at_min, flip, nt)
            for cc in range(n_terms):
                term_dom[cc] = sp_count_dom[cc, row] if sp_params[cc, 2] != 0 else -1
            for cc in range(n_af):
                term_dom[af_at + cc] = af_count_dom[cc, row] if af_params[cc, 1] != 0 else -1
            count_placed(row, sp_count_dom, sp_sums, sp_params, n_terms, 2)
            count_placed(row, af_count_dom, af_sums, af_params, n_af, 1)
            run[0] = (start + processed) % m
            run[1] = i + 1
            run[3] = row
            run[4] = 0 if listed else 1
        cuda.syncthreads()
    cuda.atomic.add(out, n_out - 3, refreshed)
    cuda.atomic.add(out, n_out - 2, rekeyed)
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
                   raw_by_row, work[:count + OUT_EXTRA], work[count + OUT_EXTRA:], sp_weights,
                   {parts})
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
               "OUT_EXTRA": OUT_EXTRA,
               "write_staged_row": write_staged_row},
    filename="<device run kernel>")["place_run_kernel"]


def run_threads(n_rows: int) -> int:
    """Threads of a run block: whole warps, at most RUN_THREADS, no more
    than the evaluated rows need."""
    threads = CB.WARP
    while threads < min(n_rows, RUN_THREADS):
        threads *= 2
    return threads


def work_size(count: int, m: int, n: int, rules, spread, affinity) -> int:
    """int64 values of the run's ``work`` buffer for ``count`` pods over
    ``m`` positions and ``n`` rows with the packed ``rules``, ``spread``
    and ``affinity`` (``RuleArrays`` etc.): out [count + OUT_EXTRA], then
    scratch [4 M + 2 N + R x D + C + A] (``_place_run_body``)."""
    flips = rules.sums.shape[0] * max(rules.sums.shape[1], 1)
    terms = max(spread.params.shape[0], 1) + max(affinity.params.shape[0], 1)
    return count + OUT_EXTRA + 4 * m + 2 * n + flips + terms


def run_counters(out: np.ndarray, count: int) -> tuple[int, int, int]:
    """From a run's out [count + OUT_EXTRA], summed over its pods: (rows
    re-tested and re-read: feasibility and raw pod-to-pod scores; rows whose
    key was recomputed; pods that rescanned every position)."""
    return int(out[count + 2]), int(out[count + 3]), int(out[count + 4])


def launch_place_run(n_rows: int, seed_mix, staged, k: int, run, packs, qbuf, reasons_by_row,
                     raw_by_row, work, sp_weights) -> None:
    """Run ``place_run_kernel`` as one block of ``run_threads(n_rows)``
    (``staged`` holds ``k`` rows, ``run`` from ``pack_run`` on the device,
    ``packs`` the device node packs): twelve arguments."""
    if n_rows > MAX_ROWS:
        raise ValueError(f"a device run takes at most {MAX_ROWS} rows, got {n_rows}")
    place_run_kernel[1, run_threads(n_rows)](seed_mix, staged, np.int64(k), run, *packs, qbuf,
                                             reasons_by_row, raw_by_row, work, sp_weights)
