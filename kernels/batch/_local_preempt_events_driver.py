"""The CPU twin's driver of the trace form with DefaultPreemption and node
events (``_local_preempt_events.run_local_preempt_events_cluster``): one
cluster per ``prange`` iteration, compiled with ``njit(parallel=True)``
(``local_preempt_events``); its nodes gathered as the node-event driver
gathers them, its scratch allocated as both forms' drivers do."""

# ruff: noqa: F821

import numpy as np
from numba import prange

N_SLOTS = 6     # _local_core.N_SLOTS (a compiled namespace holds functions only)
QI_EV_N = 15    # _queue.QI_EV_N
TQ_N = 5        # _local_preempt.TQ_N, T_OVER its slot 4
EL_N = 9        # _local_preempt_events.EL_N


def run_local_preempt_events_all(alloc, used0, nz0, c_request, c_nonzero, c_anything,
                                 c_ignored, c_fit_filter, c_active, c_norm, c_weights,
                                 static_bits, static_raw, image_raw, strategy, fit_res,
                                 fit_kind, fit_weights, shape_util, shape_score, bal_res,
                                 bal_kind, node_ptr, node_rows, pod_ptr, pod_cls, image_group,
                                 num_to_find, seed_mixes, arrive, depart, duration, rank,
                                 backoff0, backoff_max, max_unsched, out_node, out_bind,
                                 out_tries, out_why, log_t, log_pod, n_log, end, profile, n_fit,
                                 n_shape, n_bal, valid0, u_rej, fit_interest, korder, ev_ptr,
                                 ev_t, ev_kind, ev_node, ev_x, ev_find, ev_bound, ev_used, ev_nz,
                                 vic_ptr, prio,
                                 may, krank, pstart, preq, pnz, bnode, pct, least, out_victim,
                                 evicted_at, n_pdb, pdb_kind, pdb_val, pmatch, grace=0.0):
    """``run_local_preempt_events_cluster`` for every cluster b: its nodes
    and events as ``local_events.run_local_events`` passes them (its
    preemption arrays empty), its pods' preemption rows (and ``out_why``, ``out_victim``,
    ``evicted_at``: float64, each pod's first eviction's time, NaN never)
    ``vic_ptr[b]:vic_ptr[b+1]`` and the rest as ``_local_preempt_driver.
    run_local_preempt_all``; its log rows ``pod_ptr[b] + vic_ptr[b]``
    onwards (two per queue pod, one per bound pod); ``out_node`` local
    rows; ``grace`` the termination grace (seconds; the form without
    preemption leaves it 0).  Returns how many runs' pending termination
    deadlines outgrew their ring (2 (P + Bb); their results are wrong)."""
    n_classes = c_request.shape[0]
    over = 0
    for b in prange(node_ptr.shape[0] - 1):
        off = node_ptr[b]
        rows = node_rows[off:node_ptr[b + 1]]
        n = rows.shape[0]
        a, u, z, sb, reasons, raw = gather_cluster(rows, image_group[b], alloc, used0, nz0,
                                                   static_bits, static_raw, image_raw)
        rej = np.empty((n_classes, n), np.int64)
        valid = np.empty(n, np.bool_)
        for i in range(n):
            gather_presence(i, rows[i], valid0[off + i], u_rej, valid, rej)
        p0 = pod_ptr[b]
        p1 = pod_ptr[b + 1]
        e0 = ev_ptr[b]
        e1 = ev_ptr[b + 1]
        e = p1 - p0
        m = max(n, 1)
        r2 = max(2 * e, 1)
        r_heap = r2 if rank.shape[0] > 0 else 0
        q1 = max(e, 1)
        v0 = vic_ptr[b]
        v1 = vic_ptr[b + 1]
        w1 = max(v1 - v0, 1)
        k = profile[b]
        nf = n_fit[k]
        nq = n_shape[k]
        nb = n_bal[k]
        tq = np.zeros(TQ_N, np.int64)
        run_local_preempt_events_cluster(
            a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter, c_active,
            c_norm, c_weights, sb, reasons, raw, strategy[k], fit_res[k, :nf], fit_kind[k, :nf],
            fit_weights[k, :nf], shape_util[k, :nq], shape_score[k, :nq], bal_res[k, :nb],
            bal_kind[k, :nb], pod_cls[p0:p1], arrive[p0:p1], depart[p0:p1], duration[p0:p1],
            backoff0, backoff_max, max_unsched, num_to_find[b], seed_mixes[b],
            out_node[p0:p1], out_bind[p0:p1], out_tries[p0:p1], out_why[v0:v1],
            log_t[p0 + v0:p1 + v1], log_pod[p0 + v0:p1 + v1], n_log[b:b + 1], end[b:b + 1],
            np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
            np.empty(2 * N_SLOTS, np.int64),
            np.zeros(QI_EV_N, np.int64), np.zeros(2, np.float64), np.empty(e, np.int64),
            np.empty(e, np.int64), np.empty(e, np.float64), np.empty(r2, np.int64),
            np.empty(r2, np.int64), np.empty(r2, np.float64), np.empty(r2, np.int64),
            np.empty(r2, np.int64), np.empty(e, np.float64), np.empty(e, np.int64),
            np.empty(e, np.int64), rank[p0:p1], np.empty(r_heap, np.int64),
            np.empty(e, np.int64), valid, rej, fit_interest, korder[p0:p1],
            ev_t[e0:e1], ev_kind[e0:e1], ev_node[e0:e1], ev_x[e0:e1], ev_find[e0:e1],
            ev_bound[e0:e1], ev_used[e0:e1], ev_nz[e0:e1], alloc, used0, nz0, static_bits,
            static_raw, u_rej,
            prio[v0:v1], may[v0:v1], krank[v0:v1], pstart[v0:v1], preq[v0:v1], pnz[v0:v1],
            bnode[v0 - p0:v1 - p1], pct[b], least[b], out_victim[v0:v1],
            np.empty(w1, np.int64), np.empty(q1, np.int64), np.empty(q1, np.int64),
            np.empty(m, np.int64),
            np.empty(m, np.int64), np.empty(w1, np.int64), np.empty(w1, np.int64),
            np.empty(w1, np.int64), np.empty(8, np.int64), np.empty(m, np.int64),
            np.empty(m, np.int64), np.empty(m, np.int64), np.empty((m, N_SLOTS), np.int64),
            n_pdb[b], pdb_kind[b], pdb_val[b], pmatch[v0:v1],
            np.empty((2, pmatch.shape[1]), np.int64), np.empty(w1, np.int64), grace,
            evicted_at[v0:v1], np.empty(w1, np.int64), np.empty(2 * w1, np.float64), tq,
            np.zeros(EL_N, np.int64))
        over += tq[4]
    return over
