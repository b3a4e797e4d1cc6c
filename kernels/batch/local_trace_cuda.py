"""The node-local engine's trace form as one CUDA kernel: a thread block per
cluster, thread 0 running the openb engine's queue (``_queue``, as the
openb kernel ``cuda`` runs it) and accounting, the block choosing each
attempt's node together (``local_cuda.block_pick``: the node-local
kernel's own pick); ``run_local_trace_cuda(t)`` answers what
``local_cpu.run_local_trace(t)`` answers.

All clusters in one launch, their state in device memory (one upload,
one download); no chunking by device memory yet.  Importing this module
without a device or the simulator raises ``BackendUnavailable``.
"""

from __future__ import annotations

import numpy as np

from .local_cuda import THREADS, block_pick
from .warp import WARPS
from . import _local_core, _queue
from .local_cpu import LocalProfiles, LocalTrace, TraceResult, seed_mix

from numba import cuda, int64  # noqa: E402

from tensorsched.kernels._compile import compile_module  # noqa: E402
from tensorsched.kernels.fused import _cuda as _fused_cuda  # noqa: E402

N_SLOTS = _local_core.N_SLOTS
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
    hi = cuda.shared.array(2 * N_SLOTS, int64)
    cmd = cuda.shared.array(3, int64)                # thread 0's queue answer, for all
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
            cmd[2] = qi[_queue.QI_ATTEMPT]
        cuda.syncthreads()
        kind = cmd[0]
        j = cmd[1]
        attempt = cmd[2]
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
        pos = -1
        s0 = start
        if n > 0:
            pos, processed = block_pick(c, n, start, to_find, attempt, smix, reasons, raw,
                                        c_active, c_norm, c_weights, flags, hi, buf, sh)
            start += processed
            while start >= n:
                start -= n
        if pos < 0:
            if tid == 0:
                _q_failed(j, qi, qf, pst, pts, up)
            cuda.syncthreads()
            continue
        if tid == 0:
            i = s0 + pos
            if i >= n:
                i -= n
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


def run_local_trace_cuda(t: LocalTrace) -> TraceResult:
    """Every cluster of ``t`` (checked first) on the device:
    ``local_cpu.run_local_trace``'s ``TraceResult``, in one launch (a block
    per cluster)."""
    t.check()
    a = t.batch
    p = a.pod_cls.shape[0]
    nb = a.n_clusters
    out = TraceResult(np.empty(p, np.int64), np.empty(p, np.float64), np.zeros(p, np.int64),
                      np.zeros(max(2 * p, 1), np.float64), np.zeros(max(2 * p, 1), np.int64),
                      np.zeros(nb, np.int64), np.zeros(nb, np.float64))
    if nb == 0:
        return out
    pr = t.profiles
    if pr is None:
        pr = LocalProfiles.of([{f: getattr(a, f) for f in (
            "strategy", "fit_res", "fit_kind", "fit_weights", "shape_util", "shape_score",
            "bal_res", "bal_kind")}], np.zeros(nb, np.int64))
    i64 = lambda x: np.ascontiguousarray(x, np.int64)   # noqa: E731
    b8 = lambda x: np.ascontiguousarray(x, np.bool_)   # noqa: E731
    f64 = lambda x: np.ascontiguousarray(x, np.float64)   # noqa: E731
    d = cuda.to_device
    c = max(1, a.c_request.shape[0])
    r = a.alloc.shape[1]
    nmax = max(1, int(np.diff(a.node_ptr).max()))
    emax = max(1, int(np.diff(a.pod_ptr).max()))
    ins = [d(x) for x in (
        i64(a.alloc), i64(a.used0), i64(a.nz0), i64(a.c_request), i64(a.c_nonzero),
        b8(a.c_anything), b8(a.c_ignored), b8(a.c_fit_filter), b8(a.c_active), i64(a.c_norm),
        i64(a.c_weights), i64(a.static_bits), i64(a.static_raw), i64(a.image_raw),
        i64(pr.strategy), i64(pr.fit_res), i64(pr.fit_kind), i64(pr.fit_weights),
        i64(pr.n_fit), i64(pr.shape_util), i64(pr.shape_score), i64(pr.n_shape),
        i64(pr.bal_res), i64(pr.bal_kind), i64(pr.n_bal), i64(pr.profile), i64(a.node_ptr),
        i64(a.node_rows), i64(a.pod_ptr), i64(a.pod_cls), i64(a.image_group),
        i64(a.num_to_find), np.asarray([seed_mix(s) for s in t.seeds], np.uint64),
        f64(t.arrive), f64(t.depart), t.durations(), t.ranks())]
    outs = [cuda.device_array(max(p, 1), np.int64), cuda.device_array(max(p, 1), np.float64),
            cuda.device_array(max(p, 1), np.int64), d(out.log_t), d(out.log_pod),
            cuda.device_array(nb, np.int64), cuda.device_array(nb, np.float64)]
    e2 = 2 * emax
    scratch = [cuda.device_array((nb, nmax, r), np.int64),
               cuda.device_array((nb, nmax, r), np.int64),
               cuda.device_array((nb, nmax, 2), np.int64),
               cuda.device_array((nb, c, nmax), np.int64),
               cuda.device_array((nb, c, nmax), np.int64),
               cuda.device_array((nb, c, nmax, N_SLOTS), np.int64),
               cuda.device_array((nb, nmax), np.int64),
               cuda.device_array((nb, _queue.QI_N), np.int64),
               cuda.device_array((nb, _queue.QF_N), np.float64),
               cuda.device_array((nb, emax), np.int64), cuda.device_array((nb, emax), np.int64),
               cuda.device_array((nb, emax), np.float64),
               cuda.device_array((nb, e2), np.int64), cuda.device_array((nb, e2), np.int64),
               cuda.device_array((nb, e2), np.float64), cuda.device_array((nb, e2), np.int64),
               cuda.device_array((nb, e2), np.int64),
               cuda.device_array((nb, emax), np.float64),
               cuda.device_array((nb, emax), np.int64), cuda.device_array((nb, emax), np.int64),
               cuda.device_array((nb, e2 if t.rank is not None else 1), np.int64)]
    _kernel[nb, THREADS](*ins[:37], float(t.backoff0), float(t.backoff_max),
                         float(t.max_unsched), *outs, *scratch)
    got = [x.copy_to_host() for x in outs]
    return TraceResult(got[0][:p], got[1][:p], got[2][:p], got[3], got[4], got[5], got[6])


__all__ = ["run_local_trace_cuda"]
