"""The node-local trace form with timed node events, and DefaultPreemption
with them: one cluster fed a trace whose nodes join, are cordoned, drained
and deleted, and whose pods are deleted at their times (``_local_trace``'s
node-event steps), where a pod that may preempt and fits nowhere runs
PostFilter (``_local_preempt``'s search and pick).  The node-event form
(``local_events``) runs it without preemption: no pod may preempt
(``may`` empty) and the manifests' bound pods are in the nodes' totals
(``bnode`` empty: a drain leaves the node what the event says, a bound
pod's delete takes its requests).

With preemption (bound pods of its own), what neither form does alone:

- the manifests' bound pods are pods one by one (rows P + b of the
  preemption arrays, on local node ``bnode[b]``), not per-node totals: a
  drain evicts them but those it leaves (``EV_KEEP`` names them as it
  names the queue's), a node's deletion deletes them, a scenario's Pod
  delete names one as P + b; each leaving is logged (-1 - (P + b)) and its
  ``out_why`` set, as a queue pod's;
- a preemption's candidates are the live nodes whose usage-independent
  filters pass the pod (row order), numCandidates and the seeded offset
  over their number;
- the nominated pods (priority >= the pod's) are counted on their nodes
  in the live-node scan (``_local_preempt.overlay``) and in the failure's
  rejectors (``failure_interest``: upstream filters with them);
- a node's deletion ends the nominations to it (the Scheduler's
  ``delete_node``: the nominator forgets them); a cordon keeps them (the
  node's NodeUnschedulable then rejects the nominee there);
- each row's list of the pods bound there (``_local_preempt``'s
  ``head`` / ``nxt``, the victim search's and the terminating rule's):
  the manifests' bound pods pushed at the start, each binding after; the
  pods a drain, a deletion or a Pod delete takes are unlinked when a
  search walks past them;
- the victims' deletion is Pod/Delete: the pool moves by interest
  (``_queue.move_where``), the preemptor goes back as a pod with a move
  request (backoffQ while it backs off).

Plain Python on scalars and arrays, compiled with ``njit``
(``local_preempt_events``) and ``cuda.jit(device=True)``
(``local_preempt_events_cuda``, and ``local_trace_cuda``'s form without
preemption: a block per cluster, thread 0 running the loop's steps,
``events_start`` / ``events_open`` / ``events_close``, the block each
attempt's pick over the live rows) on top of
``_local_preempt`` (and so ``_local_trace``, ``_queue``, ``_local_core``).
"""

# ruff: noqa: F821

import numpy as np

# ``_queue``'s answers, slots and statuses, ``_local_trace``'s event kinds
# and interest bits (a compiled namespace holds functions only)
Q_DONE = 0
Q_DEPART = 2
Q_NODE = 3
Q_TERMINATE = 4
Q_POD = 10
Q_ATTEMPT = 11
Q_NOW = 0
P_NOT_ARRIVED = 0
P_BOUND = 4
P_GONE = 5
P_KEPT = 7
RES_PODS = 3
EV_ADD = 1
EV_UPDATE = 2
EV_EVICT = 3
EV_DELETE = 4
EV_POD_DELETE = 5
EV_KEEP = 6
I_POD_DELETE = 1
I_NODE_ADD = 2
I_NODE_UPDATE = 4
I_NODE_DELETE = 8
WHY_DELETED = 2
WHY_EVICTED = 3
# ``bgone``: a manifests' bound pod's state
B_HERE = 0
B_GONE = 1
B_KEPT = 2          # the drain under way leaves it


def take_off(i, k, n_q, pod_cls, c_request, c_nonzero, preq, pnz, used, nz_used):
    """Pod ``k``'s requests off node ``i`` (a queue pod k < ``n_q``: its
    class's, as ``place_on`` put them; a bound pod: ``preq[k]`` /
    ``pnz[k]``), one pod less; its answers are left to the caller."""
    if k < n_q:
        c = pod_cls[k]
        for r in range(used.shape[1]):
            used[i, r] -= c_request[c, r]
        nz_used[i, 0] -= c_nonzero[c, 0]
        nz_used[i, 1] -= c_nonzero[c, 1]
    else:
        for r in range(used.shape[1]):
            used[i, r] -= preq[k, r]
        nz_used[i, 0] -= pnz[k, 0]
        nz_used[i, 1] -= pnz[k, 1]
    used[i, RES_PODS] -= 1


