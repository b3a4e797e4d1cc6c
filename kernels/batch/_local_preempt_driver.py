"""The CPU twin's driver of the trace form with DefaultPreemption
(``_local_preempt.run_local_preempt_cluster``): one cluster per ``prange``
iteration, compiled with ``njit(parallel=True)`` (``local_preempt``), the
nodes gathered (``_local_trace.gather_cluster``) and the scratch
allocated as ``_local_driver.run_local_trace_all`` does."""

# ruff: noqa: F821

import numpy as np
from numba import prange

N_SLOTS = 6     # _local_core.N_SLOTS (a compiled namespace holds functions only)
TQ_N = 5        # _local_preempt.TQ_N, T_OVER its slot 4


def run_local_preempt_all(alloc, used0, nz0, c_request, c_nonzero, c_anything, c_ignored,
                          c_fit_filter, c_active, c_norm, c_weights, static_bits, static_raw,
                          image_raw, strategy, fit_res, fit_kind, fit_weights, shape_util,
                          shape_score, bal_res, bal_kind, node_ptr, node_rows, pod_ptr,
                          pod_cls, image_group, num_to_find, seed_mixes, arrive, depart,
                          duration, rank, backoff0, backoff_max, max_unsched, out_node,
                          out_bind, out_tries, log_t, log_pod, n_log, end, profile, n_fit,
                          n_shape, n_bal, vic_ptr, prio, may, krank, pstart, preq, pnz, bnode,
                          pct, least, out_victim, evicted_at, n_pdb, pdb_kind, pdb_val, pmatch,
                          grace, over):
    """``run_local_trace_all`` with preemption: cluster b's queue pods then
    its manifests' bound pods are rows ``vic_ptr[b]:vic_ptr[b+1]`` of
    ``prio``, ``may``, ``krank``, ``pstart``, ``preq`` [., R], ``pnz``
    [., 2], ``out_victim`` and ``evicted_at`` (float64 out: each pod's
    first eviction's time, NaN never); its bound pods' local nodes ``bnode``
    ``vic_ptr[b] - pod_ptr[b]`` onwards; per cluster ``pct`` / ``least``
    (DefaultPreemption's arguments of its profile); its log rows
    ``pod_ptr[b] + vic_ptr[b]`` onwards (two per queue pod, one per bound
    pod); cluster b's ``n_pdb[b]`` PodDisruptionBudgets ``pdb_kind[b]`` /
    ``pdb_val[b]`` [B, W], its pods' ``pmatch`` rows as ``prio``'s [., W];
    ``grace`` the termination grace (seconds), ``over`` [B] out: 1 where a
    run's pending termination deadlines outgrew their ring (2 (P + Bb))."""
    n_classes = c_request.shape[0]
    for b in prange(node_ptr.shape[0] - 1):
        rows = node_rows[node_ptr[b]:node_ptr[b + 1]]
        n = rows.shape[0]
        a, u, z, sb, reasons, raw = gather_cluster(rows, image_group[b], alloc, used0, nz0,
                                                   static_bits, static_raw, image_raw)
        p0 = pod_ptr[b]
        p1 = pod_ptr[b + 1]
        e = p1 - p0
        m = max(n, 1)
        size = 1
        while size < m:
            size *= 2
        nc = max(n_classes, 1)
        r2 = max(2 * e, 1)
        r_heap = r2 if rank.shape[0] > 0 else 0
        e1 = max(e, 1)
        v0 = vic_ptr[b]
        v1 = vic_ptr[b + 1]
        w1 = max(v1 - v0, 1)
        b0 = v0 - p0
        b1 = v1 - p1
        local = np.empty(e, np.int64)
        tq = np.zeros(TQ_N, np.int64)
        k = profile[b]
        nf = n_fit[k]
        nq = n_shape[k]
        nb = n_bal[k]
        run_local_preempt_cluster(
            a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter, c_active,
            c_norm, c_weights, sb, reasons, raw, strategy[k], fit_res[k, :nf], fit_kind[k, :nf],
            fit_weights[k, :nf], shape_util[k, :nq], shape_score[k, :nq], bal_res[k, :nb],
            bal_kind[k, :nb], pod_cls[p0:p1], arrive[p0:p1],
            depart[p0:p1], duration[p0:p1], backoff0, backoff_max, max_unsched,
            num_to_find[b], seed_mixes[b], local, out_bind[p0:p1], out_tries[p0:p1],
            log_t[p0 + v0:p1 + v1], log_pod[p0 + v0:p1 + v1], n_log[b:b + 1], end[b:b + 1],
            np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
            np.empty(2 * N_SLOTS, np.int64), np.zeros((nc, 2 * N_SLOTS), np.int64),
            np.zeros((nc, 2 * N_SLOTS), np.int64), np.empty((nc, 2 * size), np.int64),
            np.empty(nc, np.int64),
            np.empty((nc, N_SLOTS), np.int64), np.empty(1, np.int64),
            np.zeros(14, np.int64), np.zeros(2, np.float64), np.empty(e, np.int64),
            np.empty(e, np.int64), np.empty(e, np.float64), np.empty(r2, np.int64),
            np.empty(r2, np.int64), np.empty(r2, np.float64), np.empty(r2, np.int64),
            np.empty(r2, np.int64), np.empty(e, np.float64), np.empty(e, np.int64),
            np.empty(e, np.int64), rank[p0:p1], np.empty(r_heap, np.int64),
            prio[v0:v1], may[v0:v1], krank[v0:v1], pstart[v0:v1], preq[v0:v1], pnz[v0:v1],
            bnode[b0:b1], pct[b], least[b], out_victim[v0:v1], np.empty(e1, np.int64),
            np.empty(e1, np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
            np.empty(w1, np.int64), np.empty(w1, np.int64), np.empty(w1, np.int64),
            np.empty(8, np.int64),
            np.empty(m, np.int64),
            np.empty(m, np.int64), np.empty(m, np.int64), np.empty((m, N_SLOTS), np.int64),
            n_pdb[b], pdb_kind[b], pdb_val[b], pmatch[v0:v1],
            np.empty((2, pmatch.shape[1]), np.int64), np.empty(w1, np.int64), grace,
            evicted_at[v0:v1], np.empty(w1, np.int64), np.empty(2 * w1, np.float64), tq,
            np.empty(w1, np.int64), np.zeros(8, np.int64))
        over[b] = tq[4]
        for k in range(e):
            out_node[p0 + k] = rows[local[k]] if local[k] >= 0 else -1
