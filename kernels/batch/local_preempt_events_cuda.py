"""The node-local trace form with DefaultPreemption and node events as one
CUDA kernel: a thread block per cluster that gathers its nodes
(``local_trace_cuda.block_gather``) and whose thread 0 runs the CPU
twin's own loop steps (``_local_preempt_events.
events_start`` / ``events_open`` / ``events_finish``: the queue, the
node events, the nominated overlay, the bindings, evictions and
terminations) as device functions (the block gathers the nodes first:
``local_trace_cuda.block_gather``), while every thread of the block picks
each attempt's node between them over the live rows
(``local_cuda.block_pick_rows``: the twin's ``pick_live`` answer, threads
over the live nodes) and runs PostFilter's victim search over the live
potential rows (``local_preempt_cuda.block_preempt_on``: the twin's
``preempt_on`` answer), as ``local_preempt_cuda`` does without node events.
``run_local_preempt_events_cuda(pe)`` answers what
``local_preempt_events.run_local_preempt_events(pe)`` answers (tested
under the simulator).  Importing this module without a device or the
simulator raises ``BackendUnavailable``.
"""

from __future__ import annotations

import numpy as np

from . import _local_core, _local_preempt, _local_preempt_events, _queue
from .local_cpu import empty_trace_result, trace_profiles
from .local_cuda import THREADS, block_pick_rows
from .local_preempt import check_terminating, log_rows
from .local_preempt_cuda import LVS_N, block_potential, block_preempt_on, first_evictions
from .local_preempt_events import LocalPreemptEvents
from .warp import WARPS
from .local_trace_cuda import (
    PREEMPT_EVENTS_DEVICE_NAMESPACE,
    block_gather,
    class_count,
    cluster_args,
    cluster_extent,
    copy_results,
    event_host_inputs,
    node_scratch,
    trace_host_inputs,
    trace_outputs,
)

from numba import cuda, int64  # noqa: E402

N_SLOTS = _local_core.N_SLOTS
# a module constant: the device compiler takes a shared array's size as a literal only
HI_SLOTS = 2 * N_SLOTS
EL_NV = _local_preempt_events.EL_NV
EL_START = _local_preempt_events.EL_START
EL_TO_FIND = _local_preempt_events.EL_TO_FIND
EL_M = _local_preempt_events.EL_M
EL_N = _local_preempt_events.EL_N

# the twin's loop steps (``local_trace_cuda`` compiles them for the device)
_start = PREEMPT_EVENTS_DEVICE_NAMESPACE["events_start"]
_open = PREEMPT_EVENTS_DEVICE_NAMESPACE["events_open"]
_search_due = PREEMPT_EVENTS_DEVICE_NAMESPACE["events_search_due"]
_finish = PREEMPT_EVENTS_DEVICE_NAMESPACE["events_finish"]
_trace_end = PREEMPT_EVENTS_DEVICE_NAMESPACE["trace_end"]


