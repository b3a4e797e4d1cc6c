"""The node-local trace form with DefaultPreemption in its queue as one
CUDA kernel: a thread block per cluster whose thread 0 gathers its nodes
and runs the CPU twin's own cluster function
(``_local_preempt.run_local_preempt_cluster``) as a device function, as
``local_trace_cuda``'s node-event form runs its own.
``run_local_preempt_cuda(p)`` answers what ``local_preempt.
run_local_preempt(p)`` answers (tested under the simulator).  Importing
this module without a device or the simulator raises
``BackendUnavailable``.
"""

from __future__ import annotations

import numpy as np

from . import _local_core, _local_preempt, _queue
from .local_cpu import TraceResult, empty_trace_result, trace_profiles
from .local_preempt import LocalPreempt, check_terminating, log_rows
from .local_trace_cuda import (
    PREEMPT_DEVICE_NAMESPACE,
    TRACE_DEVICE_NAMESPACE,
    class_count,
    cluster_extent,
    copy_results,
    node_scratch,
    trace_host_inputs,
    trace_outputs,
)

from numba import cuda  # noqa: E402

N_SLOTS = _local_core.N_SLOTS

_pns = PREEMPT_DEVICE_NAMESPACE
_gather_node = TRACE_DEVICE_NAMESPACE["gather_node"]
_run_cluster = _pns["run_local_preempt_cluster"]


@cuda.jit
def _kernel(alloc, used0, nz0, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
            c_active, c_norm, c_weights, static_bits, static_raw, image_raw, strategy, fit_res,
            fit_kind, fit_weights, n_fit, shape_util, shape_score, n_shape, bal_res, bal_kind,
            n_bal, profile, node_ptr, node_rows, pod_ptr, pod_cls, image_group, num_to_find,
            seed_mixes, arrive, depart, duration, rank, vic_ptr, prio, may, krank, pstart, preq,
            pnz, bnode, pct, least, n_pdb, pdb_kind, pdb_val, pmatch,
            backoff0, backoff_max, max_unsched,
            out_node, out_bind, out_tries, out_victim, log_t, log_pod, n_log, end,
            alloc_all, used_all, nz_all, sb_all, reasons_all, raw_all, node_all, nraw_all,
            hi_all, tkey_all, cls_all, craw_all, qi_all, qf_all, pod_all, pts_all, ring_all,
            hk_all, dk_all, ak_all, left_all, grace, vicf_all, tq_all):
    """Cluster ``blockIdx.x``: thread 0 gathers its nodes and runs
    ``run_local_preempt_cluster`` (the scratch ``*_all`` padded per
    cluster; ``node_all`` [B, 9, n] and ``pod_all`` [B, 13, e] int64 rows
    of per-node and per-pod scratch, e the most queue and bound pods of a
    cluster; ``grace`` the termination grace, ``vicf_all`` [B, 3e] float64
    its eviction times and deadline ring, ``tq_all`` [B, TQ_N] its
    slots)."""
    b = cuda.blockIdx.x
    if cuda.threadIdx.x != 0:
        return
    off = node_ptr[b]
    n = node_ptr[b + 1] - off
    p0 = pod_ptr[b]
    e = pod_ptr[b + 1] - p0
    v0 = vic_ptr[b]
    v1 = vic_ptr[b + 1]
    w1 = max(v1 - v0, 1)
    k = profile[b]
    a = alloc_all[b, :n]
    u = used_all[b, :n]
    z = nz_all[b, :n]
    sb = sb_all[b, :, :n]
    raw = raw_all[b, :, :n]
    g = image_group[b]
    for i in range(n):
        _gather_node(i, node_rows[off + i], g, alloc, used0, nz0, static_bits, static_raw,
                     image_raw, a, u, z, sb, raw)
    m = max(n, 1)
    e1 = max(e, 1)
    e2 = max(2 * e, 1)
    nd = node_all[b]
    pd = pod_all[b]
    ring = ring_all[b]
    hk = hk_all[b]
    _run_cluster(
        a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter, c_active, c_norm,
        c_weights, sb, reasons_all[b, :, :n], raw, strategy[k], fit_res[k, :n_fit[k]],
        fit_kind[k, :n_fit[k]], fit_weights[k, :n_fit[k]], shape_util[k, :n_shape[k]],
        shape_score[k, :n_shape[k]], bal_res[k, :n_bal[k]], bal_kind[k, :n_bal[k]],
        pod_cls[p0:p0 + e], arrive[p0:p0 + e], depart[p0:p0 + e], duration[p0:p0 + e],
        backoff0, backoff_max, max_unsched, num_to_find[b], seed_mixes[b],
        pd[0, :e], out_bind[p0:p0 + e], out_tries[p0:p0 + e],
        log_t[p0 + v0:p0 + e + v1], log_pod[p0 + v0:p0 + e + v1], n_log[b:b + 1],
        end[b:b + 1], nd[0, :m], nd[1, :m], nd[2, :m], hi_all[b, 0, 0], hi_all[b, 1],
        hi_all[b, 2], tkey_all[b], cls_all[b], craw_all[b], nd[3, :1], qi_all[b], qf_all[b],
        pd[1, :e], pd[2, :e], pts_all[b, 0, :e], ring[0, :e2], ring[1, :e2], hk[0, :e2],
        ring[2, :e2], ring[3, :e2], dk_all[b, :e1], pd[3, :e1], pd[4, :e1], rank[p0:p0 + e],
        ak_all[b], prio[v0:v1], may[v0:v1], krank[v0:v1], pstart[v0:v1], preq[v0:v1],
        pnz[v0:v1], bnode[v0 - p0:v1 - p0 - e], pct[b], least[b], out_victim[v0:v1],
        pd[5, :e1], nd[4, :m], nd[5, :m], pd[6, :w1], pd[7, :w1], pd[8, :w1], pd[9, :8],
        nd[6, :m], nd[7, :m], nd[8, :m],
        nraw_all[b, 0, :m], n_pdb[b], pdb_kind[b], pdb_val[b], pmatch[v0:v1], left_all[b],
        pd[10, :w1], grace, vicf_all[b, :w1], pd[11, :w1], vicf_all[b, w1:3 * w1], tq_all[b],
        pd[12, :w1])
    for j in range(e):
        out_node[p0 + j] = node_rows[off + pd[0, j]] if pd[0, j] >= 0 else -1


