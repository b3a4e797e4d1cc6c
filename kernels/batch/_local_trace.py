"""One cluster of the batched node-local engine fed a trace: pods arrive
and leave on the Simulation's clock, in the order ``_queue`` (the openb
engine's queue, shared) attempts them and lets them leave, each attempt
placed by the node-local rules of ``_local_core`` (filter, the percentage
of nodes to score's scan from the rotating start, normalize, weigh, the
seeded tie rule among the top-scored nodes: ``_local_core.pick_node``), a
departure returning the pod's usage (the node's answers and tie rank
follow: ``_local_core.fold_node``).

Plain Python on scalars and arrays, compiled with ``njit`` on top of
``_local_core`` and ``_queue`` (``local_trace``).
"""

# ruff: noqa: F821

import numpy as np

# ``_queue``'s answers and slots (a compiled namespace holds functions only)
Q_DONE = 0
Q_DEPART = 2
Q_POD = 10
Q_NOW = 0


def run_local_trace_cluster(alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                            c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons,
                            raw, strategy, fit_res, fit_kind, fit_weights, shape_util,
                            shape_score, bal_res, bal_kind, pod_cls, arr, dep, dur,
                            backoff0, backoff_max, max_unsched, num_to_find, seed_mix,
                            out_node, out_bind, out_tries, log_t, log_pod, n_log, end,
                            positions, total_scratch, ties_scratch, hi_scratch, hi, hi_cnt,
                            tkey, old_reasons, old_raw, dirty,
                            qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak):
    """Pod j (class ``pod_cls[j]``, trace order) arrives at ``arr[j]`` and
    leaves at ``dep[j]`` or ``dur[j]`` seconds after its binding (inf:
    stays; never both); ``rank`` its place in activeQ's order (empty: all
    equal); ``_queue`` says when each is attempted and when a bound one
    leaves; an attempt places the pod as ``_local_core.run_local_cluster``
    places one (the start index rotating by the nodes it processed), a pod that fits nowhere goes to
    the unschedulable pool.  The cluster's arrays as ``run_local_cluster``
    takes them (``used`` / ``nz_used`` updated).

    Outputs per pod: ``out_node`` its local node (-1 never bound),
    ``out_bind`` when (seconds, NaN never), ``out_tries`` its attempts; per
    change of the cluster in order, ``log_t`` its time and ``log_pod`` the
    pod (j bound, -1 - j left), ``n_log[0]`` how many; ``end[0]`` the clock
    when nothing was left to do.  The rest: scratch as ``run_local_cluster``
    and ``_queue``'s state."""
    n = alloc.shape[0]
    every = start_answers(alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                          c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                          strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                          bal_res, bal_kind, num_to_find, positions, hi, hi_cnt, seed_mix,
                          tkey)
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
                keep_node(i, reasons, raw, old_reasons, old_raw)
            release_from(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                         c_ignored, c_fit_filter, c_active, static_bits, reasons, raw,
                         strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                         bal_res, bal_kind)
            fold_node(i, every, reasons, raw, c_active, c_norm, c_weights, hi, hi_cnt, seed_mix,
                      used, tkey, old_reasons, old_raw, dirty)
            log_t[m] = qf[Q_NOW]
            log_pod[m] = -1 - j
            m += 1
            continue
        i = -1
        if n > 0:
            i, processed = pick_node(c, n, every, start, reasons, raw, c_active, c_norm,
                                     c_weights, num_to_find, seed_mix, used, positions,
                                     total_scratch, ties_scratch, hi_scratch, tkey)
            start += processed
            while start >= n:
                start -= n
        if i < 0:
            q_failed(j, qi, qf, pst, pts, up)
            continue
        if every:
            keep_node(i, reasons, raw, old_reasons, old_raw)
        place_on(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                 c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                 fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
        fold_node(i, every, reasons, raw, c_active, c_norm, c_weights, hi, hi_cnt, seed_mix,
                  used, tkey, old_reasons, old_raw, dirty)
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