def live_potential(c, nv, positions, static_bits, pot):
    """The live nodes (``positions[:nv]``) whose usage-independent filters
    pass class ``c``, in row order, into ``pot``; how many."""
    m = 0
    for t in range(nv):
        i = positions[t]
        if static_bits[c, i] == 0:
            pot[m] = i
            m += 1
    return m


def empty_node(i, what, n_bound, left, left_nz, now, n_q, korder, pst, pod_cls, c_request, c_nonzero,
               out_node, out_why, bnode, bgone, preq, pnz, used, nz_used, m, log_t, log_pod):
    """A drain (``what`` EV_EVICT) or a deletion of node ``i``: its pods
    leave (the queue's in key order, then the manifests' bound ones), but
    those the drain leaves (P_KEPT, B_KEPT: they stay, marks cleared);
    (the next log row, how many left).  Without bound pods of their own
    (``bnode`` empty) the manifests' bound pods are in the node's totals:
    ``n_bound`` of them leave, the node keeps ``left`` [R] / ``left_nz``
    [2] requested (what the drain leaves of them; the node-event form's
    accounting) and the queue pods that stay."""
    why = WHY_EVICTED if what == EV_EVICT else WHY_DELETED
    rows = bnode.shape[0] > 0
    gone = 0 if rows else n_bound
    for t in range(korder.shape[0]):
        jj = korder[t]
        if pst[jj] == P_BOUND and out_node[jj] == i:
            if rows:
                take_off(i, jj, n_q, pod_cls, c_request, c_nonzero, preq, pnz, used, nz_used)
            pst[jj] = P_GONE
            out_why[jj] = why
            m = log_change(m, now, -1 - jj, log_t, log_pod)
            gone += 1
    if not rows:
        for r in range(used.shape[1]):
            used[i, r] = left[r]
        nz_used[i, 0] = left_nz[0]
        nz_used[i, 1] = left_nz[1]
    for t in range(korder.shape[0]):
        jj = korder[t]
        if pst[jj] == P_KEPT:
            pst[jj] = P_BOUND
            if not rows:
                c = pod_cls[jj]
                for r in range(used.shape[1]):
                    used[i, r] += c_request[c, r]
                used[i, RES_PODS] += 1
                nz_used[i, 0] += c_nonzero[c, 0]
                nz_used[i, 1] += c_nonzero[c, 1]
    for b in range(bnode.shape[0]):
        k = n_q + b
        if bnode[b] != i:
            continue
        if bgone[k] == B_KEPT:
            bgone[k] = B_HERE
        elif bgone[k] == B_HERE:
            take_off(i, k, n_q, pod_cls, c_request, c_nonzero, preq, pnz, used, nz_used)
            bgone[k] = B_GONE
            out_why[k] = why
            m = log_change(m, now, -1 - k, log_t, log_pod)
            gone += 1
    return m, gone


# el slots: the cluster loop's scalars between its steps (``events_start``,
# ``events_open``, the pick over the live rows, ``events_close``: the CPU
# twin's loop, and the CUDA form's, whose block picks while thread 0 runs
# the steps)
EL_M = 0            # log rows used
EL_NNOM = 1         # nominations outstanding
EL_NV = 2           # live nodes (``positions[:nv]``)
EL_TO_FIND = 3      # the nodes to find (the last node event's ``ev_find``)
EL_START = 4        # the next cycle's start (a position among the live nodes)
EL_NOWHERE = 5      # 1: a pod failed where no node was (arrivals move such pods)
EL_NT = 6           # the nodes this attempt's nominated overlay touched
EL_COUNTED = 7      # 1: this attempt counts the nominated pods
EL_LOW = 8          # at most the lowest priority among the bound pods (``preempt_on``)
EL_N = 9
LOW_UNKNOWN = -4611686018427387904      # ``_local_preempt.LOW_UNKNOWN``
Q_ATTEMPTED = 1     # ``_queue.ATTEMPT``