def run_local_preempt_cuda(p: LocalPreempt) -> tuple[TraceResult, np.ndarray]:
    """Every cluster of ``p`` (checked first) on the device, one launch:
    ``local_preempt.run_local_preempt``'s (``TraceResult``, victim)."""
    p.check()
    t = p.trace
    a = t.batch
    n_pods = a.pod_cls.shape[0]
    nb = a.n_clusters
    out = empty_trace_result(n_pods, nb)
    n_vic = int(p.vic_ptr[-1])
    rows = max(log_rows(p), 1)
    victim = np.zeros(n_vic, np.int64)
    out = out._replace(log_t=np.zeros(rows, np.float64), log_pod=np.zeros(rows, np.int64))
    if nb == 0:
        return out, victim
    host = (*trace_host_inputs(t, trace_profiles(t)), *p.inputs(), *p.pdb_inputs())
    ins = [cuda.to_device(x) for x in host]
    nmax, emax = cluster_extent(a)
    wmax = max(8, int(np.diff(p.vic_ptr).max()))
    size = 1
    while size < nmax:
        size *= 2
    c, r = class_count(a), a.alloc.shape[1]
    e2 = 2 * emax
    da = cuda.device_array
    zeros = lambda shape: cuda.to_device(np.zeros(shape, np.int64))   # noqa: E731
    outs = trace_outputs(n_pods, nb, rows, extras=(n_vic,))
    scratch = node_scratch(nb, nmax, c, r) + [
        da((nb, 9, nmax), np.int64), da((nb, 1, nmax, N_SLOTS), np.int64),
        # hi_all[b, 0, 0]: hi_scratch [2S]; [b, 1] / [b, 2]: hi, hi_cnt [C, 2S]
        zeros((nb, 3, c, 2 * N_SLOTS)), da((nb, c, 2 * size), np.int64),
        da((nb, c), np.int64), da((nb, c, N_SLOTS), np.int64),
        da((nb, _queue.QI_N), np.int64), da((nb, _queue.QF_N), np.float64),
        da((nb, 13, wmax), np.int64), da((nb, 1, emax), np.float64),
        da((nb, 4, e2), np.int64), da((nb, 1, e2), np.float64),
        da((nb, emax), np.float64), da((nb, e2 if t.rank is not None else 0), np.int64),
        da((nb, 2, p.pmatch.shape[1]), np.int64), float(p.grace),
        da((nb, 3 * wmax), np.float64),
        cuda.to_device(np.zeros((nb, _local_preempt.TQ_N), np.int64))]
    _kernel[nb, 32](*ins, float(t.backoff0), float(t.backoff_max), float(t.max_unsched),
                    *outs, *scratch)
    check_terminating(scratch[-1].copy_to_host()[:, _local_preempt.T_OVER])
    victim[:] = copy_results(outs, out, n_pods)[0][:n_vic]
    return out, victim


__all__ = ["run_local_preempt_cuda"]
