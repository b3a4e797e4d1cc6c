"""The node-local trace form with DefaultPreemption in its queue as one
CUDA kernel: a thread block per cluster that gathers its nodes
(``local_trace_cuda.block_gather``) and whose thread 0 runs the CPU
twin's own loop steps (``_local_preempt.attempt_open`` /
``attempt_finish``: the queue, the nominated overlay, the bindings,
evictions and terminations) as device functions, while every thread of
the block picks each attempt's node between them (``local_cuda.
block_pick``, as ``local_trace_cuda``'s trace form picks: the twin's
``pick_next`` answer, threads over the nodes) and runs PostFilter's
victim search for a pod that fits nowhere (``block_preempt_on``: the
twin's ``preempt_on`` answer, threads over the rows, the pick by block
reductions; its walk of the rows' lists shared with the openb engines'
``cuda.block_post_filter``).
``run_local_preempt_cuda(p)`` answers what ``local_preempt.
run_local_preempt(p)`` answers (tested under the simulator).  Importing
this module without a device or the simulator raises
``BackendUnavailable``.
"""

from __future__ import annotations

import numpy as np

from . import _gpu_preempt as _gp
from . import _local_core, _local_preempt, _queue
from .cuda import block_row_lists
from .local_cpu import TraceResult, empty_trace_result, trace_profiles
from .local_cuda import THREADS, block_pick
from .local_preempt import LocalPreempt, check_terminating, log_rows
from .warp import BIG, NEG, WARPS, block_scan, block_top
from .local_trace_cuda import (
    PREEMPT_DEVICE_NAMESPACE,
    block_gather,
    class_count,
    cluster_args,
    cluster_extent,
    copy_results,
    node_scratch,
    trace_host_inputs,
    trace_outputs,
)

from numba import cuda, int64  # noqa: E402

N_SLOTS = _local_core.N_SLOTS
# a module constant: the device compiler takes a shared array's size as a literal only
HI_SLOTS = 2 * N_SLOTS

_pns = PREEMPT_DEVICE_NAMESPACE
_start_answers = _pns["start_answers"]
_trace_start = _pns["trace_start"]
_trace_end = _pns["trace_end"]
_preempt_start = _pns["preempt_start"]
_open = _pns["attempt_open"]
_search_due = _pns["search_due"]
_finish = _pns["attempt_finish"]
_victims_on = _pns["victims_on"]
_pdb_allowed = _pns["pdb_allowed"]
_better = _pns["better"]
_num_candidates = _pns["num_candidates"]
_preempt_offset = _pns["preempt_offset"]

# vs columns of ``block_preempt_on``'s per-row scratch [N, LVS_N]: the
# openb search's V_LOW / V_OFF (``cuda.block_row_lists``), then the row's
# ``victims_on`` statistics (top priority, sum, earliest start, PDB
# violations) and its victims' count (0: not a candidate)
LV_STATS = 6
LV_NV = 10
LVS_N = 11


@cuda.jit(device=True)
def _stop(n_ok, n_bad, cap):
    """``preempt_on``'s end of the visit: a non-violating candidate listed
    and the two lists holding numCandidates together."""
    return n_ok >= 1 and min(n_ok, cap) + min(n_bad, cap) >= cap


@cuda.jit(device=True)
def block_potential(c, rows, nrows, static_bits, pot, buf, sh):
    """The rows where preemption might help (``post_filter`` /
    ``live_potential``: the usage-independent filters pass class ``c``,
    ``static_bits[c, i]`` 0) among ``rows[:nrows]`` (``rows`` empty: rows
    0 .. nrows - 1), in order, into ``pot`` by block scans, THREADS rows
    a round; every thread gets how many."""
    tid = cuda.threadIdx.x
    listed = rows.shape[0] > 0
    m = 0
    for base in range(0, nrows, THREADS):
        t = base + tid
        i = 0
        f = 0
        if t < nrows:
            i = rows[t] if listed else t
            if static_bits[c, i] == 0:
                f = 1
        x, total = block_scan(f, buf, sh)
        if f == 1:
            pot[m + x - 1] = i
        m += total
    cuda.syncthreads()
    return m


