"""The node-local engine's trace form as one CUDA kernel: a thread block per
cluster, thread 0 running the openb engine's queue (``_queue``, as the
openb kernel ``cuda`` runs it) and accounting, the block choosing each
attempt's node together (``local_cuda.block_pick``: the node-local
kernel's own pick); ``run_local_trace_cuda(t)`` answers what
``local_cpu.run_local_trace(t)`` answers.  With timed node events
(``local_events.LocalEvents``) ``run_local_events_cuda(ev)`` answers what
``local_events.run_local_events(ev)`` answers: a thread block per cluster
whose thread 0 runs the CPU twin's own loop steps
(``_local_preempt_events.events_start`` / ``events_open`` /
``events_close`` without preemption: the queue, the node events, the
bindings) as device functions, while every thread of the block picks each
attempt's node between them over the live rows
(``local_cuda.block_pick_rows``: the twin's ``pick_live`` answer), as
``local_preempt_events_cuda`` does with preemption.

The clusters in chunks sized to the free device memory (``trace_chunks``),
each chunk's state in device memory (one upload, one download).
Importing this module without a device or the simulator raises ``BackendUnavailable``.
"""

from __future__ import annotations

import numpy as np

from .local_cuda import THREADS, block_pick, block_pick_rows
from .device_memory import device_budget
from .warp import WARPS
from . import (_candidates, _local_core, _local_preempt, _local_preempt_events, _local_trace,
               _queue)
from .local_cpu import LocalTrace, TraceResult, empty_trace_result, seed_mix, trace_profiles
from .local_events import LocalEvents

from numba import cuda, int64  # noqa: E402

from tensorsched.kernels._compile import compile_module  # noqa: E402
from tensorsched.kernels.mod64 import device_jit  # noqa: E402
from tensorsched.kernels.fused import _cuda as _fused_cuda  # noqa: E402

N_SLOTS = _local_core.N_SLOTS
# a module constant: the device compiler takes a shared array's size as a literal only
HI_SLOTS = 2 * N_SLOTS
NAN = float("nan")

_ns = compile_module(_local_core, lambda f: cuda.jit(f, device=True), base=_fused_cuda.core)
_qns = compile_module(_queue, lambda f: cuda.jit(f, device=True), base=_ns)
_refresh_row = _ns["refresh_row"]
_gather_node = _ns["gather_node"]
_place_on = _ns["place_on"]
_release_from = _ns["release_from"]
_q_init = _qns["q_init"]
_q_next = _qns["q_next"]
_q_failed = _qns["q_failed"]
_q_bound = _qns["q_bound"]
# the node-local rules and the queue as device functions
QUEUE_DEVICE_NAMESPACE = _qns
_tns = compile_module(_local_trace, lambda f: cuda.jit(f, device=True), base=_qns)
# with the trace forms' shared steps (``local_preempt_cuda``)
TRACE_DEVICE_NAMESPACE = _tns
# the preemption steps and the loop steps with node events (the node event
# form runs them without preemption; ``local_preempt_cuda``,
# ``local_preempt_events_cuda``)
# (on numCandidates and the seeded offset, ``_candidates``)
_cand_ns = compile_module(_candidates, device_jit(_candidates.WRAPS_MOD_2_64), base=_tns)
PREEMPT_DEVICE_NAMESPACE = compile_module(_local_preempt, lambda f: cuda.jit(f, device=True),
                                          base=_cand_ns)
PREEMPT_EVENTS_DEVICE_NAMESPACE = compile_module(
    _local_preempt_events, lambda f: cuda.jit(f, device=True), base=PREEMPT_DEVICE_NAMESPACE)
_gather_presence = TRACE_DEVICE_NAMESPACE["gather_presence"]


@cuda.jit(device=True)
def cluster_args(b, k, n, p0, e, v0, v1, alloc_all, used_all, nz_all, sb_all, reasons_all,
                 raw_all, strategy, fit_res, fit_kind, fit_weights, n_fit, shape_util,
                 shape_score, n_shape, bal_res, bal_kind, n_bal, pod_cls, arrive, depart,
                 duration, rank, prio, may, krank, pstart, preq, pnz):
    """The per-cluster views the node-local preemption kernels
    (``local_preempt_cuda``, ``local_preempt_events_cuda``) start from:
    cluster ``b``'s n nodes' usage, static bits, reasons and raw scores;
    its profile ``k``'s strategy and the used prefixes of its Fit, shape and
    Balanced rows; its e pods' classes, arrivals, departures, durations and
    ranks (from ``p0``); its victim rows ``v0:v1`` (priority, may-evict,
    rank, start, requests, nonzero requests).  Views only: nothing is
    copied."""
    return (alloc_all[b, :n], used_all[b, :n], nz_all[b, :n], sb_all[b, :, :n],
            reasons_all[b, :, :n], raw_all[b, :, :n],
            strategy[k], fit_res[k, :n_fit[k]], fit_kind[k, :n_fit[k]],
            fit_weights[k, :n_fit[k]], shape_util[k, :n_shape[k]],
            shape_score[k, :n_shape[k]], bal_res[k, :n_bal[k]], bal_kind[k, :n_bal[k]],
            pod_cls[p0:p0 + e], arrive[p0:p0 + e], depart[p0:p0 + e], duration[p0:p0 + e],
            rank[p0:p0 + e], prio[v0:v1], may[v0:v1], krank[v0:v1], pstart[v0:v1],
            preq[v0:v1], pnz[v0:v1])


