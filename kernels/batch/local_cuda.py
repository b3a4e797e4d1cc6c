"""The batched node-local engine as one CUDA kernel: a thread block per
cluster, its threads over the cluster's nodes, on the same rules as the
CPU twin (``_local_core.refresh_row`` / ``place_on`` and ``fused._core``'s
Fit, Balanced, normalization and ``tie_rank`` / ``tie_key``, compiled with
``cuda.jit(device=True)``); ``run_local_batch_cuda(a)`` answers what
``local_cpu.run_local_batch(a)`` answers.

Per pod, with n the cluster's nodes and positions j = 0..n-1 in evaluation
order (node (start + j) mod n):

- the scan window: every position when every node is scored, else up to
  the ``num_to_find``-th feasible position (a block-wide scan, warp
  shuffles up);
- the normalization maxima of the window's feasible nodes, and the
  min-max slot's minimum (InterPodAffinity's) (block-wide reductions by
  warp shuffles, then over the warps' partials);
- each scored node's order key (``tie_key`` of its weighted total and its
  ``tie_rank``: the seed, its local node i, the pods on it now), and the
  largest key with the lowest node holding it (the same reduction): the
  seeded tie rule among the top-scored nodes, as ``_local_core.pick_node``;
- thread 0 accounts the pod and refreshes that node for every class, or,
  for one of the first ``fail_cap`` pods of the cluster that fit nowhere,
  counts its diagnosis (``_local_core.count_failure``);
- a pod of a group that already had a pod fit nowhere is dropped, never
  attempted (``LocalBatch.pod_group``);
- a cluster of a static group reads that group's usage-independent bits,
  InterPodAffinity raw scores and statuses (``LocalBatch.static_group``).

The per-(class, node) answers, the cluster's usage and the pods' outputs
live in device memory: one upload and one download per chunk of clusters.
Importing this module without a device or the simulator raises
``BackendUnavailable`` (``cuda`` does).
"""

from __future__ import annotations

import numpy as np

# ``warp`` raises BackendUnavailable without a device or the simulator
from .warp import BIG, NEG, THREADS, WARPS, block_scan, block_sum_min_max, block_top
from .device_memory import device_budget
from . import _local_core
from .local_cpu import NORM_MINMAX, LocalBatch, LocalResult, empty_result, seed_mix

from numba import cuda, int64  # noqa: E402

from tensorsched.kernels._compile import compile_module  # noqa: E402
from tensorsched.kernels.fused import _cuda as _fused_cuda  # noqa: E402

N_SLOTS = _local_core.N_SLOTS
# a module constant: the device compiler takes a shared array's size as a literal only
HI_SLOTS = 2 * N_SLOTS
RES_PODS_COL = _local_core.RES_PODS_COL

_ns = compile_module(_local_core, lambda f: cuda.jit(f, device=True), base=_fused_cuda.core)
_refresh_row = _ns["refresh_row"]
_gather_node = _ns["gather_node"]
_gather_group = _ns["gather_group"]
_place_on = _ns["place_on"]
_tie_rank = _fused_cuda.core["tie_rank"]
_tie_key = _fused_cuda.core["tie_key"]
_count_failure = _ns["count_failure"]
_slot_score = _fused_cuda.core["slot_score"]


@cuda.jit(device=True)
def _kth_feasible(k, limit, flags, buf, sh):
    """The k-th (from 0) position j < limit with flags[j] == 1 (feasible),
    in position order, or -1 when there are fewer (the scan window's last
    node: the ``num_to_find``-th feasible one): a block-wide scan (warp
    shuffles up, the warps' counts scanned by every warp) over rounds of
    THREADS positions.  Every thread gets the answer."""
    tid = cuda.threadIdx.x
    seen = 0
    if tid == 0:
        sh[0, 2] = -1
    cuda.syncthreads()
    for base in range(0, limit, THREADS):
        j = base + tid
        f = 0
        if j < limit and flags[j] == 1:
            f = 1
        x, total = block_scan(f, buf, sh)
        if f == 1 and seen + x - 1 == k:
            sh[0, 2] = j
        seen += total
        cuda.syncthreads()
    pos = sh[0, 2]
    cuda.syncthreads()
    return pos


@cuda.jit(device=True)
def _row_at(j, start, n, rows, by_rows):
    """Position ``j``'s node: (``start`` + j) mod n, or that entry of
    ``rows`` (``by_rows``)."""
    i = start + j
    if i >= n:
        i -= n
    if by_rows:
        return rows[i]
    return i


