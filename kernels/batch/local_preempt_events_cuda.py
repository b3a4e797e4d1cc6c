"""The node-local trace form with DefaultPreemption and node events as one
CUDA kernel: a thread block per cluster whose thread 0 gathers its nodes
and runs the CPU twin's own cluster function
(``_local_preempt_events.run_local_preempt_events_cluster``) as a device
function, as ``local_preempt_cuda`` and ``local_trace_cuda``'s node-event
form run theirs.  ``run_local_preempt_events_cuda(pe)`` answers what
``local_preempt_events.run_local_preempt_events(pe)`` answers (tested
under the simulator).  Importing this module without a device or the
simulator raises ``BackendUnavailable``.
"""

from __future__ import annotations

import numpy as np

from . import _local_core, _local_preempt, _queue
from .local_cpu import empty_trace_result, trace_profiles
from .local_preempt import check_terminating, log_rows
from .local_preempt_cuda import first_evictions
from .local_preempt_events import LocalPreemptEvents
from .local_trace_cuda import (
    PREEMPT_EVENTS_DEVICE_NAMESPACE,
    TRACE_DEVICE_NAMESPACE,
    class_count,
    cluster_extent,
    copy_results,
    event_host_inputs,
    node_scratch,
    trace_host_inputs,
    trace_outputs,
)

from numba import cuda  # noqa: E402

N_SLOTS = _local_core.N_SLOTS

_gather_node = TRACE_DEVICE_NAMESPACE["gather_node"]
# the node-event form's cluster function (``local_trace_cuda``), with preemption here
_run_cluster = PREEMPT_EVENTS_DEVICE_NAMESPACE["run_local_preempt_events_cluster"]


@cuda.jit
def _kernel(alloc, used0, nz0, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
            c_active, c_norm, c_weights, static_bits, static_raw, image_raw, strategy, fit_res,
            fit_kind, fit_weights, n_fit, shape_util, shape_score, n_shape, bal_res, bal_kind,
            n_bal, profile, node_ptr, node_rows, pod_ptr, pod_cls, image_group, num_to_find,
            seed_mixes, arrive, depart, duration, rank, valid0, u_rej, korder, ev_ptr, ev_t,
            ev_kind, ev_node, ev_x, ev_find, ev_bound, ev_used, ev_nz, vic_ptr, prio, may, krank,
            pstart, preq, pnz, bnode, pct, least, n_pdb, pdb_kind, pdb_val, pmatch, fit_interest, backoff0,
            backoff_max, max_unsched, out_node, out_bind, out_tries, out_why, out_victim, log_t,
            log_pod, n_log, end, alloc_all, used_all, nz_all, sb_all, reasons_all, raw_all,
            rej_all, valid_all, node_all, sraw_all, hi_all, qi_all, qf_all, pod_all, podf_all,
            ring_all, hk_all, ak_all, vic_all, left_all, grace, vicf_all, tq_all):
    """Cluster ``blockIdx.x``: thread 0 gathers its nodes and runs
    ``run_local_preempt_events_cluster`` (the scratch ``*_all`` padded per
    cluster: ``node_all`` [B, 8, n], ``pod_all`` [B, 6, e], ``podf_all``
    [B, 2, e], ``ring_all`` [B, 4, 2e], ``vic_all`` [B, 7, w] int64 rows of
    per-node, per-pod and per-victim-row scratch; ``grace`` the termination
    grace, ``vicf_all`` [B, 3w] float64 its eviction times and deadline
    ring, ``tq_all`` [B, TQ_N] its slots)."""
    b = cuda.blockIdx.x
    if cuda.threadIdx.x != 0:
        return
    off = node_ptr[b]
    n = node_ptr[b + 1] - off
    p0 = pod_ptr[b]
    e = pod_ptr[b + 1] - p0
    e0 = ev_ptr[b]
    e1 = ev_ptr[b + 1]
    v0 = vic_ptr[b]
    v1 = vic_ptr[b + 1]
    w1 = max(v1 - v0, 1)
    k = profile[b]
    a = alloc_all[b, :n]
    u = used_all[b, :n]
    z = nz_all[b, :n]
    sb = sb_all[b, :, :n]
    raw = raw_all[b, :, :n]
    rej = rej_all[b, :, :n]
    valid = valid_all[b, :n]
    g = image_group[b]
    for i in range(n):
        _gather_node(i, node_rows[off + i], g, alloc, used0, nz0, static_bits, static_raw,
                     image_raw, a, u, z, sb, raw)
        valid[i] = valid0[off + i]
        for c in range(c_request.shape[0]):
            rej[c, i] = u_rej[c, node_rows[off + i]]
    m = max(n, 1)
    q1 = max(e, 1)
    e2 = max(2 * e, 1)
    nd = node_all[b]
    pd = pod_all[b]
    pf = podf_all[b]
    ring = ring_all[b]
    vd = vic_all[b]
    _run_cluster(
        a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter, c_active, c_norm,
        c_weights, sb, reasons_all[b, :, :n], raw, strategy[k], fit_res[k, :n_fit[k]],
        fit_kind[k, :n_fit[k]], fit_weights[k, :n_fit[k]], shape_util[k, :n_shape[k]],
        shape_score[k, :n_shape[k]], bal_res[k, :n_bal[k]], bal_kind[k, :n_bal[k]],
        pod_cls[p0:p0 + e], arrive[p0:p0 + e], depart[p0:p0 + e], duration[p0:p0 + e],
        backoff0, backoff_max, max_unsched, num_to_find[b], seed_mixes[b],
        out_node[p0:p0 + e], out_bind[p0:p0 + e], out_tries[p0:p0 + e], out_why[v0:v1],
        log_t[p0 + v0:p0 + e + v1], log_pod[p0 + v0:p0 + e + v1], n_log[b:b + 1],
        end[b:b + 1], nd[0, :m], nd[1, :m], nd[2, :m], hi_all[b], qi_all[b], qf_all[b],
        pd[0, :e], pd[1, :e], pf[0, :e], ring[0, :e2], ring[1, :e2], hk_all[b, :e2],
        ring[2, :e2], ring[3, :e2], pf[1, :q1], pd[2, :q1], pd[3, :q1], rank[p0:p0 + e],
        ak_all[b], pd[4, :q1], valid, rej, fit_interest, korder[p0:p0 + e], ev_t[e0:e1],
        ev_kind[e0:e1], ev_node[e0:e1], ev_x[e0:e1], ev_find[e0:e1], ev_bound[e0:e1],
        ev_used[e0:e1], ev_nz[e0:e1], alloc, used0, nz0, static_bits, static_raw, u_rej,
        prio[v0:v1], may[v0:v1], krank[v0:v1],
        pstart[v0:v1], preq[v0:v1], pnz[v0:v1], bnode[v0 - p0:v1 - p0 - e], pct[b], least[b],
        out_victim[v0:v1], vd[0, :w1], pd[5, :q1], nd[3, :m], nd[4, :m], vd[1, :w1],
        vd[2, :w1], vd[3, :w1], vd[4, :8], nd[5, :m], nd[6, :m], nd[7, :m], sraw_all[b, :m],
        n_pdb[b], pdb_kind[b], pdb_val[b], pmatch[v0:v1], left_all[b], vd[5, :w1], grace,
        vicf_all[b, :w1], vd[6, :w1], vicf_all[b, w1:3 * w1], tq_all[b])


