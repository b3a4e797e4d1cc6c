"""The node-local CPU twin's driver: one cluster per ``prange`` iteration,
compiled with ``njit(parallel=True)`` on top of ``_local_core``
(``local_cpu``); each iteration gathers its nodes' columns from the shared
universe and allocates its own scratch; its failures' diagnoses go to
rows ``b * F .. (b + 1) * F - 1`` of ``fail_pod`` / ``fail_counts`` (F
per cluster); ``pod_group`` [sum P] each pod's group (-1: none);
``static_group`` [B] the static group cluster b reads (-1: the base
``static_bits`` / ``static_raw``'s InterPodAffinity score / ``s_key``;
g >= 0: ``group_bits[g]``, ``group_raw[g]``, ``group_s_key[g]``, each
[G, C, U])."""

# ruff: noqa: F821

import numpy as np
from numba import prange

N_SLOTS = 6     # _local_core.N_SLOTS (a compiled namespace holds functions only)


def run_local_all(alloc, used0, nz0, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
                  c_active, c_norm, c_weights, static_bits, static_raw, image_raw, strategy,
                  fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind,
                  node_ptr, node_rows, pod_ptr, pod_cls, image_group, num_to_find, seed_mix,
                  out_row, out_bound, s_key, key_first, fail_pod, fail_counts,
                  pod_group, static_group, group_bits, group_raw, group_s_key):
    n_res = alloc.shape[1]
    n_classes = c_request.shape[0]
    cap = fail_pod.shape[0] // max(node_ptr.shape[0] - 1, 1)
    k_static = key_first.shape[0]
    for b in prange(node_ptr.shape[0] - 1):
        rows = node_rows[node_ptr[b]:node_ptr[b + 1]]
        n = rows.shape[0]
        a = np.empty((n, n_res), np.int64)
        u = np.empty((n, n_res), np.int64)
        z = np.empty((n, 2), np.int64)
        sb = np.empty((n_classes, n), np.int64)
        reasons = np.empty((n_classes, n), np.int64)
        raw = np.zeros((n_classes, n, N_SLOTS), np.int64)
        g = image_group[b]
        q = static_group[b]
        bits = static_bits
        keys = s_key
        if q >= 0:
            bits = group_bits[q]
            keys = group_s_key[q]
        for i in range(n):
            gather_node(i, rows[i], g, alloc, used0, nz0, bits, static_raw, image_raw,
                        a, u, z, sb, raw)
            if q >= 0:
                gather_group(i, rows[i], q, group_raw, raw)
        p0 = pod_ptr[b]
        p1 = pod_ptr[b + 1]
        local = np.empty(p1 - p0, np.int64)
        m = max(n, 1)
        size = 1
        while size < m:
            size *= 2
        nc = max(n_classes, 1)
        out_bound[b] = run_local_cluster(
            a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter, c_active,
            c_norm, c_weights, sb, reasons, raw, strategy, fit_res, fit_kind, fit_weights,
            shape_util, shape_score, bal_res, bal_kind, pod_cls[p0:p1], num_to_find[b],
            seed_mix, local, np.empty(m, np.int64), np.empty(m, np.int64),
            np.empty(m, np.int64), np.empty(2 * N_SLOTS, np.int64),
            np.zeros((nc, 2 * N_SLOTS), np.int64), np.zeros((nc, 2 * N_SLOTS), np.int64),
            np.empty((nc, 2 * size), np.int64), np.empty(nc, np.int64),
            np.empty((nc, N_SLOTS), np.int64), np.empty(1, np.int64), rows,
            keys, key_first, k_static, fail_pod[b * cap:(b + 1) * cap],
            fail_counts[b * cap:(b + 1) * cap], pod_group[p0:p1])
        for k in range(p1 - p0):
            out_row[p0 + k] = rows[local[k]] if local[k] >= 0 else -1


def run_local_trace_all(alloc, used0, nz0, c_request, c_nonzero, c_anything, c_ignored,
                        c_fit_filter, c_active, c_norm, c_weights, static_bits, static_raw,
                        image_raw, strategy, fit_res, fit_kind, fit_weights, shape_util,
                        shape_score, bal_res, bal_kind, node_ptr, node_rows, pod_ptr, pod_cls,
                        image_group, num_to_find, seed_mixes, arrive, depart, duration, rank,
                        backoff0, backoff_max, max_unsched, out_node, out_bind, out_tries,
                        log_t, log_pod, n_log, end, profile, n_fit, n_shape, n_bal):
    """``_local_trace.run_local_trace_cluster`` for every cluster (its pods
    ``pod_ptr[b]:pod_ptr[b+1]``, their log rows twice that), the nodes
    gathered as ``run_local_all`` gathers them; ``out_node`` in universe
    rows.  Cluster b scores with profile ``profile[b]``: ``strategy[k]``,
    the first ``n_fit[k]`` of ``fit_res[k]`` / ``fit_kind[k]`` /
    ``fit_weights[k]``, ``n_shape[k]`` of the shape, ``n_bal[k]`` of
    Balanced's (rows of [K, ...] arrays)."""
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
        r_heap = r2 if rank.shape[0] > 0 else 0        # activeQ's heap keys (ranks given)
        local = np.empty(e, np.int64)
        k = profile[b]
        nf = n_fit[k]
        nq = n_shape[k]
        nb = n_bal[k]
        run_local_trace_cluster(
            a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter, c_active,
            c_norm, c_weights, sb, reasons, raw, strategy[k], fit_res[k, :nf], fit_kind[k, :nf],
            fit_weights[k, :nf], shape_util[k, :nq], shape_score[k, :nq], bal_res[k, :nb],
            bal_kind[k, :nb], pod_cls[p0:p1], arrive[p0:p1],
            depart[p0:p1], duration[p0:p1], backoff0, backoff_max, max_unsched,
            num_to_find[b], seed_mixes[b], local, out_bind[p0:p1], out_tries[p0:p1],
            log_t[2 * p0:2 * p1], log_pod[2 * p0:2 * p1], n_log[b:b + 1], end[b:b + 1],
            np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
            np.empty(2 * N_SLOTS, np.int64), np.zeros((nc, 2 * N_SLOTS), np.int64),
            np.zeros((nc, 2 * N_SLOTS), np.int64), np.empty((nc, 2 * size), np.int64),
            np.empty(nc, np.int64),
            np.empty((nc, N_SLOTS), np.int64), np.empty(1, np.int64),
            np.zeros(14, np.int64), np.zeros(2, np.float64), np.empty(e, np.int64),
            np.empty(e, np.int64), np.empty(e, np.float64), np.empty(r2, np.int64),
            np.empty(r2, np.int64), np.empty(r2, np.float64), np.empty(r2, np.int64),
            np.empty(r2, np.int64), np.empty(e, np.float64), np.empty(e, np.int64),
            np.empty(e, np.int64), rank[p0:p1], np.empty(r_heap, np.int64))
        for k in range(e):
            out_node[p0 + k] = rows[local[k]] if local[k] >= 0 else -1