@cuda.jit(device=True)
def block_gather(off, n, g, node_rows, alloc, used0, nz0, static_bits, static_raw, image_raw,
                 a, u, z, sb, raw, valid0, u_rej, valid, rej):
    """A cluster's nodes (universe rows ``node_rows[off:off + n]``, image
    group ``g``) into its scratch (``_local_core.gather_node``), with
    ``valid0`` not empty (the node-event forms) each one's presence and
    rejector codes too (``_local_trace.gather_presence``): a thread a
    node, a barrier after (the loop kernels' start, before thread 0's)."""
    for i in range(cuda.threadIdx.x, n, THREADS):
        x = node_rows[off + i]
        _gather_node(i, x, g, alloc, used0, nz0, static_bits, static_raw, image_raw, a, u, z, sb,
                     raw)
        if valid0.shape[0] > 0:
            _gather_presence(i, x, valid0[off + i], u_rej, valid, rej)
    cuda.syncthreads()


# the twin's loop steps, the node-event form's (without preemption)
_ev_start = PREEMPT_EVENTS_DEVICE_NAMESPACE["events_start"]
_ev_open = PREEMPT_EVENTS_DEVICE_NAMESPACE["events_open"]
_ev_close = PREEMPT_EVENTS_DEVICE_NAMESPACE["events_close"]
_ev_trace_end = PREEMPT_EVENTS_DEVICE_NAMESPACE["trace_end"]
EL_M = _local_preempt_events.EL_M
EL_N = _local_preempt_events.EL_N
EL_NV = _local_preempt_events.EL_NV
EL_START = _local_preempt_events.EL_START
EL_TO_FIND = _local_preempt_events.EL_TO_FIND