@cuda.jit
def _kernel(alloc, used0, nz0, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
            c_active, c_norm, c_weights, static_bits, static_raw, image_raw, strategy, fit_res,
            fit_kind, fit_weights, n_fit, shape_util, shape_score, n_shape, bal_res, bal_kind,
            n_bal, profile, node_ptr, node_rows, pod_ptr, pod_cls, image_group, num_to_find,
            seed_mixes, arrive, depart, duration, rank, valid0, u_rej, korder, ev_ptr, ev_t,
            ev_kind, ev_node, ev_x, ev_find, ev_bound, ev_used, ev_nz, vic_ptr, prio, may, krank,
            pstart, preq, pnz, bnode, pct, least, n_pdb, pdb_kind, pdb_val, pmatch, fit_interest,
            backoff0, backoff_max, max_unsched, out_node, out_bind, out_tries, out_why,
            out_victim, log_t, log_pod, n_log, end, alloc_all, used_all, nz_all, sb_all,
            reasons_all, raw_all, rej_all, valid_all, node_all, sraw_all, hi_all, qi_all, qf_all,
            pod_all, podf_all, ring_all, hk_all, ak_all, vic_all, left_all, grace, vicf_all,
            tq_all, vs_all):
    """Cluster ``blockIdx.x``: the block gathers its nodes, thread 0 runs the
    cluster loop's steps (``_local_preempt_events.events_start`` /
    ``events_open`` / ``events_close``: the queue, the node events, the
    nominated overlay, PostFilter, the bindings, evictions and
    terminations), every thread of the block picks each attempt's node
    over the live rows between them (``local_cuda.block_pick_rows``: the
    twin's ``pick_live``); the scratch ``*_all`` padded per cluster
    (``node_all`` [B, 9, n], ``pod_all`` [B, 7, e], ``podf_all`` [B, 2,
    e], ``ring_all`` [B, 4, 2e], ``vic_all`` [B, 8, w] int64 rows of
    per-node, per-pod and per-victim-row scratch, its row 7 the loop's
    scalars; ``grace`` the termination grace, ``vicf_all`` [B, 3w]
    float64 its eviction times and deadline ring, ``tq_all`` [B, TQ_N]
    its slots)."""
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    buf = cuda.shared.array((3, THREADS), int64)
    sh = cuda.shared.array((WARPS, 3), int64)
    bhi = cuda.shared.array(HI_SLOTS, int64)     # block_pick's normalization
    cmd = cuda.shared.array(2, int64)                # thread 0's step answer, for all
    slot_cur = cuda.shared.array(1, int64)           # block_preempt_on's slot cursor
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
    m = max(n, 1)
    q1 = max(e, 1)
    e2 = max(2 * e, 1)
    nd = node_all[b]
    pd = pod_all[b]
    pf = podf_all[b]
    ring = ring_all[b]
    vd = vic_all[b]
    (a, u, z, sb, rs, raw, strat, fr, fk, fw, su, ss, br, bk, cls, arr, dep, dur, rk, pr, my,
     kr, ps, pq, pz) = cluster_args(
        b, k, n, p0, e, v0, v1, alloc_all, used_all, nz_all, sb_all, reasons_all, raw_all,
        strategy, fit_res, fit_kind, fit_weights, n_fit, shape_util, shape_score, n_shape,
        bal_res, bal_kind, n_bal, pod_cls, arrive, depart, duration, rank, prio, may, krank,
        pstart, preq, pnz)
    rej = rej_all[b, :, :n]
    valid = valid_all[b, :n]
    to_find = num_to_find[b]
    smix = seed_mixes[b]
    onode = out_node[p0:p0 + e]
    obind = out_bind[p0:p0 + e]
    otries = out_tries[p0:p0 + e]
    owhy = out_why[v0:v1]
    lt = log_t[p0 + v0:p0 + e + v1]
    lp = log_pod[p0 + v0:p0 + e + v1]
    nlog = n_log[b:b + 1]
    oend = end[b:b + 1]
    positions = nd[0, :m]
    tot = nd[1, :m]
    ties = nd[2, :m]
    hsc = hi_all[b]
    qi = qi_all[b]
    qf = qf_all[b]
    pst = pd[0, :e]
    patt = pd[1, :e]
    pts = pf[0, :e]
    aq = ring[0, :e2]
    up = ring[1, :e2]
    hk = hk_all[b, :e2]
    hs = ring[2, :e2]
    hp = ring[3, :e2]
    dk = pf[1, :q1]
    ds = pd[2, :q1]
    dp = pd[3, :q1]
    ak = ak_all[b]
    pmask = pd[4, :q1]
    kord = korder[p0:p0 + e]
    et = ev_t[e0:e1]
    ekind = ev_kind[e0:e1]
    enode = ev_node[e0:e1]
    ex = ev_x[e0:e1]
    efind = ev_find[e0:e1]
    ebound = ev_bound[e0:e1]
    eused = ev_used[e0:e1]
    enz = ev_nz[e0:e1]
    bn = bnode[v0 - p0:v1 - p0 - e]
    pc = pct[b]
    le = least[b]
    ov = out_victim[v0:v1]
    bgone = vd[0, :w1]
    nom = pd[5, :q1]
    nlist = pd[6, :q1]
    pot = nd[3, :m]
    head = nd[4, :m]
    nxt = vd[1, :w1]
    cur = vd[2, :w1]
    vout = vd[3, :w1]
    stats = vd[4, :8]
    mark = nd[5, :m]
    touched = nd[6, :m]
    sbits = nd[7, :m]
    sraw = sraw_all[b, :m]
    npdb = n_pdb[b]
    pkind = pdb_kind[b]
    pval = pdb_val[b]
    pm = pmatch[v0:v1]
    left = left_all[b]
    vflag = vd[5, :w1]
    vt = vicf_all[b, :w1]
    tqp = vd[6, :w1]
    tqt = vicf_all[b, w1:3 * w1]
    tq = tq_all[b]
    ls = vd[7, :EL_N]
    flags = nd[8, :m]
    block_gather(off, n, image_group[b], node_rows, alloc, used0, nz0, static_bits, static_raw,
                 image_raw, a, u, z, sb, raw, valid0, u_rej, valid, rej)
    if tid == 0:
        _start(a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter, c_active,
               c_norm, c_weights, sb, rs, raw, strat, fr, fk, fw, su, ss, br, bk, cls, arr, dep,
               dur, backoff0, backoff_max, max_unsched, to_find, smix, onode, obind, otries, owhy,
               lt, lp, nlog, oend, positions, tot, ties, hsc, qi, qf, pst, patt, pts, aq, up, hk,
               hs, hp, dk, ds, dp, rk, ak, pmask, valid, rej, fit_interest, kord, et, ekind, enode,
               ex, efind, ebound, eused, enz, alloc, used0, nz0, static_bits, static_raw, u_rej,
               pr, my, kr, ps, pq, pz, bn, pc, le, ov, bgone, nom, nlist, pot, head, nxt, cur,
               vout, stats, mark, touched, sbits, sraw, npdb, pkind, pval, pm, left, vflag, grace,
               vt, tqp, tqt, tq, ls)
    cuda.syncthreads()
    while True:
        if tid == 0:
            cmd[0] = _open(a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
                           c_active, c_norm, c_weights, sb, rs, raw, strat, fr, fk, fw, su, ss, br,
                           bk, cls, arr, dep, dur, backoff0, backoff_max, max_unsched, to_find,
                           smix, onode, obind, otries, owhy, lt, lp, nlog, oend, positions, tot,
                           ties, hsc, qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rk,
                           ak, pmask, valid, rej, fit_interest, kord, et, ekind, enode, ex, efind,
                           ebound, eused, enz, alloc, used0, nz0, static_bits, static_raw, u_rej,
                           pr, my, kr, ps, pq, pz, bn, pc, le, ov, bgone, nom, nlist, pot, head,
                           nxt, cur, vout, stats, mark, touched, sbits, sraw, npdb, pkind, pval,
                           pm, left, vflag, grace, vt, tqp, tqt, tq, ls)
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
        # PostFilter's search with the whole block (``block_preempt_on`` over
        # the live potential rows: the twin's ``preempt_on``), the rest of
        # the attempt on thread 0
        if tid == 0:
            if nv > 0:
                ls[EL_START] = (ls[EL_START] + processed) % nv
            cmd[0] = 1 if _search_due(j, i, my, pr, nom, pst, bgone, ov, head, nxt, grace,
                                      ls[_local_preempt_events.EL_LOW]) else 0
        cuda.syncthreads()
        target = -1
        n_vic = 0
        if cmd[0] == 1:
            mm = block_potential(cls[j], positions, nv, sb, pot, buf, sh)
            target, n_vic, lowest = block_preempt_on(
                j, cls[j], mm, n, qi[_local_preempt.Q_ATTEMPT], smix, pc, le, a, u, c_request,
                c_anything, c_ignored, c_fit_filter, pq, pr, ps, kr, pst, bgone, ov, pot, head,
                nxt, cur, vout, stats, npdb, pkind, pval, pm, left, vflag, vs_all[b], slot_cur,
                buf, sh)
            if tid == 0:
                ls[_local_preempt_events.EL_LOW] = lowest
        if tid == 0:
            _finish(j, i, target, n_vic, a, u, z, c_request, c_nonzero, c_anything, c_ignored,
                    c_fit_filter, c_active, c_norm, c_weights, sb, rs, raw, strat, fr, fk, fw, su,
                    ss, br, bk, cls, arr, dep, dur, backoff0, backoff_max, max_unsched, to_find,
                    smix, onode, obind, otries, owhy, lt, lp, nlog, oend, positions, tot, ties,
                    hsc, qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rk, ak, pmask,
                    valid, rej, fit_interest, kord, et, ekind, enode, ex, efind, ebound, eused,
                    enz, alloc, used0, nz0, static_bits, static_raw, u_rej, pr, my, kr, ps, pq,
                    pz, bn, pc, le, ov, bgone, nom, nlist, pot, head, nxt, cur, vout, stats, mark,
                    touched, sbits, sraw, npdb, pkind, pval, pm, left, vflag, grace, vt, tqp, tqt,
                    tq, ls)
        cuda.syncthreads()
    if tid == 0:
        _trace_end(ls[EL_M], qf, patt, nlog, oend, otries)


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
    wmax = max(EL_N, int(np.diff(p.vic_ptr).max()))
    c, r = class_count(a), a.alloc.shape[1]
    e2 = 2 * emax
    da = cuda.device_array
    outs = trace_outputs(n_pods, nb, rows, extras=(n_vic, n_vic))
    scratch = node_scratch(nb, nmax, c, r) + [
        da((nb, c, nmax), np.int64), da((nb, nmax), np.bool_),
        da((nb, 9, nmax), np.int64), da((nb, nmax, N_SLOTS), np.int64),
        da((nb, 2 * N_SLOTS), np.int64), da((nb, _queue.QI_EV_N), np.int64),
        da((nb, _queue.QF_N), np.float64), da((nb, 7, emax), np.int64),
        da((nb, 2, emax), np.float64), da((nb, 4, e2), np.int64),
        da((nb, e2), np.float64), da((nb, e2 if t.rank is not None else 0), np.int64),
        # (each PDB's disruptionsAllowed, then two rows per thread: block_preempt_on)
        da((nb, 8, wmax), np.int64), da((nb, 2 + 2 * THREADS, p.pmatch.shape[1]), np.int64),
        float(p.grace), da((nb, 3 * wmax), np.float64),
        cuda.to_device(np.zeros((nb, _local_preempt.TQ_N), np.int64)),
        da((nb, max(nmax, 1), LVS_N), np.int64)]
    _kernel[nb, THREADS](*ins, int(ev.fit_interest), float(t.backoff0), float(t.backoff_max),
                    float(t.max_unsched), *outs, *scratch)
    check_terminating(scratch[-2].copy_to_host()[:, _local_preempt.T_OVER])
    got_why, got_victim = copy_results(outs, out, n_pods, extras=2)
    why[:] = got_why[:n_vic]
    victim[:] = got_victim[:n_vic]
    evicted_at[:] = first_evictions(scratch[-3].copy_to_host(), p.vic_ptr)
    return out, why, victim, evicted_at


__all__ = ["run_local_preempt_events_cuda"]
