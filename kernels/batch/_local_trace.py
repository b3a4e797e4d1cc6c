"""One cluster of the batched node-local engine fed a trace: pods arrive
and leave on the Simulation's clock, in the order ``_queue`` (the openb
engine's queue, shared) attempts them and lets them leave, each attempt
placed by the node-local rules of ``_local_core`` (filter, the percentage
of nodes to score's scan from the rotating start, normalize, weigh, the
seeded tie-break of that attempt), a departure returning the pod's usage.

Plain Python on scalars and arrays, compiled with ``njit`` on top of
``_local_core`` and ``_queue`` (``local_trace``).
"""

# ruff: noqa: F821

import numpy as np

# ``_queue``'s answers and slots (a compiled namespace holds functions only)
Q_DONE = 0
Q_DEPART = 2
Q_POD = 10
Q_ATTEMPT = 11
Q_NOW = 0


def fold_row(i, every, reasons, raw, c_active, c_norm, c_weights, hi, hi_cnt, totals, tmax,
             tcnt, old_reasons, old_raw, dirty, size):
    """After node ``i``'s answers changed (their previous values in
    ``old_reasons`` / ``old_raw``), every class's top tree follows."""
    if not every:
        return
    n = reasons.shape[1]
    dirty[0] = i
    for cc in range(reasons.shape[0]):
        moved = update_top(dirty, 1, old_reasons[cc:cc + 1], old_raw[cc:cc + 1], reasons[cc],
                           raw[cc], c_active[cc], c_norm[cc], c_weights[cc], hi[cc],
                           hi_cnt[cc], totals[cc], tmax[cc], tcnt[cc], size)
        if moved == -1000000000:
            rebuild_top(n, reasons[cc], raw[cc], c_active[cc], c_norm[cc], c_weights[cc],
                        hi[cc], hi_cnt[cc], totals[cc], tmax[cc], tcnt[cc], size)


def keep_row(i, reasons, raw, old_reasons, old_raw):
    """Node ``i``'s answers before a change, for ``fold_row``."""
    for cc in range(reasons.shape[0]):
        old_reasons[cc] = reasons[cc, i]
        for s in range(raw.shape[2]):
            old_raw[cc, s] = raw[cc, i, s]


def run_local_trace_cluster(alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                            c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons,
                            raw, strategy, fit_res, fit_kind, fit_weights, shape_util,
                            shape_score, bal_res, bal_kind, pod_cls, arr, dep, dur,
                            backoff0, backoff_max, max_unsched, num_to_find, seed_mix,
                            out_node, out_bind, out_tries, log_t, log_pod, n_log, end,
                            positions, total_scratch, ties_scratch, hi_scratch, hi, hi_cnt,
                            totals, tmax, tcnt, old_reasons, old_raw, dirty,
                            qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak):
    """Pod j (class ``pod_cls[j]``, trace order) arrives at ``arr[j]`` and
    leaves at ``dep[j]`` or ``dur[j]`` seconds after its binding (inf:
    stays; never both); ``rank`` its place in activeQ's order (empty: all
    equal); ``_queue`` says when each is attempted (the attempt number
    seeds its tie) and when a bound one leaves; an attempt places the pod
    as ``_local_core.run_local_cluster`` places one (the start index
    rotating by the nodes it processed), a pod that fits nowhere goes to
    the unschedulable pool.  The cluster's arrays as ``run_local_cluster``
    takes them (``used`` / ``nz_used`` updated).

    Outputs per pod: ``out_node`` its local node (-1 never bound),
    ``out_bind`` when (seconds, NaN never), ``out_tries`` its attempts; per
    change of the cluster in order, ``log_t`` its time and ``log_pod`` the
    pod (j bound, -1 - j left), ``n_log[0]`` how many; ``end[0]`` the clock
    when nothing was left to do.  The rest: scratch as ``run_local_cluster``
    and ``_queue``'s state."""
    n = alloc.shape[0]
    size = tmax.shape[1] // 2
    every = start_answers(alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                          c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                          strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                          bal_res, bal_kind, num_to_find, positions, hi, hi_cnt, totals, tmax,
                          tcnt)
    for j in range(pod_cls.shape[0]):
        out_node[j] = -1
        out_bind[j] = np.nan
    q_init(qi, qf, pst, patt, pts)
    start = 0
    m = 0
    while True:
        kind = q_next(arr, dep, backoff0, backoff_max, max_unsched,
                      qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak)
        if kind == Q_DONE:
            break
        j = qi[Q_POD]
        c = pod_cls[j]
        if kind == Q_DEPART:
            i = out_node[j]
            if every:
                keep_row(i, reasons, raw, old_reasons, old_raw)
            release_from(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                         c_ignored, c_fit_filter, c_active, static_bits, reasons, raw,
                         strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                         bal_res, bal_kind)
            fold_row(i, every, reasons, raw, c_active, c_norm, c_weights, hi, hi_cnt, totals,
                     tmax, tcnt, old_reasons, old_raw, dirty, size)
            log_t[m] = qf[Q_NOW]
            log_pod[m] = -1 - j
            m += 1
            continue
        attempt = qi[Q_ATTEMPT]
        i = -1
        processed = n
        if n > 0:
            if every:
                best = tmax[c, 1]
                if best >= 0:
                    i = tree_kth_eq(tmax[c], tcnt[c], size,
                                    tie_index(seed_mix, attempt, tcnt[c, 1]), best)
            else:
                n_ties, processed, found = finalize_rows(
                    positions, start, reasons[c], raw[c], num_to_find, c_active[c], c_norm[c],
                    c_weights[c], False, raw[c], total_scratch, ties_scratch, hi_scratch)
                if n_ties > 0:
                    i = start + ties_scratch[tie_index(seed_mix, attempt, n_ties)]
                    if i >= n:
                        i -= n
            start += processed
            while start >= n:
                start -= n
        if i < 0:
            q_failed(j, qi, qf, pst, pts, up)
            continue
        if every:
            keep_row(i, reasons, raw, old_reasons, old_raw)
        place_on(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                 c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                 fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
        fold_row(i, every, reasons, raw, c_active, c_norm, c_weights, hi, hi_cnt, totals, tmax,
                 tcnt, old_reasons, old_raw, dirty, size)
        q_bound(j, dur, qi, qf, pst, dk, ds, dp)
        out_node[j] = i
        out_bind[j] = qf[Q_NOW]
        log_t[m] = qf[Q_NOW]
        log_pod[m] = j
        m += 1
    n_log[0] = m
    end[0] = qf[Q_NOW]
    for j in range(pod_cls.shape[0]):
        out_tries[j] = patt[j]