@cuda.jit
def _kernel(alloc, used0, nz0, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
            c_active, c_norm, c_weights, static_bits, static_raw, image_raw, strategy, fit_res,
            fit_kind, fit_weights, n_fit, shape_util, shape_score, n_shape, bal_res, bal_kind,
            n_bal, profile, node_ptr, node_rows, pod_ptr, pod_cls, image_group, num_to_find,
            seed_mixes, arrive, depart, duration, rank, backoff0, backoff_max, max_unsched,
            out_node, out_bind, out_tries, log_t, log_pod, n_log, end,
            alloc_all, used_all, nz_all, sb_all, reasons_all, raw_all, flags_all,
            qi_all, qf_all, pst_all, patt_all, pts_all, aq_all, up_all, hk_all, hs_all, hp_all,
            dk_all, ds_all, dp_all, ak_all):
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    buf = cuda.shared.array((3, THREADS), int64)
    sh = cuda.shared.array((WARPS, 3), int64)
    hi = cuda.shared.array(HI_SLOTS, int64)
    cmd = cuda.shared.array(2, int64)                # thread 0's queue answer, for all
    off = node_ptr[b]
    n = node_ptr[b + 1] - off
    p0 = pod_ptr[b]
    e = pod_ptr[b + 1] - p0
    n_classes = c_request.shape[0]
    k = profile[b]
    strat = strategy[k]
    fr = fit_res[k, :n_fit[k]]
    fk = fit_kind[k, :n_fit[k]]
    fw = fit_weights[k, :n_fit[k]]
    su = shape_util[k, :n_shape[k]]
    ss = shape_score[k, :n_shape[k]]
    br = bal_res[k, :n_bal[k]]
    bk = bal_kind[k, :n_bal[k]]
    a = alloc_all[b]
    u = used_all[b]
    z = nz_all[b]
    sb = sb_all[b]
    reasons = reasons_all[b]
    raw = raw_all[b]
    flags = flags_all[b]
    qi = qi_all[b]
    qf = qf_all[b]
    pst = pst_all[b, :e]
    patt = patt_all[b, :e]
    pts = pts_all[b, :e]
    aq = aq_all[b, :max(2 * e, 1)]
    up = up_all[b, :max(2 * e, 1)]
    hk = hk_all[b, :max(2 * e, 1)]
    hs = hs_all[b, :max(2 * e, 1)]
    hp = hp_all[b, :max(2 * e, 1)]
    arr = arrive[p0:p0 + e]
    dep = depart[p0:p0 + e]
    dur = duration[p0:p0 + e]
    rk = rank[p0:p0 + e]                            # empty: first-in first-out
    ak = ak_all[b, :max(2 * e, 1)]
    dk = dk_all[b, :max(e, 1)]
    ds = ds_all[b, :max(e, 1)]
    dp = dp_all[b, :max(e, 1)]
    lt = log_t[2 * p0:2 * (p0 + e)]
    lp = log_pod[2 * p0:2 * (p0 + e)]
    g = image_group[b]
    smix = seed_mixes[b]
    to_find = num_to_find[b]
    for i in range(tid, n, THREADS):
        _gather_node(i, node_rows[off + i], g, alloc, used0, nz0, static_bits, static_raw,
                     image_raw, a, u, z, sb, raw)
        for c in range(n_classes):
            _refresh_row(i, c, a, u, z, c_request, c_nonzero, c_anything, c_ignored,
                         c_fit_filter, c_active, sb, reasons, raw, strat, fr, fk, fw, su, ss,
                         br, bk)
    for j in range(tid, e, THREADS):
        out_node[p0 + j] = -1
        out_bind[p0 + j] = NAN
    if tid == 0:
        _q_init(qi, qf, pst, patt, pts)
    cuda.syncthreads()
    start = 0
    m = 0
    while True:
        if tid == 0:
            cmd[0] = _q_next(arr, dep, backoff0, backoff_max, max_unsched, qi, qf, pst,
                             patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rk, ak)
            cmd[1] = qi[_queue.QI_POD]
        cuda.syncthreads()
        kind = cmd[0]
        j = cmd[1]
        cuda.syncthreads()
        if kind == _queue.DONE:
            break
        c = pod_cls[p0 + j]
        if kind == _queue.DEPART:
            if tid == 0:
                i = out_node[p0 + j]
                _release_from(i, c, a, u, z, c_request, c_nonzero, c_anything, c_ignored,
                              c_fit_filter, c_active, sb, reasons, raw, strat, fr, fk, fw, su,
                              ss, br, bk)
                lt[m] = qf[_queue.QF_NOW]
                lp[m] = -1 - j
                m += 1
            cuda.syncthreads()
            continue
        i = -1
        if n > 0:
            i, processed = block_pick(c, n, start, to_find, smix, u, reasons, raw, c_active,
                                      c_norm, c_weights, flags, hi, buf, sh)
            start += processed
            while start >= n:
                start -= n
        if i < 0:
            if tid == 0:
                _q_failed(j, qi, qf, pst, pts, up)
            cuda.syncthreads()
            continue
        if tid == 0:
            _place_on(i, c, a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
                      c_active, sb, reasons, raw, strat, fr, fk, fw, su, ss, br, bk)
            _q_bound(j, dur, qi, qf, pst, dk, ds, dp)
            out_node[p0 + j] = i
            out_bind[p0 + j] = qf[_queue.QF_NOW]
            lt[m] = qf[_queue.QF_NOW]
            lp[m] = j
            m += 1
        cuda.syncthreads()
    if tid == 0:
        n_log[b] = m
        end[b] = qf[_queue.QF_NOW]
    for j in range(tid, e, THREADS):
        out_tries[p0 + j] = patt[j]
        if out_node[p0 + j] >= 0:
            out_node[p0 + j] = node_rows[off + out_node[p0 + j]]


def run_local_trace_cuda(t: LocalTrace, memory_fraction: float = 0.5,
                         budget: int | None = None) -> TraceResult:
    """Every cluster of ``t`` (checked first) on the device:
    ``local_cpu.run_local_trace``'s ``TraceResult``; the clusters in
    consecutive chunks whose device arrays fit ``budget`` bytes (default:
    ``memory_fraction`` of the free device memory) besides the inputs all
    chunks share (uploaded once), each chunk one upload, one launch (a
    block per cluster) and one download; a cluster too big for the budget
    alone is a chunk of its own."""
    t.check()
    a = t.batch
    p = a.pod_cls.shape[0]
    nb = a.n_clusters
    out = empty_trace_result(p, nb)
    if nb == 0:
        return out
    if budget is None:
        budget = device_budget(memory_fraction)
    cut = _Cut()
    host = trace_host_inputs(t, trace_profiles(t), cut)
    shared = {k: cuda.to_device(x) for k, x in enumerate(host) if not cut.per_chunk(x)}
    for lo, hi in trace_chunks(t, budget - cut.shared_bytes(host)):
        ins = [shared[k] if k in shared else cuda.to_device(cut.chunk(x, a, lo, hi))
               for k, x in enumerate(host)]
        outs, scratch = _chunk_arrays(t, lo, hi)
        _kernel[hi - lo, THREADS](*ins[:37], float(t.backoff0), float(t.backoff_max),
                                  float(t.max_unsched), *outs, *scratch)
        p0, p1 = int(a.pod_ptr[lo]), int(a.pod_ptr[hi])
        copy_results(outs, out, p1 - p0, extras=0, p0=p0, rows=2 * (p1 - p0), lo=lo)
    return out