@cuda.jit(device=True)
def _pick(c, n, start, rows, by_rows, to_find, smix, used, reasons, raw, c_active, c_norm,
          c_weights, flags, hi, buf, sh):
    """``block_pick`` over positions 0..n-1 from ``start``, each position's
    node ``_row_at``'s."""
    tid = cuda.threadIdx.x
    processed = n
    if to_find < n:
        for j in range(tid, n, THREADS):
            i = _row_at(j, start, n, rows, by_rows)
            flags[j] = 1 if reasons[c, i] == 0 else 0
        cuda.syncthreads()
        last = _kth_feasible(to_find - 1, n, flags, buf, sh)
        if last >= 0:
            processed = last + 1
    for s in range(N_SLOTS):
        if c_active[c, s] and c_norm[c, s] == NORM_MINMAX:
            # the min-max slot: both extremes over the window's feasible nodes
            lo = int64(BIG)
            m = int64(-BIG)
            for j in range(tid, processed, THREADS):
                i = _row_at(j, start, n, rows, by_rows)
                if reasons[c, i] == 0:
                    lo = min(lo, raw[c, i, s])
                    m = max(m, raw[c, i, s])
            _sum, lo, m = block_sum_min_max(int64(0), lo, m, buf, sh)
            if tid == 0:
                hi[s] = m
                hi[N_SLOTS + s] = lo
        elif c_active[c, s] and c_norm[c, s] != 0:
            m = int64(0)
            for j in range(tid, processed, THREADS):
                i = _row_at(j, start, n, rows, by_rows)
                if reasons[c, i] == 0 and raw[c, i, s] > m:
                    m = raw[c, i, s]
            m, _cnt, _first = block_top(m, int64(0), int64(0), buf, sh)
            if tid == 0:
                hi[s] = m
    cuda.syncthreads()
    best = NEG
    low = BIG
    for j in range(tid, processed, THREADS):
        i = _row_at(j, start, n, rows, by_rows)
        if reasons[c, i] == 0:
            t = int64(0)
            for s in range(N_SLOTS):
                if c_active[c, s]:
                    t += _slot_score(raw[c, i, s], c_norm[c, s], hi, s, N_SLOTS) * \
                        c_weights[c, s]
            key = _tie_key(t, _tie_rank(smix, i, used[i, RES_PODS_COL]))
            if key > best or (key == best and i < low):
                best = key
                low = i
    best, _cnt, low = block_top(best, int64(0), low, buf, sh)
    if best == NEG:
        return -1, processed
    return low, processed


@cuda.jit(device=True)
def block_pick(c, n, start, to_find, smix, used, reasons, raw, c_active, c_norm, c_weights,
               flags, hi, buf, sh):
    """One attempt of a pod of class ``c`` on the cluster's n > 0 nodes
    from ``start``, every thread of the block together: (the local node it
    takes or -1, the positions processed); the scan window, normalization,
    weighted totals and the seeded tie rule (``used`` [n, R]: the pods
    column ranks the nodes) as the module doc says.  Every thread gets the
    answer."""
    # (``flags`` stands in for the unread row list)
    return _pick(c, n, start, flags, False, to_find, smix, used, reasons, raw, c_active,
                 c_norm, c_weights, flags, hi, buf, sh)


@cuda.jit(device=True)
def block_pick_rows(c, nv, start, rows, to_find, smix, used, reasons, raw, c_active, c_norm,
                    c_weights, flags, hi, buf, sh):
    """``block_pick`` over the ``nv`` > 0 nodes ``rows[:nv]`` (local rows,
    increasing: the live ones) from position ``start``: position j is row
    ``rows[(start + j) mod nv]``, the tie rule on the rows themselves (the
    twin's ``_local_trace.pick_live``).  (the row it takes or -1, the
    positions processed); every thread gets the answer."""
    return _pick(c, nv, start, rows, True, to_find, smix, used, reasons, raw, c_active,
                 c_norm, c_weights, flags, hi, buf, sh)


