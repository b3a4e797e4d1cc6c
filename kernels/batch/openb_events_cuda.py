"""The batched openb engine with timed node events on the device: the CPU
twin's source (``_openb_events.run_events_cluster`` on ``_rules``,
``_env.decide`` and ``_queue``) compiled with ``cuda.jit(device=True)``,
one thread per run (each run's loop is serial: its node events, queue and
decisions in the twin's order, so both forms give the same bits).  Inputs
and outputs as ``openb_events.run_openb_events``; the state lives in
device memory, one upload and one download per call.

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

from . import _candidates, _env, _gpu_preempt, _openb_events, _queue
from .arrays import BatchArrays
from .cuda import device_rules
from .openb_events import EventOutputs, NodeEvents, run_inputs, run_scenario
from .preempt_arrays import BatchPreempt, check_terminating

AFF_TAGS = 18
MAX_GPUS = 16
STACK = 64          # pairwise_sum's stack
PW_N = 7            # _gpu_preempt's pw columns, nw columns, ps slots
NW_N = 3
PS_N = 16
THREADS = 32        # runs per block

_env_ns = compile_module(_env, lambda f: cuda.jit(f, device=True), base=device_rules)
_cand_ns = compile_module(_candidates, lambda f: cuda.jit(f, device=True), base=_env_ns)
_pre_ns = compile_module(_gpu_preempt, lambda f: cuda.jit(f, device=True), base=_cand_ns)
_ev_ns = compile_module(_openb_events, lambda f: cuda.jit(f, device=True), base=_pre_ns)
_run_cluster = _ev_ns["run_events_cluster"]
_first_nodes = _ev_ns["first_nodes"]
_first_static = _ev_ns["first_static"]
_first_names = _ev_ns["first_names"]


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
            dp_all, ak_all, pmask_all, pw_all, nw_all, ps_all, pot_all, kord_all, tqp_all,
            tqt_all, tq_all, rn_all, gn_all):
    b = cuda.grid(1)
    if b >= run_workload.shape[0]:
        return
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
    _first_nodes(row0, cord0, u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap,
                 gc, md, cc, mc, pc, live, cord)
    _first_static(row0, u_static[b], static_all[b])
    _first_names(row0, u_name, rn_all[b])
    r2 = 2 * o
    rk = rank[o:o + e] if rank.shape[0] > 0 else rank[:0]
    ak = ak_all[r2:r2 + 2 * e] if rank.shape[0] > 0 else ak_all[:0]
    pre = 1 if pct[b] >= 0 else 0
    pp = e if pre != 0 else 0
    pr = prio[o:o + pp]
    kr = krank[o:o + e] if krank.shape[0] > 0 else krank[:0]
    _run_cluster(
        n, gc, md, cc, mc, pc, live, cord, u_gpu_count, u_model, u_cpu_cap, u_mem_cap,
        u_pods_cap, ev_t, ev_kind, ev_row, ev_x, ev_flag, fit_interest, cordon_interest,
        c_cpu[w, :nc], c_mem[w, :nc], c_cpu_nz[w, :nc], c_num[w, :nc], c_milli[w, :nc],
        c_mask[w, :nc], tp_cpu[w, :ntp], tp_num[w, :ntp], tp_milli[w, :ntp], tp_mask[w, :ntp],
        tp_freq[w, :ntp], policy[b], sel[b], seed_mix[b], gpu_weight[b], u_static[b],
        static_all[b], made[b], cls[o:o + e], u[o:o + e], arrive[o:o + e], depart[o:o + e],
        duration[o:o + e], rk,
        backoff0[b], backoff_max[b], max_unsched[b],
        out_node[o:o + e], out_gmask[o:o + e], out_bind[o:o + e], out_tries[o:o + e],
        out_why[o:o + e], log_t[lo:lo + 2 * e + n_ev], log_pod[lo:lo + 2 * e + n_ev],
        log_frag[lo:lo + 2 * e + n_ev], n_log[b:b + 1], frag0[b:b + 1], end[b:b + 1],
        gpu_left_all[b], cpu_left_all[b], mem_left_all[b], pods_left_all[b], aff_all[b],
        node_ver_all[b], version_all[b], cs_all[b, :max(nc, 1)], cg_all[b, :max(nc, 1)],
        cv_all[b, :max(nc, 1)], work, gidx, nfrag_all[b], feas_all[b], fbuf_all[b],
        s_lo, s_m, s_st, s_v,
        qi_all[b], qf_all[b], pst_all[o:o + e], patt_all[o:o + e], pts_all[o:o + e],
        aq_all[r2:r2 + 2 * e], up_all[r2:r2 + 2 * e], hk_all[r2:r2 + 2 * e],
        hs_all[r2:r2 + 2 * e], hp_all[r2:r2 + 2 * e], dk_all[o:o + e], ds_all[o:o + e],
        dp_all[o:o + e], ak, pmask_all[o:o + e],
        pre, pct[b], least[b], pr, kr, pw_all[o:o + pp], nw_all[b], ps_all[b], pot_all[b],
        kord_all[o:o + kr.shape[0]], out_victim[o:o + e], grace[b], tqp_all[o:o + pp],
        tqt_all[r2:r2 + 2 * pp], tq_all[b], u_name, rn_all[b], gn_all[o:o + pp])


def run_openb_events(a: BatchArrays, ev: NodeEvents, u_static: np.ndarray | None = None,
                     made: np.ndarray | None = None,
                     preempt: BatchPreempt | None = None,
                     grace: np.ndarray | None = None) -> EventOutputs:
    """``openb_events.run_openb_events`` on the device (one thread per run;
    DefaultPreemption's serial search and evictions on it too, and with a
    termination grace its victims' terminations)."""
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
                da((b, PS_N), i64), da((b, n), i64),
                da(p1 if preempt is not None and preempt.krank.shape[0] else 1, i64)]
    # the terminating victims (a termination grace above 0): ``_gpu_preempt``'s tqp [P],
    # tqt [2P] per run's pods, tq [B, TQ_N] zeros
    tq = d(np.zeros((b, _gpu_preempt.TQ_N), i64))
    scratch += [da(p1 if on else 1, i64), da(p2 if on else 1, f64), tq]
    # the rows' node names; the name a removal left in a pod's nomination
    scratch += [da((b, n), i64), da(p1 if on else 1, i64)]
    _kernel[(b + THREADS - 1) // THREADS, THREADS](*ins, *outs, *scratch)
    check_terminating(tq.copy_to_host()[:, _gpu_preempt.T_OVER])
    return EventOutputs(*(x.copy_to_host() for x in outs))


__all__ = ["run_openb_events"]