class _Cut:
    """Which of the kernel's inputs a chunk of clusters takes a part of (per
    cluster, per node of ``node_rows``, per pod, and the two offset
    arrays, rebased), told apart by identity; the rest all chunks share."""

    def __init__(self, marks: bool = True):
        self._kind: dict = {}
        self._marks = marks     # False: nothing is cut (one launch takes every input whole)

    def _mark(self, kind: str, x: np.ndarray) -> np.ndarray:
        if self._marks:
            self._kind[id(x)] = kind
        return x

    def runs(self, x):
        return self._mark("runs", x)

    def nodes(self, x):
        return self._mark("nodes", x)

    def pods(self, x):
        return self._mark("pods", x)

    def node_ptr(self, x):
        return self._mark("node_ptr", x)

    def pod_ptr(self, x):
        return self._mark("pod_ptr", x)

    def per_chunk(self, x) -> bool:
        return id(x) in self._kind

    def shared_bytes(self, host) -> int:
        return sum(int(x.nbytes) for x in host if not self.per_chunk(x))

    def chunk(self, x: np.ndarray, a, lo: int, hi: int) -> np.ndarray:
        """Clusters ``lo .. hi - 1``'s part of input ``x`` (``a``: the batch)."""
        kind = self._kind[id(x)]
        n0, n1 = int(a.node_ptr[lo]), int(a.node_ptr[hi])
        p0, p1 = int(a.pod_ptr[lo]), int(a.pod_ptr[hi])
        if kind == "runs":
            return x[lo:hi]
        if kind == "nodes":
            return x[n0:n1]
        if kind == "pods":      # an empty input (no ranks) stays empty
            return x[p0:p1] if x.shape[0] else x
        if kind == "node_ptr":
            return x[lo:hi + 1] - n0
        return x[lo:hi + 1] - p0


def _chunk_shape(t: LocalTrace, lo: int, hi: int) -> tuple:
    """(clusters, largest cluster's nodes, largest cluster's pods, nodes,
    pods) of clusters ``lo .. hi - 1``."""
    a = t.batch
    n = np.diff(a.node_ptr[lo:hi + 1])
    e = np.diff(a.pod_ptr[lo:hi + 1])
    return (hi - lo, max(1, int(n.max())), max(1, int(e.max())), int(n.sum()), int(e.sum()))


def _chunk_arrays(t: LocalTrace, lo: int, hi: int) -> tuple:
    """The outputs and the scratch one launch over clusters ``lo .. hi - 1``
    allocates on the device (the scratch padded to the chunk's largest
    cluster): (outputs, scratch), in the kernel's order."""
    a = t.batch
    nb, nmax, emax, _nodes, p = _chunk_shape(t, lo, hi)
    c, r = class_count(a), a.alloc.shape[1]
    e2 = 2 * emax
    da = cuda.device_array
    outs = trace_outputs(p, nb, 2 * p)
    scratch = node_scratch(nb, nmax, c, r, zero_raw=False) + [
        da((nb, nmax), np.int64), da((nb, _queue.QI_N), np.int64),
        da((nb, _queue.QF_N), np.float64),
        da((nb, emax), np.int64), da((nb, emax), np.int64), da((nb, emax), np.float64),
        da((nb, e2), np.int64), da((nb, e2), np.int64), da((nb, e2), np.float64),
        da((nb, e2), np.int64), da((nb, e2), np.int64),
        da((nb, emax), np.float64), da((nb, emax), np.int64), da((nb, emax), np.int64),
        da((nb, e2 if t.rank is not None else 1), np.int64)]
    return outs, scratch


def chunk_bytes(t: LocalTrace, lo: int, hi: int) -> int:
    """Device bytes one launch over clusters ``lo .. hi - 1`` of ``t``
    allocates: their part of the inputs (per cluster, node and pod), the
    outputs and the scratch (``_chunk_arrays``), not the shared inputs."""
    a = t.batch
    nb, nmax, emax, nodes, p = _chunk_shape(t, lo, hi)
    c = max(1, a.c_request.shape[0])
    r = a.alloc.shape[1]
    ranked = t.rank is not None
    # inputs: profile, image group, nodes to find, seed (per cluster); the
    # two offset arrays; node rows; pod classes, arrive, depart, duration
    # (and rank) per pod
    ins = 4 * nb + 2 * (nb + 1) + nodes + (5 if ranked else 4) * p
    outs = 3 * max(p, 1) + 2 * max(2 * p, 1) + 2 * nb
    per_node = 2 * r + 2 + 2 * c + c * N_SLOTS + 1
    per_pod = 3 + 5 * 2 + 3 + (2 if ranked else 0)
    scratch = nb * (nmax * per_node + _queue.QI_N + _queue.QF_N + emax * per_pod
                    + (0 if ranked else 1))
    return 8 * (ins + outs + scratch)