@cuda.jit(device=True)
def block_preempt_on(j, c, m, n, attempt, seed_mix, pct, least, alloc, used, c_request,
                     c_anything, c_ignored, c_fit_filter, preq, prio, pstart, krank, pst, gone,
                     victim, pot, head, nxt, cur, vout, stats, n_pdb, pdb_kind, pdb_val, pmatch,
                     left, vflag, vs, slot_cur, buf, sh):
    """``_local_preempt.preempt_on``'s answer with the block's threads
    (every thread gets (the node, -1 none; its victims' count; the lowest
    bound priority), the victims in ``vout`` most important first, the
    winner's statistics in ``stats[4:8]``): every row's list of bound pods
    walked a thread a row (``cuda.block_row_lists``: the lowest bound
    priority, each row's lower-priority pods in its own range of ``cur``);
    each thread runs ``victims_on`` for its potential rows (its row of
    ``used``, its range of ``cur`` and ``vflag``, its own PDB rows
    ``left[2 + 2 tid:4 + 2 tid]``: ``left`` [2 + 2 THREADS, .]), the
    statistics in ``vs`` [N, LVS_N]; then the visit from the seeded offset,
    THREADS positions a round, two block scans counting the non-violating
    and the violating candidates (each list its first numCandidates, the
    visit ending as ``preempt_on``'s), each thread keeping its best listed
    candidate (``better``, the first visited on a tie), and the pick by
    five block reductions: the fewest violations, the lowest highest
    priority, the smallest sum, the fewest victims, the latest earliest
    start with the first visit position.  ``slot_cur`` [1] block-shared."""
    tid = cuda.threadIdx.x
    pj = prio[j]
    for i in range(tid, n, THREADS):
        vs[i, LV_NV] = 0
    cuda.syncthreads()
    low, lowest = block_row_lists(pj, pot[:0], n, prio, pst, gone, head, nxt, cur, vs, slot_cur,
                                  buf, sh)
    if m == 0 or low == 0:
        return -1, 0, lowest
    if tid == 0 and n_pdb > 0:
        _pdb_allowed(n_pdb, pdb_kind, pdb_val, pmatch, pst, gone, victim, left[0])
    cuda.syncthreads()
    mine = left[2 + 2 * tid:4 + 2 * tid]
    for p in range(n_pdb):
        mine[0, p] = left[0, p]
    for q in range(tid, m, THREADS):
        i = pot[q]
        k = vs[i, _gp.V_LOW]
        if k > 0:
            o = vs[i, _gp.V_OFF]
            vs[i, LV_NV] = _victims_on(i, c, k, cur[o:o + k], alloc, used, c_request, c_anything,
                                       c_ignored, c_fit_filter, preq, prio, pstart, krank,
                                       vs[i, LV_STATS:LV_STATS + 4], n_pdb, pmatch, mine,
                                       vflag[o:o + k])
    cuda.syncthreads()
    cap = _num_candidates(m, pct, least)
    listed = max(cap, 1)
    off = _preempt_offset(seed_mix, attempt, m)
    # this thread's best listed candidate: its row and visit position
    bi = -1
    bp = BIG
    n_ok = 0
    n_bad = 0
    for base in range(0, m, THREADS):
        t = base + tid
        i = 0
        ok = 0
        bad = 0
        if t < m:
            q = off + t
            if q >= m:
                q -= m
            i = pot[q]
            if vs[i, LV_NV] > 0:
                if vs[i, LV_STATS + 3] > 0:
                    bad = 1
                else:
                    ok = 1
        x_ok, t_ok = block_scan(ok, buf, sh)
        x_bad, t_bad = block_scan(bad, buf, sh)
        # visited: the visit had not ended at the position before
        if (ok + bad > 0 and not _stop(n_ok + x_ok - ok, n_bad + x_bad - bad, cap)
                and (n_ok + x_ok <= listed if ok == 1 else n_bad + x_bad <= listed)
                and (bi < 0 or _better(vs[i, LV_NV], vs[i, LV_STATS:LV_STATS + 4],
                                       vs[bi, LV_NV], vs[bi, LV_STATS:LV_STATS + 4]))):
            bi = i
            bp = t
        n_ok += t_ok
        n_bad += t_bad
        if _stop(n_ok, n_bad, cap):
            break
    hold = bi >= 0
    s = LV_STATS
    x, _c, _r = block_top(-vs[bi, s + 3] if hold else NEG, 0, BIG, buf, sh)
    if x == NEG:
        return -1, 0, lowest
    hold = hold and -vs[bi, s + 3] == x
    x, _c, _r = block_top(-vs[bi, s] if hold else NEG, 0, BIG, buf, sh)
    hold = hold and -vs[bi, s] == x
    x, _c, _r = block_top(-vs[bi, s + 1] if hold else NEG, 0, BIG, buf, sh)
    hold = hold and -vs[bi, s + 1] == x
    x, _c, _r = block_top(-vs[bi, LV_NV] if hold else NEG, 0, BIG, buf, sh)
    hold = hold and -vs[bi, LV_NV] == x
    _x, _c, t = block_top(vs[bi, s + 2] if hold else NEG, 0, bp if hold else BIG, buf, sh)
    q = off + t
    if q >= m:
        q -= m
    best = pot[q]
    nv = vs[best, LV_NV]
    if tid == 0:
        for a in range(4):
            stats[4 + a] = vs[best, s + a]
        o = vs[best, _gp.V_OFF]
        for a in range(nv):
            vout[a] = cur[o + a]
    cuda.syncthreads()
    return best, nv, lowest


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
            hk_all, dk_all, ak_all, left_all, grace, vicf_all, tq_all, vs_all):
    """Cluster ``blockIdx.x``: the block gathers its nodes, thread 0 runs the
    cluster loop's steps (``_local_preempt.attempt_open`` /
    ``attempt_finish``: the queue, the nominated overlay, the bindings,
    evictions and terminations), every thread of the block picks each
    attempt's node between them (``local_cuda.block_pick``: the twin's
    ``pick_next``) and searches for victims (``block_preempt_on``, where
    ``search_due``; ``vs_all`` [B, n, LVS_N] its per-row scratch); the
    scratch ``*_all`` padded per cluster
    (``node_all`` [B, 10, n] and ``pod_all`` [B, 15, e] int64 rows of
    per-node and per-pod scratch, e the most queue and bound pods of a
    cluster; ``grace`` the termination grace, ``vicf_all`` [B, 3e] float64
    its eviction times and deadline ring, ``tq_all`` [B, TQ_N] its
    slots)."""
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
    v0 = vic_ptr[b]
    v1 = vic_ptr[b + 1]
    w1 = max(v1 - v0, 1)
    k = profile[b]
    m = max(n, 1)
    e1 = max(e, 1)
    e2 = max(2 * e, 1)
    nd = node_all[b]
    pd = pod_all[b]
    ring = ring_all[b]
    (a, u, z, sb, rs, raw, strat, fr, fk, fw, su, ss, br, bk, cls, arr, dep, dur, rk, pr, my,
     kr, ps, pq, pz) = cluster_args(
        b, k, n, p0, e, v0, v1, alloc_all, used_all, nz_all, sb_all, reasons_all, raw_all,
        strategy, fit_res, fit_kind, fit_weights, n_fit, shape_util, shape_score, n_shape,
        bal_res, bal_kind, n_bal, pod_cls, arrive, depart, duration, rank, prio, may, krank,
        pstart, preq, pnz)
    smix = seed_mixes[b]
    to_find = num_to_find[b]
    onode = pd[0, :e]
    obind = out_bind[p0:p0 + e]
    lt = log_t[p0 + v0:p0 + e + v1]
    lp = log_pod[p0 + v0:p0 + e + v1]
    khi = hi_all[b, 1]
    kcnt = hi_all[b, 2]
    tkey = tkey_all[b]
    ocls = cls_all[b]
    oraw = craw_all[b]
    dirty = nd[3, :1]
    qi = qi_all[b]
    qf = qf_all[b]
    pst = pd[1, :e]
    patt = pd[2, :e]
    pts = pts_all[b, 0, :e]
    aq = ring[0, :e2]
    up = ring[1, :e2]
    hk = hk_all[b, 0, :e2]
    hs = ring[2, :e2]
    hp = ring[3, :e2]
    dk = dk_all[b, :e1]
    ds = pd[3, :e1]
    dp = pd[4, :e1]
    ak = ak_all[b]
    bn = bnode[v0 - p0:v1 - p0 - e]
    pc = pct[b]
    le = least[b]
    ov = out_victim[v0:v1]
    nom = pd[5, :e1]
    nlist = pd[14, :e1]
    pot = nd[4, :m]
    head = nd[5, :m]
    nxt = pd[6, :w1]
    cur = pd[7, :w1]
    vout = pd[8, :w1]
    stats = pd[9, :8]
    mark = nd[6, :m]
    touched = nd[7, :m]
    sbits = nd[8, :m]
    sraw = nraw_all[b, 0, :m]
    npdb = n_pdb[b]
    pkind = pdb_kind[b]
    pval = pdb_val[b]
    pm = pmatch[v0:v1]
    left = left_all[b]
    vflag = pd[10, :w1]
    vt = vicf_all[b, :w1]
    tqp = pd[11, :w1]
    tqt = vicf_all[b, w1:3 * w1]
    tq = tq_all[b]
    gone = pd[12, :w1]
    ls = pd[13, :8]
    flags = nd[9, :m]
    # (no node events: no presence nor rejector codes, ``node_rows[:0]``)
    block_gather(off, n, image_group[b], node_rows, alloc, used0, nz0, static_bits, static_raw,
                 image_raw, a, u, z, sb, raw, node_rows[:0], sb[:0], node_rows[:0], sb[:0])
    if tid == 0:
        _start_answers(a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
                       c_active, c_norm, c_weights, sb, rs, raw, strat, fr, fk, fw, su, ss, br,
                       bk, to_find, nd[0, :m], khi, kcnt, smix, tkey)
        _trace_start(cls, onode, obind, qi, qf, pst, patt, pts)
        _preempt_start(e, ov, nom, mark, tq, gone, vt[:v1 - v0], head, nxt, bn, ls)
        # the block picks from the answers themselves: no key trees kept
        ls[_local_preempt.L_EVERY] = 0
    cuda.syncthreads()
    start = 0
    while True:
        if tid == 0:
            cmd[0] = _open(a, u, z, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
                           c_active, c_norm, c_weights, sb, rs, raw, strat, fr, fk, fw, su, ss, br,
                           bk, cls, arr, dep, dur, backoff0, backoff_max, max_unsched, smix, onode,
                           obind, lt, lp, khi, kcnt, tkey, ocls, oraw, dirty, qi, qf, pst, patt,
                           pts, aq, up, hk, hs, hp, dk, ds, dp, rk, ak, pr, my, kr, ps, pq, pz, bn,
                           pc, le, ov, nom, nlist, pot, head, nxt, cur, vout, stats, mark,
                           touched, sbits, sraw, npdb, pkind, pval, pm, left, vflag, grace, vt,
                           tqp, tqt, tq, gone, ls)
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
        if n > 0:
            i, processed = block_pick(cls[j], n, start, to_find, smix, u, rs, raw, c_active,
                                      c_norm, c_weights, flags, bhi, buf, sh)
            start += processed
            while start >= n:
                start -= n
        # PostFilter's search with the whole block (``block_preempt_on``:
        # the twin's ``post_filter``), the rest of the attempt on thread 0
        if tid == 0:
            cmd[0] = 1 if _search_due(j, i, n, grace, my, pr, nom, pst, gone, ov, head, nxt,
                                      ls[_local_preempt.L_LOW]) else 0
        cuda.syncthreads()
        target = -1
        n_vic = 0
        if cmd[0] == 1:
            mm = block_potential(cls[j], node_rows[:0], n, sb, pot, buf, sh)
            target, n_vic, lowest = block_preempt_on(
                j, cls[j], mm, n, qi[_local_preempt.Q_ATTEMPT], smix, pc, le, a, u, c_request,
                c_anything, c_ignored, c_fit_filter, pq, pr, ps, kr, pst, gone, ov, pot, head,
                nxt, cur, vout, stats, npdb, pkind, pval, pm, left, vflag, vs_all[b], slot_cur,
                buf, sh)
            if tid == 0:
                ls[_local_preempt.L_LOW] = lowest
        if tid == 0:
            _finish(j, i, target, n_vic, a, u, z, c_request, c_nonzero, c_anything, c_ignored,
                    c_fit_filter, c_active, c_norm, c_weights, sb, rs, raw, strat, fr, fk, fw, su,
                    ss, br, bk, cls, arr, dep, dur, backoff0, backoff_max, max_unsched, smix,
                    onode, obind, lt, lp, khi, kcnt, tkey, ocls, oraw, dirty, qi, qf, pst, patt,
                    pts, aq, up, hk, hs, hp, dk, ds, dp, rk, ak, pr, my, kr, ps, pq, pz, bn, pc,
                    le, ov, nom, nlist, pot, head, nxt, cur, vout, stats, mark, touched, sbits,
                    sraw, npdb, pkind, pval, pm, left, vflag, grace, vt, tqp, tqt, tq, gone, ls)
        cuda.syncthreads()
    if tid == 0:
        _trace_end(ls[_local_preempt.L_M], qf, patt, n_log[b:b + 1], end[b:b + 1],
                   out_tries[p0:p0 + e])
    cuda.syncthreads()
    for jj in range(tid, e, THREADS):
        out_node[p0 + jj] = node_rows[off + onode[jj]] if onode[jj] >= 0 else -1


