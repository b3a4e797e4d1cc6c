"""The batched openb engine with timed node events on the device: the CPU
twin's source (``_openb_events``' steps on ``_rules``, ``_env`` and
``_queue``) compiled with ``cuda.jit(device=True)``, a thread block per
run.  Thread 0 runs the serial steps in the twin's order
(``events_open``: the queue, the node events, departures and
terminations, the nominated pods; ``preempt_waits``; ``events_close``:
the nominations, evictions, the binding and the log), the block the
per-node parts between them: the rows' start, each cycle's pick over
the rows (``cuda.block_decide``, the twin's ``decide``: an absent or
cordoned row fails by its pod slots) and DefaultPreemption's victim
search over the potential rows (``cuda.block_post_filter``, the twin's
``post_filter_rows``) and the fragmentation each change logs
(``block_frag``, the twin's ``live_frag``), so both forms give the same
bits.  Inputs and
outputs as ``openb_events.run_openb_events``; the state lives in device
memory, one upload and one download per call.

Importing this module without a device or the simulator raises
``BackendUnavailable``.
"""

from __future__ import annotations

import numpy as np

from tensorsched.kernels._deps import cuda_unavailable_reason
from tensorsched.kernels._errors import BackendUnavailable

_reason = cuda_unavailable_reason()
if _reason is not None:
    raise BackendUnavailable(f"backend 'cuda' cannot run: {_reason}")

from numba import cuda, float64, int64

from tensorsched.kernels._compile import compile_module
from tensorsched.kernels.mod64 import device_jit

from . import _candidates, _env, _gpu_preempt, _openb_events, _queue
from .arrays import BatchArrays
from .cuda import THREADS, block_decide, block_post_filter, device_rules
from .warp import WARPS, block_scan
from .openb_events import EventOutputs, NodeEvents, run_inputs, run_scenario
from .preempt_arrays import BatchPreempt, check_terminating

AFF_TAGS = 18
MAX_GPUS = 16
STACK = 64          # pairwise_sum's and pairwise_leaves' stack
PW_N = 7            # _gpu_preempt's pw columns, nw columns, ps slots
NW_N = 3
PS_N = 16
RS_N = _openb_events.RS_N
RS_KIND = _openb_events.RS_KIND
RS_WAITS = _openb_events.RS_WAITS
RS_NPOT = _openb_events.RS_NPOT
RS_DEFER = _openb_events.RS_DEFER
RS_F_FIRST = _openb_events.RS_F_FIRST
RS_F_ROW = _openb_events.RS_F_ROW
RS_F_N = _openb_events.RS_F_N
Q_CYCLE = _openb_events.Q_CYCLE

_env_ns = compile_module(_env, lambda f: cuda.jit(f, device=True), base=device_rules)
_cand_ns = compile_module(_candidates, device_jit(_candidates.WRAPS_MOD_2_64), base=_env_ns)
_pre_ns = compile_module(_gpu_preempt, lambda f: cuda.jit(f, device=True), base=_cand_ns)
_ev_ns = compile_module(_openb_events, lambda f: cuda.jit(f, device=True), base=_pre_ns)
_first_nodes = _ev_ns["first_nodes"]
_first_static = _ev_ns["first_static"]
_first_names = _ev_ns["first_names"]
_start_row = _ev_ns["start_row"]
_start = _ev_ns["events_start"]
_open = _ev_ns["events_open"]
_waits = _ev_ns["preempt_waits"]
_close = _ev_ns["events_close"]
_end = _ev_ns["events_end"]
_leaves = _ev_ns["pairwise_leaves"]
_pairwise = _ev_ns["pairwise_sum"]
_leaf_sum = _ev_ns["leaf_sum"]


def leaf_room(n: int) -> int:
    """The leaves ``pairwise_leaves`` gives at most for ``n`` rows (a
    leaf of a split holds 64 elements or more)."""
    return n // 64 + 1