def trace_cluster_bytes(t: LocalTrace) -> np.ndarray:
    """[B] device bytes each cluster of ``t`` needs in a launch of its own
    (``chunk_bytes``)."""
    return np.array([chunk_bytes(t, b, b + 1) for b in range(t.batch.n_clusters)], np.int64)


def trace_chunks(t: LocalTrace, budget: int) -> list:
    """Clusters of ``t`` in consecutive chunks ``(lo, hi)`` whose launch
    (``chunk_bytes``, every cluster padded to the chunk's largest) fits
    ``budget`` bytes; a cluster that does not fit alone goes alone."""
    out, lo, nb = [], 0, t.batch.n_clusters
    while lo < nb:
        hi = lo + 1
        while hi < nb and chunk_bytes(t, lo, hi + 1) <= budget:
            hi += 1
        out.append((lo, hi))
        lo = hi
    return out


@cuda.jit
def _events_kernel(alloc, used0, nz0, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
                   c_active, c_norm, c_weights, static_bits, static_raw, image_raw, strategy,
                   fit_res, fit_kind, fit_weights, n_fit, shape_util, shape_score, n_shape,
                   bal_res, bal_kind, n_bal, profile, node_ptr, node_rows, pod_ptr, pod_cls,
                   image_group, num_to_find, seed_mixes, arrive, depart, duration, rank,
                   valid0, u_rej, korder, ev_ptr, ev_t, ev_kind, ev_node, ev_x, ev_find,
                   ev_bound, ev_used, ev_nz, fit_interest, backoff0, backoff_max, max_unsched,
                   out_node, out_bind, out_tries, out_why, log_t, log_pod, n_log, end,
                   alloc_all, used_all, nz_all, sb_all, reasons_all, raw_all, rej_all,
                   valid_all, pos_all, tot_all, ties_all, hi_all, qi_all, qf_all, pst_all,
                   patt_all, pts_all, aq_all, up_all, hk_all, hs_all, hp_all, dk_all, ds_all,
                   dp_all, ak_all, pm_all, none, none_r, none_2, none_1, nom_all, mark_all,
                   one_all, sraw_all, left_all, flags_all):
    """Cluster ``blockIdx.x``: the block gathers its nodes, thread 0 runs the loop
    steps of ``run_local_preempt_events_cluster`` without preemption
    (``_local_preempt_events.events_start`` / ``events_open`` /
    ``events_close``: the queue, the node events, the bindings), every
    thread of the block picks each attempt's node over the live rows
    between them (``local_cuda.block_pick_rows``: the twin's
    ``pick_live``); the scratch ``*_all`` padded per cluster (``none*``
    the empty preemption inputs, ``one_all`` [B, 14, EL_N] rows of the
    preemption's scratch it never reads, row 12 the terminating victims'
    slots, row 13 the loop's scalars; ``flags_all`` [B, n] the pick's
    window flags; no grace: the deadline arrays empty views)."""
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    buf = cuda.shared.array((3, THREADS), int64)
    sh = cuda.shared.array((WARPS, 3), int64)
    bhi = cuda.shared.array(HI_SLOTS, int64)     # block_pick's normalization
    cmd = cuda.shared.array(2, int64)                # thread 0's step answer, for all
    off = node_ptr[b]
    n = node_ptr[b + 1] - off
    p0 = pod_ptr[b]
    e = pod_ptr[b + 1] - p0
    e0 = ev_ptr[b]
    e1 = ev_ptr[b + 1]
    k = profile[b]
    e2 = max(2 * e, 1)
    q1 = max(e, 1)
    zero = none.shape[0]
    one = one_all[b]
    a = alloc_all[b, :n]
    u = used_all[b, :n]
    z = nz_all[b, :n]
    sb = sb_all[b, :, :n]
    rs = reasons_all[b, :, :n]
    raw = raw_all[b, :, :n]
    rej = rej_all[b, :, :n]
    valid = valid_all[b, :n]
    strat = strategy[k]
    fr = fit_res[k, :n_fit[k]]
    fk = fit_kind[k, :n_fit[k]]
    fw = fit_weights[k, :n_fit[k]]
    su = shape_util[k, :n_shape[k]]
    ss = shape_score[k, :n_shape[k]]
    br = bal_res[k, :n_bal[k]]
    bk = bal_kind[k, :n_bal[k]]
    cls = pod_cls[p0:p0 + e]
    arr = arrive[p0:p0 + e]
    dep = depart[p0:p0 + e]
    dur = duration[p0:p0 + e]
    to_find = num_to_find[b]
    smix = seed_mixes[b]
    onode = out_node[p0:p0 + e]
    obind = out_bind[p0:p0 + e]
    otries = out_tries[p0:p0 + e]
    owhy = out_why[p0:p0 + e]
    lt = log_t[2 * p0:2 * (p0 + e)]
    lp = log_pod[2 * p0:2 * (p0 + e)]
    nlog = n_log[b:b + 1]
    oend = end[b:b + 1]
    positions = pos_all[b]
    tot = tot_all[b]
    ties = ties_all[b]
    hsc = hi_all[b]
    qi = qi_all[b]
    qf = qf_all[b]
    pst = pst_all[b, :e]
    patt = patt_all[b, :e]
    pts = pts_all[b, :e]
    aq = aq_all[b, :e2]
    up = up_all[b, :e2]
    hk = hk_all[b, :e2]
    hs = hs_all[b, :e2]
    hp = hp_all[b, :e2]
    dk = dk_all[b, :q1]
    ds = ds_all[b, :q1]
    dp = dp_all[b, :q1]
    rk = rank[p0:p0 + e]
    ak = ak_all[b]
    pmask = pm_all[b, :q1]
    kord = korder[p0:p0 + e]
    et = ev_t[e0:e1]
    ekind = ev_kind[e0:e1]
    enode = ev_node[e0:e1]
    ex = ev_x[e0:e1]
    efind = ev_find[e0:e1]
    ebound = ev_bound[e0:e1]
    eused = ev_used[e0:e1]
    enz = ev_nz[e0:e1]
    bgone = one[0, :1]
    nom = nom_all[b, :q1]
    nlist = nom_all[b, :0]
    pot = one[1, :1]
    head = one[2, :1]
    nxt = one[3, :1]
    cur = one[4, :1]
    vout = one[5, :1]
    stats = one[6]
    mark = mark_all[b, :max(n, 1)]
    touched = one[7, :1]
    sbits = one[8, :1]
    sraw = sraw_all[b]
    pkind = one[9, :1]
    pval = one[10, :1]
    left = left_all[b]
    vflag = one[11, :1]
    vt = pts_all[b, :0]
    tqp = one[11, :0]
    tq = one[12]
    ls = one[13]
    flags = flags_all[b]
    block_gather(off, n, image_group[b], node_rows, alloc, used0, nz0, static_bits, static_raw,
                 image_raw, a, u, z, sb, raw, valid0, u_rej, valid, rej)
    if tid == 0:
        _ev_start(a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter, c_active,
                  c_norm, c_weights, sb, rs, raw, strat, fr, fk, fw, su, ss, br, bk, cls, arr,
                  dep, dur, backoff0, backoff_max, max_unsched, to_find, smix, onode, obind,
                  otries, owhy, lt, lp, nlog, oend, positions, tot, ties, hsc, qi, qf, pst, patt,
                  pts, aq, up, hk, hs, hp, dk, ds, dp, rk, ak, pmask, valid, rej, fit_interest,
                  kord, et, ekind, enode, ex, efind, ebound, eused, enz, alloc, used0, nz0,
                  static_bits, static_raw, u_rej, none, none, none, none, none_r, none_2, none,
                  zero, zero, none, bgone, nom, nlist, pot, head, nxt, cur, vout, stats, mark,
                  touched, sbits, sraw, zero, pkind, pval, none_1, left, vflag, 0.0, vt, tqp,
                  vt, tq, ls)
    cuda.syncthreads()
    while True:
        if tid == 0:
            cmd[0] = _ev_open(a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
                              c_active, c_norm, c_weights, sb, rs, raw, strat, fr, fk, fw, su,
                              ss, br, bk, cls, arr, dep, dur, backoff0, backoff_max, max_unsched,
                              to_find, smix, onode, obind, otries, owhy, lt, lp, nlog, oend,
                              positions, tot, ties, hsc, qi, qf, pst, patt, pts, aq, up, hk, hs,
                              hp, dk, ds, dp, rk, ak, pmask, valid, rej, fit_interest, kord, et,
                              ekind, enode, ex, efind, ebound, eused, enz, alloc, used0, nz0,
                              static_bits, static_raw, u_rej, none, none, none, none, none_r,
                              none_2, none, zero, zero, none, bgone, nom, nlist, pot, head, nxt,
                              cur, vout, stats, mark, touched, sbits, sraw, zero, pkind, pval,
                              none_1, left, vflag, 0.0, vt, tqp, vt, tq, ls)
            cmd[1] = qi[_queue.QI_POD]
        cuda.syncthreads()
        kind = cmd[0]
        j = cmd[1]
        cuda.syncthreads()
        if kind == _queue.DONE:
            break
        if kind != _queue.ATTEMPT:
            continue
        i = -1
        processed = 0
        nv = ls[EL_NV]
        if nv > 0:
            i, processed = block_pick_rows(cls[j], nv, ls[EL_START] % nv, positions,
                                           ls[EL_TO_FIND], smix, u, rs, raw, c_active, c_norm,
                                           c_weights, flags, bhi, buf, sh)
        if tid == 0:
            if nv > 0:
                ls[EL_START] = (ls[EL_START] + processed) % nv
            _ev_close(j, i, a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
                      c_active, c_norm, c_weights, sb, rs, raw, strat, fr, fk, fw, su, ss, br,
                      bk, cls, arr, dep, dur, backoff0, backoff_max, max_unsched, to_find, smix,
                      onode, obind, otries, owhy, lt, lp, nlog, oend, positions, tot, ties, hsc,
                      qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rk, ak, pmask,
                      valid, rej, fit_interest, kord, et, ekind, enode, ex, efind, ebound, eused,
                      enz, alloc, used0, nz0, static_bits, static_raw, u_rej, none, none, none,
                      none, none_r, none_2, none, zero, zero, none, bgone, nom, nlist, pot, head,
                      nxt, cur, vout, stats, mark, touched, sbits, sraw, zero, pkind, pval,
                      none_1, left, vflag, 0.0, vt, tqp, vt, tq, ls)
        cuda.syncthreads()
    if tid == 0:
        _ev_trace_end(ls[EL_M], qf, patt, nlog, oend, otries)


