"""The CPU twin's driver: one cluster per ``prange`` iteration, compiled
with ``njit(parallel=True)`` on top of ``_cluster`` (``cpu``); each
iteration allocates its own scratch.  DefaultPreemption: run b preempts
when ``pct[b] >= 0`` and the per-pod ``prio`` / ``krank`` are given (else
they are empty), ``_gpu_preempt``'s arguments; ``grace`` [B] float64 the
termination grace (seconds), ``over`` [B] int64 out: 1 where the run's
pending termination deadlines outgrew their ring (its results are not
the Simulation's)."""

# ruff: noqa: F821

import numpy as np
from numba import prange

QI_N = 14       # ``_queue``'s scalar slots
QF_N = 2
PW_N = 7        # ``_gpu_preempt``'s scratch widths
NW_N = 3
PS_N = 16
TQ_N = 5        # ``_gpu_preempt``'s terminating victims' slots


def run_all(n_nodes, gpu_count, model, cpu_cap, mem_cap, pods_cap, n_tree, t_lo, t_len,
            t_left, t_right, leaf_of, n_classes, c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask,
            n_typical, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, run_set, run_workload,
            policy, sel, seed_mix, gpu_weight, static_total, backoff0, backoff_max, max_unsched,
            ev_off, ev_len, cls, u, arrive, depart, duration, rank, gpu_slots, out_node,
            out_gmask, out_bind, out_tries, log_t, log_pod, log_frag, n_log, frag0, end,
            pct, least, prio, krank, out_victim, grace, over):
    for b in prange(run_set.shape[0]):
        s = run_set[b]
        w = run_workload[b]
        n = n_nodes[s]
        nt = n_tree[s]
        nc = n_classes[w]
        ntp = n_typical[w]
        o = ev_off[b]
        e = ev_len[b]
        cache_score = np.empty((max(nc, 1), n), np.int64)
        cache_gpu = np.empty((max(nc, 1), n), np.int64)
        cache_ver = np.empty((max(nc, 1), n), np.int64)
        r = max(2 * e, 1)
        # (no conditional inside the call: its arguments must be one block)
        rk = rank[o:o + e] if rank.shape[0] > 0 else rank[:0]
        ak = np.empty(r if rank.shape[0] > 0 else 0, np.int64)
        pre = 1 if prio.shape[0] > 0 and pct[b] >= 0 else 0
        ep = e if pre else 0
        pr = prio[o:o + ep] if pre else prio[:0]
        kr = krank[o:o + ep] if pre else krank[:0]
        npre = n if pre else 0
        pw = np.empty((ep, PW_N), np.int64)
        nw = np.empty((npre, NW_N), np.int64)
        tq = np.zeros(TQ_N, np.int64)
        run_cluster(
            n, gpu_count[s, :n], model[s, :n], cpu_cap[s, :n], mem_cap[s, :n], pods_cap[s, :n],
            t_lo[s, :nt], t_len[s, :nt], t_left[s, :nt], t_right[s, :nt], leaf_of[s, :n],
            c_cpu[w, :nc], c_mem[w, :nc], c_cpu_nz[w, :nc], c_num[w, :nc], c_milli[w, :nc],
            c_mask[w, :nc], tp_cpu[w, :ntp], tp_num[w, :ntp], tp_milli[w, :ntp],
            tp_mask[w, :ntp], tp_freq[w, :ntp], policy[b], sel[b], seed_mix[b], gpu_weight[b],
            static_total[b, :n], cls[o:o + e], u[o:o + e], arrive[o:o + e], depart[o:o + e],
            duration[o:o + e], rk, backoff0[b],
            backoff_max[b], max_unsched[b],
            out_node[o:o + e], out_gmask[o:o + e], out_bind[o:o + e], out_tries[o:o + e],
            log_t[2 * o:2 * (o + e)], log_pod[2 * o:2 * (o + e)], log_frag[2 * o:2 * (o + e)],
            n_log[b:b + 1], frag0[b:b + 1], end[b:b + 1],
            np.empty((n, gpu_slots), np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
            np.empty(n, np.int64), np.empty((n, 18), np.int64), np.empty(n, np.int64),
            np.zeros(1, np.int64), cache_score, cache_gpu, cache_ver, np.empty(16, np.int64),
            np.empty(16, np.int64), np.empty(n, np.float64), np.empty(max(nt, 1), np.float64),
            np.empty(n, np.int8),
            np.zeros(QI_N, np.int64), np.zeros(QF_N, np.float64), np.empty(e, np.int64),
            np.empty(e, np.int64), np.empty(e, np.float64), np.empty(r, np.int64),
            np.empty(r, np.int64), np.empty(r, np.float64), np.empty(r, np.int64),
            np.empty(r, np.int64), np.empty(e, np.float64), np.empty(e, np.int64),
            np.empty(e, np.int64), ak, pre, pct[b], least[b], pr, kr, out_victim[o:o + e],
            pw, nw, np.empty(PS_N, np.int64), np.empty(npre, np.int64),
            np.empty(ep, np.int64), grace[b], np.empty(ep, np.int64),
            np.empty(2 * ep, np.float64), tq)
        over[b] = tq[4]