@cuda.jit
def _kernel(alloc, used0, nz0, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
            c_active, c_norm, c_weights, static_bits, static_raw, image_raw, strategy, fit_res,
            fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind, node_ptr,
            node_rows, pod_ptr, pod_cls, image_group, num_to_find, seed_mix_arr,
            out_row, out_bound, alloc_all, used_all, nz_all, sb_all, reasons_all, raw_all,
            flags_all, s_key, key_first, fail_cap, fail_pod, fail_counts, pod_group,
            static_group, group_bits, group_raw, group_s_key):
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    buf = cuda.shared.array((3, THREADS), int64)
    sh = cuda.shared.array((WARPS, 3), int64)
    hi = cuda.shared.array(HI_SLOTS, int64)
    off = node_ptr[b]
    n = node_ptr[b + 1] - off
    n_res = alloc.shape[1]
    n_classes = c_request.shape[0]
    a = alloc_all[b]
    u = used_all[b]
    z = nz_all[b]
    sb = sb_all[b]
    reasons = reasons_all[b]
    raw = raw_all[b]
    flags = flags_all[b]
    g = image_group[b]
    smix = seed_mix_arr[0]
    # a cluster of a static group reads that group's tables (the twin's rule)
    q = static_group[b]
    bits = static_bits
    keys = s_key
    if q >= 0:
        bits = group_bits[q]
        keys = group_s_key[q]
    for i in range(tid, n, THREADS):
        _gather_node(i, node_rows[off + i], g, alloc, used0, nz0, bits, static_raw,
                     image_raw, a, u, z, sb, raw)
        if q >= 0:
            _gather_group(i, node_rows[off + i], q, group_raw, raw)
        for c in range(n_classes):
            _refresh_row(i, c, a, u, z, c_request, c_nonzero, c_anything, c_ignored,
                         c_fit_filter, c_active, sb, reasons, raw, strategy, fit_res, fit_kind,
                         fit_weights, shape_util, shape_score, bal_res, bal_kind)
    cuda.syncthreads()
    p0 = pod_ptr[b]
    p1 = pod_ptr[b + 1]
    to_find = num_to_find[b]
    start = 0
    bound = 0
    failed = 0
    k_static = key_first.shape[0]
    dropped = 0             # bit g: a pod of group g fit nowhere (the twin's rule)
    for k in range(p1 - p0):
        c = pod_cls[p0 + k]
        grp = pod_group[p0 + k]
        if grp >= 0 and (dropped >> grp) & 1:
            if tid == 0:
                out_row[p0 + k] = -1
            continue
        if n == 0:
            if grp >= 0:
                dropped |= 1 << grp
            if tid == 0:
                out_row[p0 + k] = -1
                if failed < fail_cap:
                    fail_pod[b * fail_cap + failed] = k
            if failed < fail_cap:
                failed += 1
            continue
        i, processed = block_pick(c, n, start, to_find, smix, u, reasons, raw, c_active, c_norm,
                                  c_weights, flags, hi, buf, sh)
        if tid == 0:
            out_row[p0 + k] = -1
            if i >= 0:
                _place_on(i, c, a, u, z, c_request, c_nonzero, c_anything, c_ignored,
                          c_fit_filter, c_active, sb, reasons, raw, strategy, fit_res, fit_kind,
                          fit_weights, shape_util, shape_score, bal_res, bal_kind)
                out_row[p0 + k] = node_rows[off + i]
            elif failed < fail_cap:
                fail_pod[b * fail_cap + failed] = k
                _count_failure(c, n, node_rows[off:off + n], reasons, sb, keys, key_first,
                               k_static, n_res, fail_counts[b * fail_cap + failed])
        if i >= 0:
            bound += 1
        else:
            if grp >= 0:
                dropped |= 1 << grp
            if failed < fail_cap:
                failed += 1
        start += processed
        while start >= n:
            start -= n
        cuda.syncthreads()
    if tid == 0:
        out_bound[b] = bound


def cluster_bytes(a: LocalBatch) -> np.ndarray:
    """Device bytes each cluster of ``a`` needs beyond the shared inputs
    (its nodes' usage, answers and scratch; its pods' outputs)."""
    n = np.diff(a.node_ptr)
    p = np.diff(a.pod_ptr)
    c = max(1, a.c_request.shape[0])
    r = a.alloc.shape[1]
    k = a.failure_keys()[1].shape[0] + _local_core.FIT_SLOTS
    return 8 * (n * (2 * r + 2 + c * (2 + N_SLOTS) + 1) + p + int(a.fail_cap) * (1 + k))


def _chunks(a: LocalBatch, budget: int) -> list:
    """Clusters in consecutive chunks whose device bytes fit ``budget``
    (a chunk pads every cluster to its largest)."""
    n = np.diff(a.node_ptr)
    per_node = cluster_bytes(a) // np.maximum(n, 1)
    out, lo = [], 0
    while lo < a.n_clusters:
        hi = lo + 1
        while hi < a.n_clusters and int(n[lo:hi + 1].max() * per_node[lo:hi + 1].max()
                                        * (hi + 1 - lo)) <= budget:
            hi += 1
        out.append((lo, hi))
        lo = hi
    return out