def _i64(x) -> np.ndarray:
    return np.ascontiguousarray(x, np.int64)


def _b8(x) -> np.ndarray:
    return np.ascontiguousarray(x, np.bool_)


def _f64(x) -> np.ndarray:
    return np.ascontiguousarray(x, np.float64)


def trace_host_inputs(t, pr, cut: _Cut | None = None) -> tuple:
    """The host arrays every trace-form kernel takes first (the batch, the
    profiles ``pr``, the seeds' mixes, the trace's times, durations and
    ranks), contiguous in the kernels' dtypes; ``cut`` (None: none) marks
    the ones a chunk of clusters takes a part of (``run_local_trace_cuda``)."""
    a = t.batch
    c = _Cut(marks=False) if cut is None else cut
    return (
        _i64(a.alloc), _i64(a.used0), _i64(a.nz0), _i64(a.c_request), _i64(a.c_nonzero),
        _b8(a.c_anything), _b8(a.c_ignored), _b8(a.c_fit_filter), _b8(a.c_active),
        _i64(a.c_norm), _i64(a.c_weights), _i64(a.static_bits), _i64(a.static_raw),
        _i64(a.image_raw), _i64(pr.strategy), _i64(pr.fit_res), _i64(pr.fit_kind),
        _i64(pr.fit_weights), _i64(pr.n_fit), _i64(pr.shape_util), _i64(pr.shape_score),
        _i64(pr.n_shape), _i64(pr.bal_res), _i64(pr.bal_kind), _i64(pr.n_bal),
        c.runs(_i64(pr.profile)), c.node_ptr(_i64(a.node_ptr)), c.nodes(_i64(a.node_rows)),
        c.pod_ptr(_i64(a.pod_ptr)), c.pods(_i64(a.pod_cls)), c.runs(_i64(a.image_group)),
        c.runs(_i64(a.num_to_find)),
        c.runs(np.asarray([seed_mix(s) for s in t.seeds], np.uint64)),
        c.pods(_f64(t.arrive)), c.pods(_f64(t.depart)), c.pods(t.durations()),
        c.pods(t.ranks()))