def events_start(
        alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
        c_active, c_norm, c_weights, static_bits, reasons, raw, strategy, fit_res, fit_kind,
        fit_weights, shape_util, shape_score, bal_res, bal_kind, pod_cls, arr, dep, dur,
        backoff0, backoff_max, max_unsched, num_to_find, seed_mix,
        out_node, out_bind, out_tries, out_why, log_t, log_pod, n_log, end,
        positions, total_scratch, ties_scratch, hi_scratch,
        qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak, pmask,
        valid, rej, fit_interest, korder, ev_t, ev_kind, ev_node, ev_x, ev_find, ev_bound,
        ev_used, ev_nz, u_alloc, u_used0, u_nz0, u_static_bits, u_static_raw, u_rej,
        prio, may, krank, pstart, preq, pnz, bnode, pct, least, out_victim, bgone,
        nom, nlist, pot, head, nxt, cur, vout, stats, mark, touched, save_bits, save_raw,
        n_pdb, pdb_kind, pdb_val, pmatch, left, vflag, grace, vt, tqp, tqt, tq, ls):
    """The run's state before the loop: every node's answers, the outputs
    and the preemption state cleared, the queue empty; ``ls`` [EL_N] the
    loop's scalars (the arguments: ``run_local_preempt_events_cluster``'s)."""
    n = alloc.shape[0]
    n_q = pod_cls.shape[0]
    for i in range(n):
        mark[i] = 0
        refresh_node(i, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                     c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                     fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
    for j in range(n_q):
        out_node[j] = -1
        out_bind[j] = np.nan
        pmask[j] = 0
        nom[j] = -1
    for k in range(out_victim.shape[0]):
        out_victim[k] = 0
    for k in range(vt.shape[0]):
        vt[k] = np.nan
    for k in range(out_why.shape[0]):
        out_why[k] = 0
    for k in range(bgone.shape[0]):
        bgone[k] = B_HERE
    if may.shape[0] > 0:
        # each row's list of bound pods (the victim search's): the
        # manifests' bound pods first
        for i in range(n):
            head[i] = -1
        for b in range(bnode.shape[0]):
            row_push(bnode[b], n_q + b, head, nxt)
    for k in range(tq.shape[0]):
        tq[k] = 0
    q_init(qi, qf, pst, patt, pts)
    for k in range(ls.shape[0]):
        ls[k] = 0
    ls[EL_NV] = live_rows(valid, positions)
    ls[EL_TO_FIND] = num_to_find
    ls[EL_LOW] = LOW_UNKNOWN


def events_open(
        alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
        c_active, c_norm, c_weights, static_bits, reasons, raw, strategy, fit_res, fit_kind,
        fit_weights, shape_util, shape_score, bal_res, bal_kind, pod_cls, arr, dep, dur,
        backoff0, backoff_max, max_unsched, num_to_find, seed_mix,
        out_node, out_bind, out_tries, out_why, log_t, log_pod, n_log, end,
        positions, total_scratch, ties_scratch, hi_scratch,
        qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak, pmask,
        valid, rej, fit_interest, korder, ev_t, ev_kind, ev_node, ev_x, ev_find, ev_bound,
        ev_used, ev_nz, u_alloc, u_used0, u_nz0, u_static_bits, u_static_raw, u_rej,
        prio, may, krank, pstart, preq, pnz, bnode, pct, least, out_victim, bgone,
        nom, nlist, pot, head, nxt, cur, vout, stats, mark, touched, save_bits, save_raw,
        n_pdb, pdb_kind, pdb_val, pmatch, left, vflag, grace, vt, tqp, tqt, tq, ls):
    """The loop's next step up to an attempt's pick: ``_queue``'s answer
    (``q_next_steps_due``); a termination (``Q_TERMINATE``), a node event
    (``Q_NODE``) or a departure done here; an attempt (``Q_ATTEMPTED``, pod
    ``qi[Q_POD]``) with the nominated pods of priority >= its own counted
    on their nodes (``ls[EL_COUNTED]``, ``ls[EL_NT]``)."""
    kind = q_next_steps_due(arr, dep, ev_t, ev_kind, EV_POD_DELETE, ls[EL_NOWHERE], backoff0,
                            backoff_max, max_unsched, qi, qf, pst, patt, pts, aq, up, hk,
                            hs, hp, dk, ds, dp, rank, ak, pmask, deadline_next(tqt, tq))
    if kind == Q_DONE:
        return kind
    n_q = pod_cls.shape[0]
    now = qf[Q_NOW]
    if kind == Q_TERMINATE:
        v = pop_terminated(now, grace, pst, bgone, vt, tqp, tqt, tq)
        if v < 0:
            return kind
        # its grace over (still on its node): Pod/Delete
        i = out_node[v] if v < n_q else bnode[v - n_q]
        take_off(i, v, n_q, pod_cls, c_request, c_nonzero, preq, pnz, used, nz_used)
        refresh_node(i, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                     c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                     fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
        ls[EL_M] = log_change(ls[EL_M], now, -1 - v, log_t, log_pod)
        move_where(I_POD_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up,
                   hk, hs, hp, rank, ak, pmask)
        return kind
    if kind == Q_NODE:
        node_event(qi[Q_POD], now, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                   c_ignored, c_fit_filter, c_active, static_bits, reasons, raw, strategy,
                   fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind,
                   pod_cls, backoff0, backoff_max, out_node, out_why, log_t, log_pod,
                   positions, qi, pst, patt, pts, aq, up, hk, hs, hp, rank, ak, pmask, valid,
                   rej, korder, ev_kind, ev_node, ev_x, ev_find, ev_bound, ev_used, ev_nz,
                   u_alloc, u_used0, u_nz0, u_static_bits, u_static_raw, u_rej, preq, pnz,
                   bnode, bgone, nom, nlist, ls)
        return kind
    j = qi[Q_POD]
    c = pod_cls[j]
    if kind == Q_DEPART:
        release_from(out_node[j], c, alloc, used, nz_used, c_request, c_nonzero,
                     c_anything, c_ignored, c_fit_filter, c_active, static_bits, reasons,
                     raw, strategy, fit_res, fit_kind, fit_weights, shape_util,
                     shape_score, bal_res, bal_kind)
        ls[EL_M] = log_change(ls[EL_M], now, -1 - j, log_t, log_pod)
        return kind
    nt = 0
    counted = ls[EL_NV] > 0 and ls[EL_NNOM] > 0
    if counted:
        # the nominated pods of priority >= j's use their nodes in this
        # cycle (its scan, its rejectors, its PostFilter)
        nt = overlay_on(j, c, nom, nlist, ls[EL_NNOM], pst, prio, pod_cls, alloc, used,
                        nz_used, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
                        c_active, static_bits, reasons, raw, strategy, fit_res, fit_kind,
                        fit_weights, shape_util, shape_score, bal_res, bal_kind, mark,
                        touched, save_bits, save_raw)
    ls[EL_NT] = nt
    ls[EL_COUNTED] = 1 if counted else 0
    return Q_ATTEMPTED


def node_event(e, now, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
               c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res, fit_kind,
               fit_weights, shape_util, shape_score, bal_res, bal_kind, pod_cls, backoff0,
               backoff_max, out_node, out_why, log_t, log_pod, positions, qi, pst, patt, pts,
               aq, up, hk, hs, hp, rank, ak, pmask, valid, rej, korder, ev_kind, ev_node, ev_x,
               ev_find, ev_bound, ev_used, ev_nz, u_alloc, u_used0, u_nz0, u_static_bits,
               u_static_raw, u_rej, preq, pnz, bnode, bgone, nom, nlist, ls):
    """Node event ``e`` at ``now`` (``run_local_preempt_events_cluster``'s
    doc): the node's answers, its pods, the live rows (``ls[EL_NV]``), the
    nominations, the log and the pool's moves; then the nodes to find
    (``ls[EL_TO_FIND]``)."""
    n_q = pod_cls.shape[0]
    i = ev_node[e]
    x = ev_x[e]
    what = ev_kind[e]
    if what == EV_ADD or what == EV_UPDATE:
        if what == EV_ADD:
            for r in range(alloc.shape[1]):
                alloc[i, r] = u_alloc[x, r]
                used[i, r] = u_used0[x, r]
            nz_used[i, 0] = u_nz0[x, 0]
            nz_used[i, 1] = u_nz0[x, 1]
            valid[i] = True
            ls[EL_NV] = live_rows(valid, positions)
        restatic(i, x, u_static_bits, u_static_raw, u_rej, static_bits, raw, rej)
        refresh_node(i, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                     c_ignored, c_fit_filter, c_active, static_bits, reasons, raw,
                     strategy, fit_res, fit_kind, fit_weights, shape_util,
                     shape_score, bal_res, bal_kind)
        move_where(I_NODE_ADD if what == EV_ADD else I_NODE_UPDATE, now, backoff0,
                   backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp, rank, ak,
                   pmask)
    elif what == EV_KEEP:
        jj = ev_bound[e]
        if jj < n_q:
            if pst[jj] == P_BOUND and out_node[jj] == i:
                pst[jj] = P_KEPT
        elif bgone[jj] == B_HERE and bnode[jj - n_q] == i:
            bgone[jj] = B_KEPT
    elif what == EV_POD_DELETE:
        jj = ev_bound[e]
        freed = -1
        if jj < 0:
            # a manifests' bound pod in the node's totals: its
            # requests ``ev_used[e]`` leave node i
            for r in range(used.shape[1]):
                used[i, r] -= ev_used[e, r]
            nz_used[i, 0] -= ev_nz[e, 0]
            nz_used[i, 1] -= ev_nz[e, 1]
            freed = i
        elif jj >= n_q:
            if bgone[jj] == B_HERE:
                freed = bnode[jj - n_q]
                bgone[jj] = B_GONE
        elif pst[jj] == P_BOUND:
            freed = out_node[jj]
            pst[jj] = P_GONE
        elif pst[jj] != P_GONE and pst[jj] != P_NOT_ARRIVED:
            # pending: it leaves the queue, and its nomination ends
            pst[jj] = P_GONE
            out_why[jj] = WHY_DELETED
            ls[EL_NNOM] = nom_drop(jj, nom, nlist, ls[EL_NNOM])
        if freed >= 0:
            if jj >= 0:
                take_off(freed, jj, n_q, pod_cls, c_request, c_nonzero, preq, pnz, used,
                         nz_used)
                out_why[jj] = WHY_DELETED
                ls[EL_M] = log_change(ls[EL_M], now, -1 - jj, log_t, log_pod)
            refresh_node(freed, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                         c_ignored, c_fit_filter, c_active, static_bits, reasons, raw,
                         strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                         bal_res, bal_kind)
            move_where(I_POD_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts,
                       aq, up, hk, hs, hp, rank, ak, pmask)
    else:
        m, gone = empty_node(i, what, ev_bound[e], ev_used[e], ev_nz[e], now, n_q, korder,
                             pst, pod_cls, c_request, c_nonzero, out_node, out_why, bnode,
                             bgone, preq, pnz, used, nz_used, ls[EL_M], log_t, log_pod)
        ls[EL_M] = m
        if what == EV_DELETE:
            valid[i] = False
            ls[EL_NV] = live_rows(valid, positions)
            # the nominator forgets the nominations to a deleted node (the
            # list walked from its end: a dropped one's place takes the last)
            t = ls[EL_NNOM] - 1
            while t >= 0:
                k = nlist[t]
                if nom[k] == i:
                    ls[EL_NNOM] = nom_drop(k, nom, nlist, ls[EL_NNOM])
                t -= 1
        else:
            refresh_node(i, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                         c_ignored, c_fit_filter, c_active, static_bits, reasons, raw,
                         strategy, fit_res, fit_kind, fit_weights, shape_util,
                         shape_score, bal_res, bal_kind)
        if gone > 0:
            move_where(I_POD_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts,
                       aq, up, hk, hs, hp, rank, ak, pmask)
        if what == EV_DELETE:
            move_where(I_NODE_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts,
                       aq, up, hk, hs, hp, rank, ak, pmask)
    ls[EL_TO_FIND] = ev_find[e]


def events_close(
        j, i, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
        c_active, c_norm, c_weights, static_bits, reasons, raw, strategy, fit_res,
        fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind, pod_cls, arr,
        dep, dur, backoff0, backoff_max, max_unsched, num_to_find, seed_mix, out_node,
        out_bind, out_tries, out_why, log_t, log_pod, n_log, end, positions, total_scratch,
        ties_scratch, hi_scratch, qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp,
        rank, ak, pmask, valid, rej, fit_interest, korder, ev_t, ev_kind, ev_node, ev_x,
        ev_find, ev_bound, ev_used, ev_nz, u_alloc, u_used0, u_nz0, u_static_bits,
        u_static_raw, u_rej, prio, may, krank, pstart, preq, pnz, bnode, pct, least,
        out_victim, bgone, nom, nlist, pot, head, nxt, cur, vout, stats, mark, touched,
        save_bits, save_raw, n_pdb, pdb_kind, pdb_val, pmatch, left, vflag, grace, vt, tqp,
        tqt, tq, ls):
    """Pod ``j``'s attempt after its pick ``i`` over the live rows (-1:
    it fits nowhere): PostFilter when it may preempt (``events_search_due``: a
    pod of priority ``ls[EL_LOW]`` or below has no lower-priority pod to
    evict anywhere, no scan), then the rest (``events_finish``)."""
    target = -1
    n_vic = 0
    if events_search_due(j, i, may, prio, nom, pst, bgone, out_victim, head, nxt, grace,
                         ls[EL_LOW]):
        c = pod_cls[j]
        mm = live_potential(c, ls[EL_NV], positions, static_bits, pot)
        target, n_vic, lowest = preempt_on(
            j, c, mm, alloc.shape[0], qi[Q_ATTEMPT], seed_mix, pct, least, alloc, used,
            c_request, c_anything, c_ignored, c_fit_filter, preq, prio, pstart, krank, pst,
            bgone, out_victim, pot, head, nxt, cur, vout, stats, n_pdb, pdb_kind, pdb_val,
            pmatch, left, vflag)
        ls[EL_LOW] = lowest
    events_finish(j, i, target, n_vic, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                  c_ignored, c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                  strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res,
                  bal_kind, pod_cls, arr, dep, dur, backoff0, backoff_max, max_unsched,
                  num_to_find, seed_mix, out_node, out_bind, out_tries, out_why, log_t, log_pod,
                  n_log, end, positions, total_scratch, ties_scratch, hi_scratch, qi, qf, pst,
                  patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak, pmask, valid, rej,
                  fit_interest, korder, ev_t, ev_kind, ev_node, ev_x, ev_find, ev_bound, ev_used,
                  ev_nz, u_alloc, u_used0, u_nz0, u_static_bits, u_static_raw, u_rej, prio, may,
                  krank, pstart, preq, pnz, bnode, pct, least, out_victim, bgone, nom, nlist, pot,
                  head, nxt, cur, vout, stats, mark, touched, save_bits, save_raw, n_pdb, pdb_kind,
                  pdb_val, pmatch, left, vflag, grace, vt, tqp, tqt, tq, ls)


def events_search_due(j, i, may, prio, nom, pst, bgone, victim, head, nxt, grace, low):
    """Whether pod ``j``'s attempt (pick ``i``, -1 none) runs PostFilter's
    search: it fits nowhere and ``may_search``."""
    return i < 0 and may_search(j, low, grace, may, prio, nom, pst, bgone, victim, head, nxt)


def events_finish(
        j, i, target, n_vic, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
        c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw, strategy,
        fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind,
        pod_cls, arr, dep, dur, backoff0, backoff_max, max_unsched, num_to_find, seed_mix,
        out_node, out_bind, out_tries, out_why, log_t, log_pod, n_log, end, positions,
        total_scratch, ties_scratch, hi_scratch, qi, qf, pst, patt, pts, aq, up, hk, hs,
        hp, dk, ds, dp, rank, ak, pmask, valid, rej, fit_interest, korder, ev_t, ev_kind,
        ev_node, ev_x, ev_find, ev_bound, ev_used, ev_nz, u_alloc, u_used0, u_nz0,
        u_static_bits, u_static_raw, u_rej, prio, may, krank, pstart, preq, pnz, bnode,
        pct, least, out_victim, bgone, nom, nlist, pot, head, nxt, cur, vout, stats, mark,
        touched, save_bits, save_raw, n_pdb, pdb_kind, pdb_val, pmatch, left, vflag, grace,
        vt, tqp, tqt, tq, ls):
    """Pod ``j``'s attempt after its pick ``i`` over the live rows and
    PostFilter's answer (``target`` -1: none or not run; its ``n_vic``
    victims in ``vout``): the failure's rejectors, the overlay off, then
    the binding, the failure or the preemption (module doc).
    ``local_preempt_events_cuda``'s thread 0 runs it after the block's
    search."""
    n = alloc.shape[0]
    n_q = pod_cls.shape[0]
    c = pod_cls[j]
    now = qf[Q_NOW]
    nv = ls[EL_NV]
    mask = 0
    if i < 0:
        mask = failure_interest(c, nv, positions, reasons, static_bits, rej, fit_interest)
    if ls[EL_COUNTED] != 0:
        overlay_off(j, c, ls[EL_NT], nom, nlist, ls[EL_NNOM], pst, prio, pod_cls, used,
                    nz_used, c_request, c_nonzero, reasons, raw, mark, touched, save_bits, save_raw)
    if i >= 0:
        place_on(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                 c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                 fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
        # (no preemption, ``may`` empty: no lists, ``head`` / ``nxt`` placeholders)
        bound_on(j, i, now, may.shape[0] > 0, dur, qi, qf, pst, dk, ds, dp, prio, nom, nlist,
                 head, nxt, out_node, out_bind, log_t, log_pod, ls, EL_M, EL_NNOM, EL_LOW)
        return
    if target < 0:
        if mask == 0:
            ls[EL_NOWHERE] = 1
        q_failed_mask(j, mask, qi, qf, pst, pts, up, pmask)
        return
    # nominated: lower-priority nominations to the node end
    ls[EL_NNOM] = nominate(j, target, nom, nlist, ls[EL_NNOM], prio)
    if grace > 0.0:
        # the victims terminate on the node; no pod left, so the
        # preemptor goes to the unschedulable pool with its rejectors
        terminate_victims(now, grace, n_vic, vout, out_victim, vt, tqp, tqt, tq)
        if mask == 0:
            ls[EL_NOWHERE] = 1
        q_failed_mask(j, mask, qi, qf, pst, pts, up, pmask)
        return
    m = ls[EL_M]
    for a in range(n_vic):
        v = vout[a]
        evicted(v, now, out_victim, vt)
        if v < n_q:
            pst[v] = P_GONE
        else:
            bgone[v] = B_GONE
        take_off(target, v, n_q, pod_cls, c_request, c_nonzero, preq, pnz, used, nz_used)
        m = log_change(m, now, -1 - v, log_t, log_pod)
    ls[EL_M] = m
    refresh_node(target, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                 c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                 fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
    # the victims' deletion (Pod/Delete) moved the pool during the
    # cycle: the preemptor goes back as a pod with a move request
    move_where(I_POD_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk,
               hs, hp, rank, ak, pmask)
    pmask[j] = mask
    pts[j] = now
    move(j, now, backoff0, backoff_max, qi, pst, patt, pts, aq, hk, hs, hp, rank, ak)


def run_local_preempt_events_cluster(
        alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
        c_active, c_norm, c_weights, static_bits, reasons, raw, strategy, fit_res, fit_kind,
        fit_weights, shape_util, shape_score, bal_res, bal_kind, pod_cls, arr, dep, dur,
        backoff0, backoff_max, max_unsched, num_to_find, seed_mix,
        out_node, out_bind, out_tries, out_why, log_t, log_pod, n_log, end,
        positions, total_scratch, ties_scratch, hi_scratch,
        qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak, pmask,
        valid, rej, fit_interest, korder, ev_t, ev_kind, ev_node, ev_x, ev_find, ev_bound,
        ev_used, ev_nz, u_alloc, u_used0, u_nz0, u_static_bits, u_static_raw, u_rej,
        prio, may, krank, pstart, preq, pnz, bnode, pct, least, out_victim, bgone,
        nom, nlist, pot, head, nxt, cur, vout, stats, mark, touched, save_bits, save_raw,
        n_pdb, pdb_kind, pdb_val, pmatch, left, vflag, grace, vt, tqp, tqt, tq, ls):
    """``_local_trace.run_local_trace_cluster`` with timed node events,
    every cycle a scan of the live nodes (``pick_live``), and
    DefaultPreemption (module doc).  The n local nodes are the rows the
    Scheduler gives them, ``valid`` [n] (updated) those in the cluster now
    (a node added later is a row from the start, absent until its time);
    ``rej`` [C, n] each class's rejector code per node (the static
    status's interest bits, ``REJ_FIRST``); ``fit_interest``
    NodeResourcesFit's interest bits; ``korder`` [P] the pods in key order
    (the order a node's pods are deleted in).

    Node event e at ``ev_t[e]`` (seconds, nondecreasing) of kind
    ``ev_kind[e]`` on local node ``ev_node[e]`` (``EV_ADD`` from universe
    row ``ev_x[e]``: its allocatable, usage and static answers;
    ``EV_UPDATE``: its static answers become row ``ev_x[e]``'s;
    ``EV_EVICT`` / ``EV_DELETE``: its pods leave, in key order; without
    bound pods of its own a drain leaves ``ev_used[e]`` [R] / ``ev_nz[e]``
    [2] of the manifests' requested; ``EV_KEEP``: the drain next (of node
    ``ev_node[e]``) leaves pod ``ev_bound[e]`` there when bound on it (a
    DaemonSet's, static; P + b a bound pod b); ``EV_POD_DELETE``: pod
    ``ev_bound[e]`` is deleted (bound: it frees its node, Pod/Delete;
    pending: it leaves the queue; P + b: bound pod b), or with -1 a
    manifests' bound pod in node ``ev_node[e]``'s totals requesting
    ``ev_used[e]`` / ``ev_nz[e]``; at its time before the departures,
    ``_queue.q_next_steps``), ``ev_find[e]`` the nodes to find after it.
    A node's add moves the pool for Node/Add, an update for Node/Update,
    each pod deleted for Pod/Delete, a node's deletion (after its pods')
    for Node/Delete; a failed pod keeps what its rejectors listen to
    (``failure_interest``).  ``out_why`` [P (+ B)]: how a pod left with
    its node or by a Pod delete (``WHY_DELETED``, ``WHY_EVICTED``; 0
    otherwise).  The universe arrays ``u_*`` as the driver gathers from;
    the rest as ``run_local_trace_cluster``.

    The preemption arrays as ``_local_preempt.run_local_preempt_cluster``
    takes them (``bnode`` local rows at the start; ``may`` empty: no
    preemption; ``nlist`` [P] the nominated pods, the first
    ``ls[EL_NNOM]``); ``bgone`` [P + B] scratch (a bound pod's ``B_*``
    state); ``grace``, ``vt`` (out: each pod's first eviction's time, NaN
    never) and the scratch ``tqp``, ``tqt``, ``tq`` as
    ``run_local_preempt_cluster`` takes them: above 0 a victim terminates
    on its node until its first eviction + ``grace`` unless a drain, its
    node's deletion, a Pod delete or its departure takes it first.  ``ls``
    [EL_N] scratch: the loop's scalars between its steps (``events_open``,
    the pick, ``events_close``)."""
    events_start(
            alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
            c_active, c_norm, c_weights, static_bits, reasons, raw, strategy, fit_res, fit_kind,
            fit_weights, shape_util, shape_score, bal_res, bal_kind, pod_cls, arr, dep, dur,
            backoff0, backoff_max, max_unsched, num_to_find, seed_mix,
            out_node, out_bind, out_tries, out_why, log_t, log_pod, n_log, end,
            positions, total_scratch, ties_scratch, hi_scratch,
            qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak, pmask,
            valid, rej, fit_interest, korder, ev_t, ev_kind, ev_node, ev_x, ev_find, ev_bound,
            ev_used, ev_nz, u_alloc, u_used0, u_nz0, u_static_bits, u_static_raw, u_rej,
            prio, may, krank, pstart, preq, pnz, bnode, pct, least, out_victim, bgone,
            nom, nlist, pot, head, nxt, cur, vout, stats, mark, touched, save_bits, save_raw,
            n_pdb, pdb_kind, pdb_val, pmatch, left, vflag, grace, vt, tqp, tqt, tq, ls)
    while True:
        kind = events_open(
            alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
            c_active, c_norm, c_weights, static_bits, reasons, raw, strategy, fit_res, fit_kind,
            fit_weights, shape_util, shape_score, bal_res, bal_kind, pod_cls, arr, dep, dur,
            backoff0, backoff_max, max_unsched, num_to_find, seed_mix,
            out_node, out_bind, out_tries, out_why, log_t, log_pod, n_log, end,
            positions, total_scratch, ties_scratch, hi_scratch,
            qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak, pmask,
            valid, rej, fit_interest, korder, ev_t, ev_kind, ev_node, ev_x, ev_find, ev_bound,
            ev_used, ev_nz, u_alloc, u_used0, u_nz0, u_static_bits, u_static_raw, u_rej,
            prio, may, krank, pstart, preq, pnz, bnode, pct, least, out_victim, bgone,
            nom, nlist, pot, head, nxt, cur, vout, stats, mark, touched, save_bits, save_raw,
            n_pdb, pdb_kind, pdb_val, pmatch, left, vflag, grace, vt, tqp, tqt, tq, ls)
        if kind == Q_DONE:
            break
        if kind != Q_ATTEMPTED:
            continue
        j = qi[Q_POD]
        i = -1
        nv = ls[EL_NV]
        if nv > 0:
            s0 = ls[EL_START] % nv
            i, processed = pick_live(pod_cls[j], nv, s0, reasons, raw, c_active, c_norm,
                                     c_weights, ls[EL_TO_FIND], seed_mix, used, positions,
                                     total_scratch, ties_scratch, hi_scratch)
            ls[EL_START] = (ls[EL_START] + processed) % nv
        events_close(
            j, i, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
            c_active, c_norm, c_weights, static_bits, reasons, raw, strategy, fit_res, fit_kind,
            fit_weights, shape_util, shape_score, bal_res, bal_kind, pod_cls, arr, dep, dur,
            backoff0, backoff_max, max_unsched, num_to_find, seed_mix,
            out_node, out_bind, out_tries, out_why, log_t, log_pod, n_log, end,
            positions, total_scratch, ties_scratch, hi_scratch,
            qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak, pmask,
            valid, rej, fit_interest, korder, ev_t, ev_kind, ev_node, ev_x, ev_find, ev_bound,
            ev_used, ev_nz, u_alloc, u_used0, u_nz0, u_static_bits, u_static_raw, u_rej,
            prio, may, krank, pstart, preq, pnz, bnode, pct, least, out_victim, bgone,
            nom, nlist, pot, head, nxt, cur, vout, stats, mark, touched, save_bits, save_raw,
            n_pdb, pdb_kind, pdb_val, pmatch, left, vflag, grace, vt, tqp, tqt, tq, ls)
    trace_end(ls[EL_M], qf, patt, n_log, end, out_tries)