def run_local_preempt_cuda(p: LocalPreempt) -> tuple[TraceResult, np.ndarray, np.ndarray]:
    """Every cluster of ``p`` (checked first) on the device, one launch:
    ``local_preempt.run_local_preempt``'s (``TraceResult``, victim,
    evicted_at)."""
    p.check()
    t = p.trace
    a = t.batch
    n_pods = a.pod_cls.shape[0]
    nb = a.n_clusters
    out = empty_trace_result(n_pods, nb)
    n_vic = int(p.vic_ptr[-1])
    rows = max(log_rows(p), 1)
    victim = np.zeros(n_vic, np.int64)
    evicted_at = np.full(n_vic, np.nan)
    out = out._replace(log_t=np.zeros(rows, np.float64), log_pod=np.zeros(rows, np.int64))
    if nb == 0:
        return out, victim, evicted_at
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
        da((nb, 10, nmax), np.int64), da((nb, 1, nmax, N_SLOTS), np.int64),
        # hi_all[b, 0, 0]: hi_scratch [2S]; [b, 1] / [b, 2]: hi, hi_cnt [C, 2S]
        zeros((nb, 3, c, 2 * N_SLOTS)), da((nb, c, 2 * size), np.int64),
        da((nb, c), np.int64), da((nb, c, N_SLOTS), np.int64),
        da((nb, _queue.QI_N), np.int64), da((nb, _queue.QF_N), np.float64),
        da((nb, 15, wmax), np.int64), da((nb, 1, emax), np.float64),
        da((nb, 4, e2), np.int64), da((nb, 1, e2), np.float64),
        da((nb, emax), np.float64), da((nb, e2 if t.rank is not None else 0), np.int64),
        # (each PDB's disruptionsAllowed, then two rows per thread: block_preempt_on)
        da((nb, 2 + 2 * THREADS, p.pmatch.shape[1]), np.int64), float(p.grace),
        da((nb, 3 * wmax), np.float64),
        cuda.to_device(np.zeros((nb, _local_preempt.TQ_N), np.int64)),
        da((nb, max(nmax, 1), LVS_N), np.int64)]
    _kernel[nb, THREADS](*ins, float(t.backoff0), float(t.backoff_max), float(t.max_unsched),
                    *outs, *scratch)
    check_terminating(scratch[-2].copy_to_host()[:, _local_preempt.T_OVER])
    victim[:] = copy_results(outs, out, n_pods)[0][:n_vic]
    evicted_at[:] = first_evictions(scratch[-3].copy_to_host(), p.vic_ptr)
    return out, victim, evicted_at


def first_evictions(vicf: np.ndarray, vic_ptr: np.ndarray) -> np.ndarray:
    """Each pod's first eviction's time [sum (P + Bb)] from the kernel's
    per-cluster float rows ``vicf`` [B, >= P + Bb] (their first P + Bb
    entries: the cluster's ``vt``)."""
    sizes = np.diff(np.asarray(vic_ptr, np.int64))
    if not sizes.sum():
        return np.zeros(0, np.float64)
    return np.concatenate([vicf[b, :w] for b, w in enumerate(sizes.tolist())])


__all__ = ["block_preempt_on", "first_evictions", "run_local_preempt_cuda", "LVS_N"]