def event_host_inputs(ev) -> tuple:
    """The host arrays the node-event forms take after ``trace_host_inputs``
    (``LocalEvents``' validity, rejections, key order and its event stream),
    contiguous in the kernels' dtypes."""
    return (_b8(ev.valid0), _i64(ev.rej), _i64(ev.korder), _i64(ev.ev_ptr), _f64(ev.ev_t),
            _i64(ev.ev_kind), _i64(ev.ev_node), _i64(ev.ev_x), _i64(ev.ev_find),
            _i64(ev.ev_bound), _i64(ev.ev_used), _i64(ev.ev_nz))


def class_count(a) -> int:
    """The pod classes the kernels' per-class scratch is sized for (at least 1)."""
    return max(1, a.c_request.shape[0])


def cluster_extent(a) -> tuple:
    """(the most nodes, the most pods) of a cluster of batch ``a``, at least 1 each."""
    return max(1, int(np.diff(a.node_ptr).max())), max(1, int(np.diff(a.pod_ptr).max()))


def trace_outputs(n_pods: int, nb: int, rows: int, extras: tuple = ()) -> list:
    """The trace forms' device outputs, in their kernels' order: node [P]
    int64, bind [P] float64, tries [P] int64, an int64 array of each
    length in ``extras`` (the forms' why / victims), the change log's
    ``rows`` times float64 and pods int64 (zeros), n_log [B] int64 and end
    [B] float64 (every length at least 1 but B's)."""
    da = cuda.device_array
    p = max(n_pods, 1)
    rows = max(rows, 1)
    return [da(p, np.int64), da(p, np.float64), da(p, np.int64),
            *[da(max(x, 1), np.int64) for x in extras],
            cuda.to_device(np.zeros(rows, np.float64)), cuda.to_device(np.zeros(rows, np.int64)),
            da(nb, np.int64), da(nb, np.float64)]