def run_local_batch_cuda(a: LocalBatch, memory_fraction: float = 0.5,
                         budget: int | None = None) -> LocalResult:
    """Every cluster of ``a`` (checked first) on the device:
    ``local_cpu.run_local_batch``'s ``LocalResult``; the clusters in chunks that fit
    ``budget`` bytes (default: ``memory_fraction`` of the free device
    memory), each chunk one upload, one launch (a block per cluster) and one
    download."""
    a.check()
    out = empty_result(a)
    if a.n_clusters == 0:
        return out
    if budget is None:
        budget = device_budget(memory_fraction)
    i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
    b8 = lambda x: np.ascontiguousarray(x, np.bool_)   # noqa: E731
    d = cuda.to_device
    shared = [d(x) for x in (
        i64(a.alloc), i64(a.used0), i64(a.nz0), i64(a.c_request), i64(a.c_nonzero),
        b8(a.c_anything), b8(a.c_ignored), b8(a.c_fit_filter), b8(a.c_active), i64(a.c_norm),
        i64(a.c_weights), i64(a.static_bits), i64(a.static_raw), i64(a.image_raw))]
    fit = [d(i64(x)) for x in (a.fit_res, a.fit_kind, a.fit_weights, a.shape_util,
                               a.shape_score, a.bal_res, a.bal_kind)]
    smix = d(np.asarray([seed_mix(a.seed)], np.uint64))
    s_key, first = a.failure_keys()
    keys = [d(s_key), d(first)]
    cap = int(a.fail_cap)
    groups = a.groups()
    static_group, *tables = a.static_groups()
    if not tables[0].shape[0]:
        # no group: one unread table keeps the kernel's argument types
        tables = [np.full((1,) + t.shape[1:], -1, np.int64) for t in tables]
    tables = [d(t) for t in tables]
    c = max(1, a.c_request.shape[0])
    r = a.alloc.shape[1]
    for lo, hi in _chunks(a, budget):
        nb = hi - lo
        n0, n1 = int(a.node_ptr[lo]), int(a.node_ptr[hi])
        p0, p1 = int(a.pod_ptr[lo]), int(a.pod_ptr[hi])
        nmax = max(1, int(np.diff(a.node_ptr[lo:hi + 1]).max()))
        part = [d(i64(a.node_ptr[lo:hi + 1] - n0)), d(i64(a.node_rows[n0:n1])),
                d(i64(a.pod_ptr[lo:hi + 1] - p0)), d(i64(a.pod_cls[p0:p1])),
                d(i64(a.image_group[lo:hi])), d(i64(a.num_to_find[lo:hi]))]
        group = d(groups[p0:p1] if p1 > p0 else np.full(1, -1, np.int64))
        sgroup = d(static_group[lo:hi])
        rows_out = cuda.device_array(max(p1 - p0, 1), np.int64)
        bound_out = cuda.device_array(nb, np.int64)
        scratch = [cuda.device_array((nb, nmax, r), np.int64),
                   cuda.device_array((nb, nmax, r), np.int64),
                   cuda.device_array((nb, nmax, 2), np.int64),
                   cuda.device_array((nb, c, nmax), np.int64),
                   cuda.device_array((nb, c, nmax), np.int64),
                   cuda.device_array((nb, c, nmax, N_SLOTS), np.int64),
                   cuda.device_array((nb, nmax), np.int64)]
        f0, f1 = lo * cap, hi * cap
        fails = [d(out.fail_pod[f0:f1] if cap else np.zeros(1, np.int64)),
                 d(out.fail_counts[f0:f1] if cap else np.zeros((1, 1), np.int64))]
        _kernel[nb, THREADS](*shared, int(a.strategy), *fit, *part[:4], part[4], part[5], smix,
                             rows_out, bound_out, *scratch, *keys, cap,
                             *fails, group, sgroup, *tables)
        out.rows[p0:p1] = rows_out.copy_to_host()[:p1 - p0]
        out.bound[lo:hi] = bound_out.copy_to_host()
        if cap:
            out.fail_pod[f0:f1] = fails[0].copy_to_host()
            out.fail_counts[f0:f1] = fails[1].copy_to_host()
    return out


__all__ = ["run_local_batch_cuda", "block_pick", "block_pick_rows", "cluster_bytes", "THREADS"]