def run_local_preempt_events_cuda(pe: LocalPreemptEvents) -> tuple:
    """Every cluster of ``pe`` (checked first) on the device, one launch:
    ``local_preempt_events.run_local_preempt_events``' (``TraceResult``,
    ``why``, ``victim``, ``evicted_at``)."""
    pe.check()
    p = pe.preempt
    ev = pe.events
    t = p.trace
    a = t.batch
    n_pods = a.pod_cls.shape[0]
    nb = a.n_clusters
    n_vic = int(p.vic_ptr[-1])
    rows = max(log_rows(p), 1)
    out = empty_trace_result(n_pods, nb)
    out = out._replace(log_t=np.zeros(rows, np.float64), log_pod=np.zeros(rows, np.int64))
    why = np.zeros(n_vic, np.int64)
    victim = np.zeros(n_vic, np.int64)
    evicted_at = np.full(n_vic, np.nan)
    if nb == 0:
        return out, why, victim, evicted_at
    host = (*trace_host_inputs(t, trace_profiles(t)), *event_host_inputs(ev), *p.inputs(),
            *p.pdb_inputs())
    ins = [cuda.to_device(x) for x in host]
    nmax, emax = cluster_extent(a)
    wmax = max(8, int(np.diff(p.vic_ptr).max()))
    c, r = class_count(a), a.alloc.shape[1]
    e2 = 2 * emax
    da = cuda.device_array
    outs = trace_outputs(n_pods, nb, rows, extras=(n_vic, n_vic))
    scratch = node_scratch(nb, nmax, c, r) + [
        da((nb, c, nmax), np.int64), da((nb, nmax), np.bool_),
        da((nb, 8, nmax), np.int64), da((nb, nmax, N_SLOTS), np.int64),
        da((nb, 2 * N_SLOTS), np.int64), da((nb, _queue.QI_EV_N), np.int64),
        da((nb, _queue.QF_N), np.float64), da((nb, 6, emax), np.int64),
        da((nb, 2, emax), np.float64), da((nb, 4, e2), np.int64),
        da((nb, e2), np.float64), da((nb, e2 if t.rank is not None else 0), np.int64),
        da((nb, 7, wmax), np.int64), da((nb, 2, p.pmatch.shape[1]), np.int64),
        float(p.grace), da((nb, 3 * wmax), np.float64),
        cuda.to_device(np.zeros((nb, _local_preempt.TQ_N), np.int64))]
    _kernel[nb, 32](*ins, int(ev.fit_interest), float(t.backoff0), float(t.backoff_max),
                    float(t.max_unsched), *outs, *scratch)
    check_terminating(scratch[-1].copy_to_host()[:, _local_preempt.T_OVER])
    got_why, got_victim = copy_results(outs, out, n_pods, extras=2)
    why[:] = got_why[:n_vic]
    victim[:] = got_victim[:n_vic]
    evicted_at[:] = first_evictions(scratch[-2].copy_to_host(), p.vic_ptr)
    return out, why, victim, evicted_at


__all__ = ["run_local_preempt_events_cuda"]
