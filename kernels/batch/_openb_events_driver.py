"""The openb engine with node events, CPU twin's driver: one run per
``prange`` iteration (``_openb_events.run_events_cluster``), compiled with
``njit(parallel=True)`` by ``openb_events``; each iteration copies the
rows' first nodes from the universe and allocates its own scratch.  Every
run of a call shares the cluster (its universe and local rows) and the
node events."""

# ruff: noqa: F821

import numpy as np
from numba import prange

QI_EV_N = 15    # _queue.QI_EV_N (a compiled namespace holds functions only)
STACK = 64      # pairwise_sum's stack
PW_N = 7        # _gpu_preempt's pw columns, nw columns, ps slots
NW_N = 3
PS_N = 16
TQ_N = 5        # ``_gpu_preempt``'s terminating victims' slots
T_OVER = 4
RS_N = 12       # ``_openb_events``' per-run scalars


def run_events_all(row0, cord0, u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap,
                   ev_t, ev_kind, ev_row, ev_x, ev_flag, fit_interest, cordon_interest, u_name,
                   n_classes, c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask,
                   n_typical, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, run_workload,
                   policy, sel, seed_mix, gpu_weight, u_static, made, backoff0, backoff_max,
                   max_unsched, ev_off, ev_len, cls, u, arrive, depart, duration, rank, pct, least,
                   prio, krank, grace, gpu_slots, out_node, out_gmask, out_bind, out_tries,
                   out_why, log_t, log_pod, log_frag, n_log, frag0, end, out_victim, over):
    """Run b: workload ``run_workload[b]``, its pods ``ev_off[b]`` ..
    ``+ ev_len[b]``, its log from ``2 * ev_off[b] + b * E``
    (``2 * ev_len[b] + E`` entries); ``row0`` [N] each local row's
    universe node at the start (-1 absent), ``cord0`` [N] cordoned then;
    ``u_static`` [B, U] each run's static score of each universe node;
    ``made`` [B, K] the pod index (in the run) of each pod the scenario
    creates; ``pct`` / ``least`` [B] each run's DefaultPreemption
    arguments (``pct`` -1: the run does not preempt), ``prio`` / ``krank``
    [P] each pod's priority and key rank (``prio`` empty when no run
    preempts; ``krank`` empty: a drained node's pods leave in row order),
    ``u_name`` [U] each universe node's name number (a node added again
    under a removed node's name has that node's);
    ``grace`` [B] each run's termination grace (seconds); out
    ``out_victim`` [P] each pod's evictions, ``over`` [B] 1 where a run's
    pending termination deadlines outgrew their ring (``_gpu_preempt``'s
    ``tqt``, twice the run's pods: its results are not the Simulation's)."""
    n = row0.shape[0]
    n_ev = ev_t.shape[0]
    for b in prange(run_workload.shape[0]):
        w = run_workload[b]
        nc = n_classes[w]
        ntp = n_typical[w]
        o = ev_off[b]
        e = ev_len[b]
        lo = 2 * o + b * n_ev
        gc = np.empty(n, np.int64)
        md = np.empty(n, np.int64)
        cc = np.empty(n, np.int64)
        mc = np.empty(n, np.int64)
        pc = np.empty(n, np.int64)
        live = np.empty(n, np.int8)
        cord = np.empty(n, np.int8)
        first_nodes(row0, cord0, u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap,
                    gc, md, cc, mc, pc, live, cord)
        st = np.empty(n, np.int64)
        first_static(row0, u_static[b], st)
        rn = np.empty(n, np.int64)
        first_names(row0, u_name, rn)
        r = max(2 * e, 1)
        rk = rank[o:o + e] if rank.shape[0] > 0 else rank[:0]
        ak = np.empty(r if rank.shape[0] > 0 else 0, np.int64)
        pre = 1 if pct[b] >= 0 else 0
        pp = e if pre != 0 else 0
        pn = n if pre != 0 else 0
        pr = prio[o:o + pp] if pre != 0 else prio[:0]
        kr = krank[o:o + e] if krank.shape[0] > 0 else krank[:0]
        pw = np.empty((pp, PW_N), np.int64)
        nw = np.empty((pn, NW_N), np.int64)
        tq = np.zeros(TQ_N, np.int64)
        run_events_cluster(
            n, gc, md, cc, mc, pc, live, cord, u_gpu_count, u_model, u_cpu_cap, u_mem_cap,
            u_pods_cap, ev_t, ev_kind, ev_row, ev_x, ev_flag, fit_interest, cordon_interest,
            c_cpu[w, :nc], c_mem[w, :nc], c_cpu_nz[w, :nc], c_num[w, :nc], c_milli[w, :nc],
            c_mask[w, :nc], tp_cpu[w, :ntp], tp_num[w, :ntp], tp_milli[w, :ntp],
            tp_mask[w, :ntp], tp_freq[w, :ntp], policy[b], sel[b], seed_mix[b], gpu_weight[b],
            u_static[b], st, made[b], cls[o:o + e], u[o:o + e], arrive[o:o + e], depart[o:o + e],
            duration[o:o + e], rk, backoff0[b], backoff_max[b], max_unsched[b],
            out_node[o:o + e], out_gmask[o:o + e], out_bind[o:o + e], out_tries[o:o + e],
            out_why[o:o + e], log_t[lo:lo + 2 * e + n_ev], log_pod[lo:lo + 2 * e + n_ev],
            log_frag[lo:lo + 2 * e + n_ev], n_log[b:b + 1], frag0[b:b + 1], end[b:b + 1],
            np.empty((n, gpu_slots), np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
            np.empty(n, np.int64), np.empty((n, 18), np.int64), np.empty(n, np.int64),
            np.zeros(1, np.int64), np.empty((max(nc, 1), n), np.int64),
            np.empty((max(nc, 1), n), np.int64), np.empty((max(nc, 1), n), np.int64),
            np.empty(16, np.int64), np.empty(16, np.int64), np.empty(n, np.float64),
            np.empty(n, np.int8), np.empty(max(n, 1), np.float64),
            np.empty(STACK, np.int64), np.empty(STACK, np.int64), np.empty(STACK, np.int64),
            np.empty(STACK, np.float64),
            np.zeros(QI_EV_N, np.int64), np.zeros(2, np.float64), np.empty(e, np.int64),
            np.empty(e, np.int64), np.empty(e, np.float64), np.empty(r, np.int64),
            np.empty(r, np.int64), np.empty(r, np.float64), np.empty(r, np.int64),
            np.empty(r, np.int64), np.empty(e, np.float64), np.empty(e, np.int64),
            np.empty(e, np.int64), ak, np.empty(e, np.int64),
            pre, pct[b], least[b], pr, kr, pw, nw, np.empty(PS_N, np.int64),
            np.empty(n, np.int64), np.empty(e, np.int64), np.empty(n, np.int64),
            np.empty(e, np.int64), out_victim[o:o + e],
            grace[b], np.empty(pp, np.int64), np.empty(2 * pp, np.float64), tq, u_name, rn,
            np.empty(pp, np.int64), np.empty(RS_N, np.int64))
        over[b] = tq[T_OVER]