@cuda.jit(device=True)
def block_frag(n, live, nfrag, fbuf, log_frag, rs, leaf_lo, leaf_len, leaf_val, s_lo, s_m,
               s_st, s_v, buf, sh):
    """The log rows thread 0's step left waiting for their fragmentation
    (``_openb_events.frag_log``: ``rs[RS_F_N]`` rows from ``rs[RS_F_FIRST]``,
    changes on row ``rs[RS_F_ROW]``, each holding that row's value then)
    get the live rows' sum then, ``live_frag``'s bits: the block gathers
    the live rows' values in row order into ``fbuf`` (a thread a range of
    rows, their places by a block scan), thread 0 lists the summation
    tree's leaves (``pairwise_leaves``: [n // 64 + 1] scratch), the block
    sums them (a thread a leaf), and thread 0, for each waiting row in
    turn, puts the row's value back in its place, sums its leaf again
    (where that value differs from the one summed) and adds the leaves up
    the tree (``pairwise_sum`` on the leaves' sums).
    Every thread calls it, past a barrier after the step; nothing waiting:
    nothing done but a barrier.  Every thread returns past a barrier after
    its read of the waiting count: thread 0's next step (a kernel's loop
    goes on to it with no barrier between) writes that count."""
    k = rs[_openb_events.RS_F_N]
    if k == 0:
        cuda.syncthreads()
        return
    tid = cuda.threadIdx.x
    row = rs[_openb_events.RS_F_ROW]
    per = (n + THREADS - 1) // THREADS
    a = min(tid * per, n)
    z = min(a + per, n)
    c = 0
    for i in range(a, z):
        if live[i] != 0:
            c += 1
    if tid == 0:
        rs[_openb_events.RS_F_POS] = -1
    # (its barriers order thread 0's write above before any below)
    upto, m = block_scan(c, buf, sh)
    q = upto - c
    for i in range(a, z):
        if live[i] != 0:
            fbuf[q] = nfrag[i]
            if i == row:
                rs[_openb_events.RS_F_POS] = q
            q += 1
    cuda.syncthreads()
    if tid == 0:
        rs[_openb_events.RS_F_LEAVES] = _leaves(m, leaf_lo, leaf_len, s_lo, s_m)
    cuda.syncthreads()
    nl = rs[_openb_events.RS_F_LEAVES]
    for t in range(tid, nl, THREADS):
        leaf_val[t] = _leaf_sum(fbuf, leaf_lo[t], leaf_len[t])
    cuda.syncthreads()
    if tid == 0:
        pos = rs[_openb_events.RS_F_POS]
        lf = 0
        while lf + 1 < nl and leaf_lo[lf + 1] <= pos:
            lf += 1
        m0 = rs[_openb_events.RS_F_FIRST]
        for w in range(k):
            v = log_frag[m0 + w]
            # the row's leaf summed again where its value differs from the
            # one summed (the last waiting row's is the row's value now; a
            # zero, whose sign the comparison does not see, always)
            if pos >= 0 and (fbuf[pos] != v or v == 0.0):
                fbuf[pos] = v
                leaf_val[lf] = _leaf_sum(fbuf, leaf_lo[lf], leaf_len[lf])
            log_frag[m0 + w] = _pairwise(fbuf, m, leaf_val[:nl], s_lo, s_m, s_st, s_v)
        rs[_openb_events.RS_F_N] = 0
    cuda.syncthreads()