def node_scratch(nb: int, nmax: int, c: int, r: int, zero_raw: bool = True) -> list:
    """The node rows every trace-form kernel gathers a cluster into, [B,
    ...] padded to ``nmax`` nodes (``c`` classes, ``r`` resources), in the
    kernels' order: allocatable, used, nonzero used [B, n, r | 2], the
    static bits and reasons [B, C, n], the raw scores [B, C, n, N_SLOTS]
    (zeros with ``zero_raw``)."""
    da = cuda.device_array
    raw = (cuda.to_device(np.zeros((nb, c, nmax, N_SLOTS), np.int64)) if zero_raw
           else da((nb, c, nmax, N_SLOTS), np.int64))
    return [da((nb, nmax, r), np.int64), da((nb, nmax, r), np.int64),
            da((nb, nmax, 2), np.int64), da((nb, c, nmax), np.int64),
            da((nb, c, nmax), np.int64), raw]


def copy_results(outs, out: TraceResult, p: int, extras: int = 1, p0: int = 0,
                 rows: int | None = None, lo: int = 0) -> list:
    """The device outputs ``outs`` (``trace_outputs``' order, ``extras``
    arrays after tries) copied into ``out``: ``p`` pods from pod ``p0``,
    ``rows`` change-log rows from row ``2 * p0`` (None: all of
    ``out``'s), the clusters' from cluster ``lo``.  Returns the extras'
    host copies."""
    got = [x.copy_to_host() for x in outs]
    out.node[p0:p0 + p] = got[0][:p]
    out.bind[p0:p0 + p] = got[1][:p]
    out.tries[p0:p0 + p] = got[2][:p]
    log_t, log_pod, n_log, end = got[3 + extras:]
    r0 = 2 * p0
    rows = out.log_t.shape[0] - r0 if rows is None else rows
    out.log_t[r0:r0 + rows] = log_t[:rows]
    out.log_pod[r0:r0 + rows] = log_pod[:rows]
    out.n_log[lo:lo + n_log.shape[0]] = n_log
    out.end[lo:lo + end.shape[0]] = end
    return got[3:3 + extras]


def run_local_events_cuda(ev: LocalEvents) -> tuple[TraceResult, np.ndarray]:
    """Every cluster of ``ev`` (checked first) on the device, one launch:
    ``local_events.run_local_events``'s (``TraceResult``, ``why``)."""
    ev.check()
    t = ev.trace
    a = t.batch
    p = a.pod_cls.shape[0]
    nb = a.n_clusters
    out = empty_trace_result(p, nb)
    why = np.zeros(p, np.int64)
    if nb == 0:
        return out, why
    host = (*trace_host_inputs(t, trace_profiles(t)), *event_host_inputs(ev))
    ins = [cuda.to_device(x) for x in host]
    nmax, emax = cluster_extent(a)
    c, r = class_count(a), a.alloc.shape[1]
    e2 = 2 * emax
    da = cuda.device_array
    outs = trace_outputs(p, nb, 2 * p, extras=(p,))
    scratch = node_scratch(nb, nmax, c, r) + [
        da((nb, c, nmax), np.int64), da((nb, nmax), np.bool_),
        da((nb, nmax), np.int64), da((nb, nmax), np.int64), da((nb, nmax), np.int64),
        da((nb, 2 * N_SLOTS), np.int64), da((nb, _queue.QI_EV_N), np.int64),
        da((nb, _queue.QF_N), np.float64),
        da((nb, emax), np.int64), da((nb, emax), np.int64), da((nb, emax), np.float64),
        da((nb, e2), np.int64), da((nb, e2), np.int64), da((nb, e2), np.float64),
        da((nb, e2), np.int64), da((nb, e2), np.int64),
        da((nb, emax), np.float64), da((nb, emax), np.int64), da((nb, emax), np.int64),
        da((nb, e2 if t.rank is not None else 0), np.int64), da((nb, emax), np.int64),
        da(0, np.int64), da((0, r), np.int64), da((0, 2), np.int64),
        da((0, 1), np.int64), da((nb, emax), np.int64), da((nb, nmax), np.int64),
        da((nb, 14, EL_N), np.int64), da((nb, 1, N_SLOTS), np.int64),
        da((nb, 2, 1), np.int64), da((nb, nmax), np.int64)]
    _events_kernel[nb, THREADS](*ins, int(ev.fit_interest), float(t.backoff0),
                           float(t.backoff_max), float(t.max_unsched), *outs, *scratch)
    why[:] = copy_results(outs, out, p)[0][:p]
    return out, why


__all__ = ["block_gather", "run_local_trace_cuda", "run_local_events_cuda", "chunk_bytes",
           "trace_chunks", "trace_cluster_bytes"]
