"""The CPU twin's per-cluster loop (``_rules`` compiled with ``njit`` and
inlined here; each pod's node chosen by the vector environment's
``_env.decide``, the one serial form of the decision; the order of
attempts and departures is ``_queue``'s, DefaultPreemption's
``_gpu_preempt``'s; the CUDA kernel runs the same rules a thread per
node, ``cuda``)."""

# ruff: noqa: F821

import numpy as np

# ``_queue``'s answers and slots (a compiled namespace holds functions only)
Q_DONE = 0
Q_DEPART = 2
Q_TERMINATE = 4
Q_POD = 10
Q_ATTEMPT = 11
Q_NOW = 0


def run_cluster(n, gpu_count, model, cpu_cap, mem_cap, pods_cap,
                t_lo, t_len, t_left, t_right, leaf_of,
                c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask,
                tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                policy, sel, seed_mix, gpu_weight, static_total,
                cls, u, arr, dep, dur, rank, backoff0, backoff_max, max_unsched,
                out_node, out_gmask, out_bind, out_tries, log_t, log_pod, log_frag, n_log,
                frag0, end,
                gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version,
                cache_score, cache_gpu, cache_ver, work, gidx,
                nfrag, tree_val, feas, qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp,
                ak, pre, pct, least, prio, krank, victim, pw, nw, ps, nhead, pnext, grace, tqp,
                tqt, tq):
    """One cluster (the CPU twin's serial form): rows 0..n-1 start empty;
    pod j (class ``cls[j]``) arrives at ``arr[j]`` and leaves at ``dep[j]``
    (or ``dur[j]`` after its binding, ``dur`` empty: none), activeQ in
    the order of ``rank`` (empty: first in first out; ``_queue``);
    each attempt places it as the module doc of ``_rules`` says (the
    tie among the top rows: the seed, the row and the pods on it now;
    Random's draw: the seed and the attempt number).
    Outputs per pod: ``out_node`` the row it was bound to (-1 never),
    ``out_gmask`` its GPUs (bit mask), ``out_bind`` when (seconds; NaN
    never), ``out_tries`` its attempts;
    per change of the cluster (a bind, then a departure), in order,
    ``log_t`` its time, ``log_pod`` the pod (j bound, -1 - j left) and
    ``log_frag`` the cluster's fragmentation (GPU milli, summed over the
    rows as ``numpy.sum``) after it, ``n_log[0]`` how many; ``frag0[0]``
    the empty cluster's, ``end[0]`` the clock when nothing was left to do
    (seconds: the last event or attempt; a run the stall stop ended: its
    clock then, ``_queue.stalled``).  The rest: scratch, [N] / [N, G] / [N, 18] /
    [C, N] / [16] / [T] as named (``feas`` [N] int8: the mask ``decide``
    leaves, unread here), ``_queue``'s state (``ak`` [2P] activeQ's heap
    keys with ``rank``).  ``pre`` nonzero: DefaultPreemption
    (``_gpu_preempt``: minCandidateNodesPercentage ``pct`` and
    minCandidateNodesAbsolute ``least``, per pod ``prio`` its priority and
    ``krank`` its key's rank; out ``victim`` [P] the times a pod was evicted (0 never), its
    eviction in the log as a departure; scratch ``pw`` / ``nw`` / ``ps``;
    ``nhead`` [N] / ``pnext`` [P] each row's list of the pods bound there
    (pushed at the binding, ``_candidates.row_push``; the victim search's: ``row_low``);
    ``grace`` the termination grace in seconds: above 0 a victim leaves
    that long after its first eviction, its departure in the log then,
    with the terminating victims' scratch ``tqp`` [P], ``tqt`` [R] float64
    and ``tq`` [TQ_N] zeros, ``tq[T_OVER]`` 1 after if ``tqt`` was too
    small); 0: none (those arrays may be empty)."""
    for i in range(n):
        init_node(i, gpu_count, cpu_cap, mem_cap, pods_cap, model, gpu_left, cpu_left,
                  mem_left, pods_left, aff, node_ver, tp_cpu, tp_num, tp_milli, tp_mask,
                  tp_freq, nfrag)
    version[0] = 0
    for s in range(cache_ver.shape[0]):
        for i in range(n):
            cache_ver[s, i] = -1
    frag = tree_refresh(nfrag, -1, t_lo, t_len, t_left, t_right, tree_val)
    frag0[0] = frag
    for j in range(cls.shape[0]):
        out_node[j] = -1
        out_gmask[j] = 0
        out_bind[j] = np.nan
    q_init(qi, qf, pst, patt, pts)
    if pre != 0:
        preempt_init(pw, nw, ps, victim)
        for i in range(n):
            nhead[i] = -1
    m = 0
    while True:
        kind = q_next_due(arr, dep, backoff0, backoff_max, max_unsched,
                          qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak,
                          deadline_next(tqt, tq))
        if kind == Q_DONE:
            break
        if kind == Q_TERMINATE:
            # (the pool's move inside: ``move_all`` compiled once, not inlined here)
            j = terminate_pop(qf[Q_NOW], grace, backoff0, backoff_max, qi, pst, patt, pts, aq,
                              up, hk, hs, hp, rank, ak, tqp, tqt, tq)
            if j < 0:
                continue
            kind = Q_DEPART
        else:
            j = qi[Q_POD]
        c = cls[j]
        if kind == Q_DEPART:
            row = out_node[j]
            release(row, out_gmask[j], c_cpu[c], c_mem[c], c_num[c], c_milli[c], gpu_left,
                    cpu_left, mem_left, pods_left, aff, node_ver, version)
            if pre != 0:
                taken_off(j, row, out_gmask[j], ps)
            log_pod[m] = -1 - j
        else:
            cs = cache_score[c]
            cg = cache_gpu[c]
            if pre != 0:
                nominees_on(j, prio, pst, cls, c_cpu, c_mem, c_num, c_milli, gpu_count,
                            gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version,
                            gidx, pw, nw, ps)
            row = decide(n, gpu_count, model, gpu_left, cpu_left, mem_left, pods_cap,
                         pods_left, aff, node_ver, c_cpu[c], c_mem[c], c_cpu_nz[c], c_num[c],
                         c_milli[c], c_mask[c], tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                         policy, seed_mix, qi[Q_ATTEMPT], gpu_weight, static_total, cs, cg,
                         cache_ver[c], work, feas)
            if pre != 0:
                target = -1
                if row < 0 and not (grace > 0.0 and waits_for_terminating(j, prio, pst,
                                                                          out_node, pw, tqp,
                                                                          tq)):
                    # every row a potential one (``nhead[:0]``: no list of rows); each
                    # row's lower-priority pods from its list of bound pods
                    target = post_filter_rows(j, n, nhead[:0], n, qi[Q_ATTEMPT], seed_mix, pct,
                                              least, c_cpu[c], c_mem[c], c_num[c], c_milli[c],
                                              c_mask[c], prio, krank, pst, out_node, cls, c_cpu,
                                              c_mem, c_num, c_milli, out_gmask, gpu_count, model,
                                              gpu_left, cpu_left, mem_left, pods_left, nhead,
                                              pnext, pw, nw, ps)
                nominees_off(cls, c_cpu, c_mem, c_num, c_milli, gpu_left, cpu_left, mem_left,
                             pods_left, aff, node_ver, version, pw, ps)
                if target >= 0:
                    m = preempt_for(j, target, qf[Q_NOW], backoff0, backoff_max, m, cls,
                                    c_cpu, c_mem, c_num, c_milli, prio, out_gmask, gpu_count,
                                    model, gpu_left, cpu_left, mem_left, pods_left, aff,
                                    node_ver, version, tp_cpu, tp_num, tp_milli, tp_mask,
                                    tp_freq, nfrag, leaf_of, t_lo, t_len, t_left, t_right,
                                    tree_val, log_t, log_pod, log_frag, victim, qi, pst, patt,
                                    pts, aq, up, hk, hs, hp, rank, ak, pw, nw, ps, grace, tqp,
                                    tqt, tq)
                    continue
                if row >= 0:
                    bound_here(j, row, policy, c, gpu_count, model, gpu_left, cpu_left,
                               mem_left, pods_left, aff, c_cpu, c_mem, c_cpu_nz, c_num,
                               c_milli, c_mask, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, cs,
                               cg, cache_ver[c], node_ver, work, pw, nw, ps)
            if row < 0:
                q_failed(j, qi, qf, pst, pts, up)
                continue
            out_gmask[j] = account(row, sel, gpu_count, c_cpu[c], c_mem[c], c_num[c],
                                   c_milli[c], u[j], cg[row], gpu_left, cpu_left, mem_left,
                                   pods_left, aff, node_ver, version, gidx)
            q_bound(j, dur, qi, qf, pst, dk, ds, dp)
            out_node[j] = row
            out_bind[j] = qf[Q_NOW]
            if pre != 0:
                row_push(row, j, nhead, pnext)
            log_pod[m] = j
        nfrag[row] = node_frag_of(row, gpu_count, model, gpu_left, cpu_left,
                                  tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)
        frag = tree_refresh(nfrag, leaf_of[row], t_lo, t_len, t_left, t_right, tree_val)
        log_t[m] = qf[Q_NOW]
        log_frag[m] = frag
        m += 1
    n_log[0] = m
    end[0] = qf[Q_NOW]
    for j in range(cls.shape[0]):
        out_tries[j] = patt[j]