@cuda.jit
def _kernel(row0, cord0, u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap,
            ev_t, ev_kind, ev_row, ev_x, ev_flag, fit_interest, cordon_interest, u_name,
            n_classes, c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask,
            n_typical, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, run_workload,
            policy, sel, seed_mix, gpu_weight, u_static, made, backoff0, backoff_max,
            max_unsched, ev_off, ev_len, cls, u, arrive, depart, duration, rank,
            pct, least, prio, krank, grace, out_node, out_gmask, out_bind, out_tries, out_why,
            log_t, log_pod, log_frag, n_log, frag0, end, out_victim,
            gc_all, md_all, cc_all, mc_all, pc_all, live_all, cord_all, static_all,
            gpu_left_all, cpu_left_all, mem_left_all, pods_left_all, aff_all, node_ver_all,
            version_all, cs_all, cg_all, cv_all, nfrag_all, feas_all, fbuf_all, qi_all, qf_all,
            pst_all, patt_all, pts_all, aq_all, up_all, hk_all, hs_all, hp_all, dk_all, ds_all,
            dp_all, ak_all, pmask_all, pw_all, nw_all, ps_all, pot_all, pbuf_all, nhead_all,
            pnext_all, tqp_all,
            tqt_all, tq_all, rn_all, gn_all, vslot_all, vs_all, rs_all, leaf_all, leafv_all):
    """Run ``blockIdx.x``: thread 0 runs the twin's serial steps
    (``_openb_events.events_open`` / ``preempt_waits`` / ``events_close``:
    the queue, the node events, the nominated pods, the evictions and
    terminations, the log), the block the rows' start (``start_row``),
    each cycle's pick (``cuda.block_decide``: the twin's ``decide``) and
    DefaultPreemption's victim search over the potential rows
    (``cuda.block_post_filter``: ``post_filter_rows``' answer; scratch
    ``vslot_all`` [P], ``vs_all`` [B, N, VS_N]) and the fragmentation
    each change logs (``block_frag``: scratch ``leaf_all`` [B, 2, L] int64,
    ``leafv_all`` [B, L] float64, L = ``leaf_room(N)``); ``rs_all`` [B,
    RS_N] the run's scalars, thread 0's answers to the block past a
    barrier."""
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    buf = cuda.shared.array((3, THREADS), int64)     # the simulator's shuffles
    sh = cuda.shared.array((WARPS, 3), int64)
    cur = cuda.shared.array(1, int64)                # the victim search's slot cursor
    work = cuda.local.array(MAX_GPUS, int64)
    gidx = cuda.local.array(MAX_GPUS, int64)
    s_lo = cuda.local.array(STACK, int64)
    s_m = cuda.local.array(STACK, int64)
    s_st = cuda.local.array(STACK, int64)
    s_v = cuda.local.array(STACK, float64)
    n = row0.shape[0]
    n_ev = ev_t.shape[0]
    w = run_workload[b]
    nc = n_classes[w]
    ntp = n_typical[w]
    o = ev_off[b]
    e = ev_len[b]
    lo = 2 * o + b * n_ev
    gc = gc_all[b]
    md = md_all[b]
    cc = cc_all[b]
    mc = mc_all[b]
    pc = pc_all[b]
    live = live_all[b]
    cord = cord_all[b]
    st = static_all[b]
    rn = rn_all[b]
    r2 = 2 * o
    rk = rank[o:o + e] if rank.shape[0] > 0 else rank[:0]
    ak = ak_all[r2:r2 + 2 * e] if rank.shape[0] > 0 else ak_all[:0]
    pre = 1 if pct[b] >= 0 else 0
    pp = e if pre != 0 else 0
    pr = prio[o:o + pp]
    kr = krank[o:o + e] if krank.shape[0] > 0 else krank[:0]
    wc_cpu = c_cpu[w, :nc]
    wc_mem = c_mem[w, :nc]
    wc_cpu_nz = c_cpu_nz[w, :nc]
    wc_num = c_num[w, :nc]
    wc_milli = c_milli[w, :nc]
    wc_mask = c_mask[w, :nc]
    tpc = tp_cpu[w, :ntp]
    tpn = tp_num[w, :ntp]
    tpm = tp_milli[w, :ntp]
    tpk = tp_mask[w, :ntp]
    tpf = tp_freq[w, :ntp]
    pol = policy[b]
    smix = seed_mix[b]
    gw = gpu_weight[b]
    us = u_static[b]
    mk = made[b]
    wcls = cls[o:o + e]
    wu = u[o:o + e]
    arr = arrive[o:o + e]
    dep = depart[o:o + e]
    dur = duration[o:o + e]
    b0 = backoff0[b]
    bmax = backoff_max[b]
    mun = max_unsched[b]
    onode = out_node[o:o + e]
    ogm = out_gmask[o:o + e]
    obind = out_bind[o:o + e]
    otries = out_tries[o:o + e]
    owhy = out_why[o:o + e]
    lt = log_t[lo:lo + 2 * e + n_ev]
    lp = log_pod[lo:lo + 2 * e + n_ev]
    lf = log_frag[lo:lo + 2 * e + n_ev]
    f0 = frag0[b:b + 1]
    gl = gpu_left_all[b]
    cl = cpu_left_all[b]
    ml = mem_left_all[b]
    pl = pods_left_all[b]
    aff = aff_all[b]
    nv = node_ver_all[b]
    ver = version_all[b]
    cs = cs_all[b, :max(nc, 1)]
    cg = cg_all[b, :max(nc, 1)]
    cv = cv_all[b, :max(nc, 1)]
    nfrag = nfrag_all[b]
    fbuf = fbuf_all[b]
    qi = qi_all[b]
    qf = qf_all[b]
    pst = pst_all[o:o + e]
    patt = patt_all[o:o + e]
    pts = pts_all[o:o + e]
    aq = aq_all[r2:r2 + 2 * e]
    up = up_all[r2:r2 + 2 * e]
    hk = hk_all[r2:r2 + 2 * e]
    hs = hs_all[r2:r2 + 2 * e]
    hp = hp_all[r2:r2 + 2 * e]
    dk = dk_all[o:o + e]
    ds = ds_all[o:o + e]
    dp = dp_all[o:o + e]
    pmask = pmask_all[o:o + e]
    pw = pw_all[o:o + pp]
    nw = nw_all[b]
    ps = ps_all[b]
    pot = pot_all[b]
    pbuf = pbuf_all[o:o + e]
    nhead = nhead_all[b]
    pnext = pnext_all[o:o + e]
    vic = out_victim[o:o + e]
    gr = grace[b]
    tqp = tqp_all[o:o + pp]
    tqt = tqt_all[r2:r2 + 2 * pp]
    tq = tq_all[b]
    gn = gn_all[o:o + pp]
    vslot = vslot_all[o:o + pp]
    vs = vs_all[b]
    rs = rs_all[b]
    leaf_lo = leaf_all[b, 0]
    leaf_len = leaf_all[b, 1]
    leaf_val = leafv_all[b]
    if tid == 0:
        _first_nodes(row0, cord0, u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap,
                     gc, md, cc, mc, pc, live, cord)
        _first_static(row0, us, st)
        _first_names(row0, u_name, rn)
    cuda.syncthreads()
    for i in range(tid, n, THREADS):
        _start_row(i, gc, md, cc, mc, pc, live, cord, gl, cl, ml, pl, aff, nv, cv, tpc, tpn,
                   tpm, tpk, tpf, nfrag, nhead)
    cuda.syncthreads()
    if tid == 0:
        _start(n, live, cord, nfrag, fbuf, s_lo, s_m, s_st, s_v, ver, f0, onode, ogm, obind,
               owhy, pmask, qi, qf, pst, patt, pts, pre, pw, nw, ps, vic, gn, pot, rs)
        # each change's fragmentation from here on: the block's (``block_frag``
        # after each step; ``_openb_events.frag_before`` keeps a step's
        # waiting rows on one row over one live set)
        rs[RS_DEFER] = 1
    cuda.syncthreads()
    while True:
        if tid == 0:
            rs[RS_KIND] = _open(n, gc, md, cc, mc, pc, live, cord, u_gpu_count, u_model,
                                u_cpu_cap, u_mem_cap, u_pods_cap, ev_t, ev_kind, ev_row, ev_x,
                                ev_flag, wc_cpu, wc_mem, wc_num, wc_milli, tpc, tpn, tpm, tpk,
                                tpf, us, st, mk, wcls, arr, dep, rk, b0, bmax, mun, onode, ogm,
                                owhy, lt, lp, lf, f0, gl, cl, ml, pl, aff, nv, ver, gidx, nfrag,
                                fbuf, s_lo, s_m, s_st, s_v, qi, qf, pst, patt, pts, aq, up, hk,
                                hs, hp, dk, ds, dp, ak, pmask, pre, pr, kr, pw, nw, ps, pot,
                                pbuf, nhead, pnext, gr, tqp, tqt, tq, u_name, rn, gn, rs)
        cuda.syncthreads()
        block_frag(n, live, nfrag, fbuf, lf, rs, leaf_lo, leaf_len, leaf_val, s_lo, s_m, s_st,
                   s_v, buf, sh)
        kind = rs[RS_KIND]
        j = qi[_queue.QI_POD]
        attempt = qi[_queue.QI_ATTEMPT]
        cuda.syncthreads()
        if kind == _queue.DONE:
            break
        if kind != Q_CYCLE:
            continue
        c = wcls[j]
        row = block_decide(n, pol, gc, md, gl, cl, ml, pc, pl, aff, wc_cpu[c], wc_mem[c],
                           wc_cpu_nz[c], wc_num[c], wc_milli[c], wc_mask[c], tpc, tpn, tpm, tpk,
                           tpf, cs[c], cg[c], cv[c], nv, work, gw, st, smix, attempt, False,
                           cs[c], buf, sh)
        target = -1
        if pre != 0 and row < 0:
            if tid == 0:
                rs[RS_WAITS] = 1 if _waits(j, n, live, rn, gn, pr, pst, onode, vic, pw,
                                           gr) else 0
            cuda.syncthreads()
            if rs[RS_WAITS] == 0:
                target = block_post_filter(j, n, pot, rs[RS_NPOT], attempt, smix, pct[b],
                                           least[b], wc_cpu[c], wc_mem[c], wc_num[c],
                                           wc_milli[c], wc_mask[c], pr, kr, pst, onode, wcls,
                                           wc_cpu, wc_mem, wc_num, wc_milli, ogm, gc, md, gl,
                                           cl, ml, pl, nhead, pnext, pw, ps, vslot, vs, cur,
                                           buf, sh)
        if tid == 0:
            _close(j, row, target, n, gc, md, live, fit_interest, cordon_interest, wc_cpu,
                   wc_mem, wc_cpu_nz, wc_num, wc_milli, wc_mask, tpc, tpn, tpm, tpk, tpf, pol,
                   sel[b], wcls, wu, dur, rk, b0, bmax, onode, ogm, obind, owhy, lt, lp, lf, gl,
                   cl, ml, pl, aff, nv, ver, cs, cg, cv, work, gidx, nfrag, fbuf, s_lo, s_m,
                   s_st, s_v, qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, ak, pmask,
                   pre, pr, pw, nw, ps, vic, gr, tqp, tqt, tq, gn, nhead, pnext, rs)
        cuda.syncthreads()
        block_frag(n, live, nfrag, fbuf, lf, rs, leaf_lo, leaf_len, leaf_val, s_lo, s_m, s_st,
                   s_v, buf, sh)
    if tid == 0:
        _end(end[b:b + 1], otries, qf, patt, rs, n_log[b:b + 1])


