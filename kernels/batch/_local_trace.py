"""One cluster of the batched node-local engine fed a trace: pods arrive
and leave on the Simulation's clock, in the order ``_queue`` (the openb
engine's queue, shared) attempts them and lets them leave, each attempt
placed by the node-local rules of ``_local_core`` (filter, the percentage
of nodes to score's scan from the rotating start, normalize, weigh, the
seeded tie rule among the top-scored nodes: ``_local_core.pick_node``), a
departure returning the pod's usage (the node's answers and tie rank
follow: ``_local_core.fold_node``).

With timed node events (nodes added, cordoned and uncordoned, drained,
deleted: their steps below, the cluster function
``_local_preempt_events.run_local_preempt_events_cluster``) every cycle
scans the live nodes, each failed pod keeps the cluster events its
rejecting plugins listen to, and a departure or a node event moves only
the pods listening to it (``_queue.move_where``).

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
N_SLOTS = 6     # _local_core.N_SLOTS


def gather_cluster(rows, g, alloc, used0, nz0, static_bits, static_raw, image_raw):
    """The CPU drivers' per-cluster copy of its nodes (universe rows
    ``rows``, image group ``g``): (allocatable, used [n, R], non-zero used
    [n, 2], static bits [C, n], reasons [C, n] (unset), raw scores [C, n,
    N_SLOTS]), each newly allocated."""
    n = rows.shape[0]
    n_classes = static_bits.shape[0]
    a = np.empty((n, alloc.shape[1]), np.int64)
    u = np.empty((n, alloc.shape[1]), np.int64)
    z = np.empty((n, 2), np.int64)
    sb = np.empty((n_classes, n), np.int64)
    reasons = np.empty((n_classes, n), np.int64)
    raw = np.zeros((n_classes, n, N_SLOTS), np.int64)
    for i in range(n):
        gather_node(i, rows[i], g, alloc, used0, nz0, static_bits, static_raw, image_raw,
                    a, u, z, sb, raw)
    return a, u, z, sb, reasons, raw


def gather_presence(i, x, present, u_rej, valid, rej):
    """Local node ``i`` (universe row ``x``) of a cluster with node
    events: whether it is in the cluster at the start (``present``, into
    ``valid`` [n]) and each class's rejector code (``rej`` [C, n] from
    ``u_rej`` [C, U]); after ``gather_node``."""
    valid[i] = present
    for c in range(rej.shape[0]):
        rej[c, i] = u_rej[c, x]


def trace_start(pod_cls, out_node, out_bind, qi, qf, pst, patt, pts):
    """Every pod unbound, the queue at its start."""
    for j in range(pod_cls.shape[0]):
        out_node[j] = -1
        out_bind[j] = np.nan
    q_init(qi, qf, pst, patt, pts)


def trace_end(m, qf, patt, n_log, end, out_tries):
    """The log's length ``m``, the clock at the end, each pod's attempts."""
    n_log[0] = m
    end[0] = qf[Q_NOW]
    for j in range(out_tries.shape[0]):
        out_tries[j] = patt[j]


def log_change(m, now, what, log_t, log_pod):
    """Log row ``m``: at ``now`` pod ``what`` bound (j) or left (-1 - j);
    the next row."""
    log_t[m] = now
    log_pod[m] = what
    return m + 1


def shift_pod(i, c, add, every, alloc, used, nz_used, c_request, c_nonzero, c_anything,
              c_ignored, c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
              strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res,
              bal_kind, hi, hi_cnt, seed_mix, tkey, old_reasons, old_raw, dirty):
    """A pod of class ``c`` placed on node ``i`` (``add``) or gone from it:
    its usage, the node's answers and its tie rank (``fold_node``; with
    ``every`` the node's old answers kept first)."""
    if every:
        keep_node(i, reasons, raw, old_reasons, old_raw)
    if add:
        place_on(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                 c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                 fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
    else:
        release_from(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                     c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                     fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
    fold_node(i, every, reasons, raw, c_active, c_norm, c_weights, hi, hi_cnt, seed_mix, used,
              tkey, old_reasons, old_raw, dirty)


def pick_next(c, n, every, start, reasons, raw, c_active, c_norm, c_weights, num_to_find,
              seed_mix, used, positions, total_scratch, ties_scratch, hi_scratch, tkey):
    """``pick_node`` of class ``c`` on the ``n`` (> 0) nodes from ``start``:
    (the node, -1 none; the next cycle's start, rotated by the nodes
    processed)."""
    i, processed = pick_node(c, n, every, start, reasons, raw, c_active, c_norm, c_weights,
                             num_to_find, seed_mix, used, positions, total_scratch,
                             ties_scratch, hi_scratch, tkey)
    start += processed
    while start >= n:
        start -= n
    return i, start


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
    trace_start(pod_cls, out_node, out_bind, qi, qf, pst, patt, pts)
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
            shift_pod(out_node[j], c, False, every, alloc, used, nz_used, c_request, c_nonzero,
                      c_anything, c_ignored, c_fit_filter, c_active, c_norm, c_weights,
                      static_bits, reasons, raw, strategy, fit_res, fit_kind, fit_weights,
                      shape_util, shape_score, bal_res, bal_kind, hi, hi_cnt, seed_mix, tkey,
                      old_reasons, old_raw, dirty)
            m = log_change(m, qf[Q_NOW], -1 - j, log_t, log_pod)
            continue
        i = -1
        if n > 0:
            i, start = pick_next(c, n, every, start, reasons, raw, c_active, c_norm, c_weights,
                                 num_to_find, seed_mix, used, positions, total_scratch,
                                 ties_scratch, hi_scratch, tkey)
        if i < 0:
            q_failed(j, qi, qf, pst, pts, up)
            continue
        shift_pod(i, c, True, every, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                  c_ignored, c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons,
                  raw, strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                  bal_res, bal_kind, hi, hi_cnt, seed_mix, tkey, old_reasons, old_raw, dirty)
        q_bound(j, dur, qi, qf, pst, dk, ds, dp)
        out_node[j] = i
        out_bind[j] = qf[Q_NOW]
        m = log_change(m, qf[Q_NOW], j, log_t, log_pod)
    trace_end(m, qf, patt, n_log, end, out_tries)


# ---------------------------------------------------------------------------
# node events: the trace form's steps with timed node changes
# (``_local_preempt_events.run_local_preempt_events_cluster``)

Q_NODE = 3              # _queue.NODE
P_BOUND = 4             # _queue.BOUND: a pod's status
P_GONE = 5              # _queue.GONE
RES_PODS = 3            # _local_core.RES_PODS_COL
IPA = 5                 # _local_core.IPA_SLOT

# node event kinds (``ev_kind``)
EV_ADD = 1              # the node joins (its universe row ``ev_x``)
EV_UPDATE = 2           # cordon / uncordon: its static answers become row ``ev_x``'s
EV_EVICT = 3            # a drain's evictions: every pod on it leaves
EV_DELETE = 4           # the node and its pods are deleted
EV_POD_DELETE = 5       # a scenario's pod delete: pod ``ev_bound`` (a manifests' bound pod: -1)
EV_KEEP = 6             # the next drain (of node ``ev_node``) leaves pod ``ev_bound`` there
P_NOT_ARRIVED = 0       # _queue.NOT_ARRIVED
P_KEPT = 7              # a bound pod the drain under way leaves (not a _queue status)

# interest bits (_queue.EV_*) and a rejector code's flag: the status's
# filter comes before NodeResourcesFit
I_POD_DELETE = 1
I_NODE_ADD = 2
I_NODE_UPDATE = 4
I_NODE_DELETE = 8
REJ_FIRST = 16
REJ_MASK = 15

# how a pod left (``out_why``)
WHY_DELETED = 2         # its node deleted
WHY_EVICTED = 3         # its node drained


def restatic(i, x, u_static_bits, u_static_raw, u_rej, static_bits, raw, rej):
    """Local node ``i``'s usage-independent answers (reason bits, the
    static raw scores, rejector codes) from universe row ``x``."""
    for c in range(static_bits.shape[0]):
        static_bits[c, i] = u_static_bits[c, x]
        raw[c, i, 2] = u_static_raw[c, x, 0]
        raw[c, i, 3] = u_static_raw[c, x, 1]
        raw[c, i, IPA] = u_static_raw[c, x, 2]
        rej[c, i] = u_rej[c, x]


def live_rows(valid, positions):
    """The live local nodes in row order into ``positions``; their number."""
    nv = 0
    for i in range(valid.shape[0]):
        if valid[i]:
            positions[nv] = i
            nv += 1
    return nv


def failure_interest(c, nv, positions, reasons, static_bits, rej, fit_interest):
    """The events the plugins rejecting class ``c`` on the ``nv`` live
    nodes listen to: per node its first rejecting filter (the static
    status when it comes before NodeResourcesFit, else Fit when Fit's
    bits are set, else the static status), their interest bits or'ed."""
    m = 0
    for k in range(nv):
        i = positions[k]
        bits = reasons[c, i]
        if bits == 0:
            continue
        r = rej[c, i]
        if (r & REJ_FIRST) != 0 and static_bits[c, i] != 0:
            m |= r & REJ_MASK
        elif (bits & ~static_bits[c, i]) != 0:
            m |= fit_interest
        else:
            m |= r & REJ_MASK
    return m


def pick_live(c, nv, start, reasons, raw, c_active, c_norm, c_weights, num_to_find, seed_mix,
              used, positions, total_scratch, ties_scratch, hi_scratch):
    """One cycle of class ``c`` over the ``nv`` live nodes ``positions``
    from position ``start``: (the local node, -1 none; the nodes
    processed): the scan to the ``num_to_find``-th feasible node,
    normalized and weighed (``finalize_rows``), the tie rule among the top
    ones (the highest ``tie_rank`` of (row, pods on it), the lower row on
    an equal rank)."""
    n_ties, processed, found = finalize_rows(
        positions[:nv], start, reasons[c], raw[c], num_to_find, c_active[c], c_norm[c],
        c_weights[c], False, raw[c], total_scratch, ties_scratch, hi_scratch)
    if n_ties == 0:
        return -1, processed
    best = -1
    best_rank = -1
    for t in range(n_ties):
        k = start + ties_scratch[t]
        if k >= nv:
            k -= nv
        i = positions[k]
        r = tie_rank(seed_mix, i, used[i, RES_PODS])
        if r > best_rank or (r == best_rank and i < best):
            best = i
            best_rank = r
    return best, processed


def refresh_node(i, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                 c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                 fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind):
    """Every class's answer on local node ``i`` recomputed."""
    for cc in range(reasons.shape[0]):
        refresh_row(i, cc, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                    c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                    fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