def run_openb_events(a: BatchArrays, ev: NodeEvents, u_static: np.ndarray | None = None,
                     made: np.ndarray | None = None,
                     preempt: BatchPreempt | None = None,
                     grace: np.ndarray | None = None) -> EventOutputs:
    """``openb_events.run_openb_events`` on the device (a block per run:
    its thread 0 the serial steps, with DefaultPreemption the nominations,
    evictions and a termination grace's terminations; the block the picks
    and the victim search)."""
    a.check()
    ev.check()
    b = a.n_runs
    n = max(1, int(np.shape(ev.row0)[0]))
    c = max(1, a.c_cpu.shape[1])
    p = a.cls.shape[0]
    p1 = max(p, 1)
    p2 = max(2 * p, 1)
    g = ev.gpu_slots()
    d = cuda.to_device
    st, mk = run_scenario(a, ev, u_static, made)
    if mk.shape[1] == 0:
        mk = np.zeros((b, 1), np.int64)     # (no created pod: a column no event reads)
    ins = [d(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x
           for x in run_inputs(a, ev, st, mk, preempt, grace)]
    host = EventOutputs.empty(p, b, ev.n_events)
    outs = [d(x) for x in host]
    i64, f64, i8 = np.int64, np.float64, np.int8
    da = cuda.device_array
    scratch = [da((b, n), i64), da((b, n), i64), da((b, n), i64), da((b, n), i64),
               da((b, n), i64), da((b, n), i8), da((b, n), i8), da((b, n), i64),
               da((b, n, g), i64), da((b, n), i64), da((b, n), i64), da((b, n), i64),
               da((b, n, AFF_TAGS), i64), da((b, n), i64), da((b, 1), i64),
               da((b, c, n), i64), da((b, c, n), i64), da((b, c, n), i64),
               da((b, n), f64), da((b, n), i8), da((b, n), f64),
               da((b, _queue.QI_EV_N), i64), da((b, _queue.QF_N), f64),
               da(p1, i64), da(p1, i64), da(p1, f64), da(p2, i64), da(p2, i64), da(p2, f64),
               da(p2, i64), da(p2, i64), da(p1, f64), da(p1, i64), da(p1, i64),
               da(p2 if a.rank.shape[0] else 1, i64), da(p1, i64)]
    on = preempt is not None and bool((np.asarray(preempt.pct) >= 0).any())
    # DefaultPreemption's scratch (one row where no run preempts)
    scratch += [da((p1 if on else 1, PW_N), i64), da((b, n if on else 1, NW_N), i64),
                da((b, PS_N), i64), da((b, n), i64)]
    # each row's bound pods (a list; ``pbuf`` their key order at a drain)
    scratch += [da(p1, i64), da((b, n), i64), da(p1, i64)]
    # the terminating victims (a termination grace above 0): ``_gpu_preempt``'s tqp [P],
    # tqt [2P] per run's pods, tq [B, TQ_N] zeros
    tq = d(np.zeros((b, _gpu_preempt.TQ_N), i64))
    scratch += [da(p1 if on else 1, i64), da(p2 if on else 1, f64), tq]
    # the rows' node names; the name a removal left in a pod's nomination
    scratch += [da((b, n), i64), da(p1 if on else 1, i64)]
    # the block's victim search (``cuda.block_post_filter``): per-pod slots, per-node
    # statistics; the runs' scalars between steps
    scratch += [da(p1 if on else 1, i64), da((b, n if on else 1, _gpu_preempt.VS_N), i64),
                da((b, RS_N), i64)]
    # the fragmentation's summation tree: its leaves, their sums (``block_frag``)
    scratch += [da((b, 2, leaf_room(n)), i64), da((b, leaf_room(n)), f64)]
    _kernel[b, THREADS](*ins, *outs, *scratch)
    check_terminating(tq.copy_to_host()[:, _gpu_preempt.T_OVER])
    return EventOutputs(*(x.copy_to_host() for x in outs))


__all__ = ["block_frag", "leaf_room", "run_openb_events"]
