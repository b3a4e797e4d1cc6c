"""The node-local trace form with DefaultPreemption in its queue: one
cluster fed a trace (``_local_trace.run_local_trace_cluster``'s clock,
queue and node-local rules) where a pod that fits nowhere runs PostFilter
as the Scheduler runs it (``framework/preemption/evaluator.py``,
``framework/scheduler/schedule_one.py``), with a termination grace of 0
(the victims leave at once) or above (they terminate first):

1. eligible: its preemption policy is not Never, and (a grace above 0)
   its nominated node holds no pod of lower priority terminating by
   preemption (``terminating_on``);
   A pod whose priority is at most ``ls[L_LOW]`` (a lower bound on the
   lowest priority among the bound pods: each search below makes it
   exact, each binding lowers it) has nothing to evict anywhere: its
   search, which would find no candidate, is skipped.  The bound pods
   are read from each row's list of the pods bound there (``head`` /
   ``nxt``, ``_candidates.row_push`` at each binding, the manifests'
   bound pods at the start; the pods gone since unlinked as a search
   walks them: ``row_low``), not from every pod of the run: a search
   walks every row's list once (the lowest bound priority, and whether
   any bound pod is below the preemptor's), then the lists of the rows
   it visits; the terminating rule reads the nominated node's list;
2. the nodes where preemption might help: those whose usage-independent
   filters pass the pod (NodeUnschedulable, NodeName, TaintToleration,
   NodeAffinity are UnschedulableAndUnresolvable; only NodeResourcesFit,
   Unschedulable, rejects there), in row order;
3. numCandidates (``min(max(n x pct / 100, abs), n)``) and the seeded
   offset (``evaluator.seeded_offset`` of the Scheduler's seed and the
   attempt number; both ``_candidates``'); nodes visited from the offset,
   wrapping, each searched
   (``victims_on``: every lower-priority pod off, the pod must fit, then
   reprieve most important first: priority, start time, pod key), the
   visit stopping at the numCandidates-th candidate;
   PDB-violating victims reprieved first (filterPodsWithPDBViolation over
   the importance order on a running copy of each PDB's
   disruptionsAllowed: a pod violates when a PDB that applies to it has
   gone below 0), then the others, each group most important first; two
   candidate lists (non-violating, violating), each listing its first
   numCandidates, the visit stopping once there is a non-violating one
   and the two lists hold numCandidates together;
4. pickOneNodeForPreemption (``better``) over the listed candidates: the
   fewest PDB violations, the lowest highest-victim priority, the
   smallest sum of priority + 2^31, the fewest victims, the latest
   earliest start among the highest-priority victims, then the first
   visited.

Each PDB's disruptionsAllowed is its ``status.disruptionsAllowed`` when
the manifest has one, else recomputed at each PostFilter as
``parsing.pdb.disruptions_allowed`` does over the pods bound then (the
manifests' bound pods not preempted, the queue's bound ones): per pod and
PDB ``pmatch`` 0 (no match), PDB_HEALTHY (it applies, the pod is
healthy), PDB_DELETING (it applies, the pod is terminating), PDB_DISRUPTED
(selected but in ``status.disruptedPods``: counted as expected only).

The preemptor is nominated to the chosen node (pods nominated there with
a lower priority lose their nomination); with a grace of 0 the victims
leave in importance order (each an assigned pod's deletion: every
unschedulable pod moves) and the preemptor goes back to the queue as a
pod that failed while a move request came: backoffQ while it backs off;
above 0 they stay on the node, holding its resources, until their first
eviction + grace (the section before ``run_local_preempt_cluster``),
and the preemptor, no pod having left, goes to the unschedulable pool.  While nominations are
outstanding, each cycle of pod j counts the pods nominated to a node with
priority >= j's (not j) as using it (``overlay``: the Scheduler's
nominated overlay, scores and tie rank included), its PostFilter too; a
pod's nomination ends when it binds, a later preemption moves it, or it is
deleted.

Per pod (the queue's, then the manifests' bound pods, which are in
``used`` from the start and may be victims too): ``prio`` its priority,
``may`` 1 when it may preempt (policy not Never, DefaultPreemption in the
profile), ``krank`` its key's rank (the victim table's slot order),
``pstart`` its start time (ns, START_NOW none), ``preq`` / ``pnz`` its
requests; ``out_victim`` the times a pod was preempted, ``vt`` its first
eviction's time (NaN never).

Plain Python on scalars and arrays, compiled with ``njit`` (``local_preempt``)
and ``cuda.jit(device=True)`` (``local_trace_cuda``; ``local_preempt_cuda``'s
thread 0 runs the loop's steps, ``attempt_open`` / ``attempt_finish``, its
block each pick and each ``post_filter`` search: ``block_preempt_on``) on top of ``_local_core``, ``_queue`` and ``_candidates``.
"""

# ruff: noqa: F821

import numpy as np

# ``_queue``'s answers, slots and statuses (a compiled namespace holds functions only)
Q_DONE = 0
Q_DEPART = 2
Q_TERMINATE = 4
Q_POD = 10
Q_ATTEMPT = 11
Q_NOW = 0
P_BOUND = 4
P_GONE = 5
RES_PODS = 3
START_NOW = 9223372036854775807
PRIORITY_OFFSET = 2147483648
# pmatch codes (a pod under a PDB)
PDB_HEALTHY = 1
PDB_DELETING = 2
PDB_DISRUPTED = 3
# pdb_kind: how disruptionsAllowed comes (pdb_val its number)
PDB_FIXED = 0           # status.disruptionsAllowed
PDB_MAX_UNAVAILABLE = 1
PDB_MAX_UNAVAILABLE_PCT = 2
PDB_MIN_AVAILABLE = 3
PDB_MIN_AVAILABLE_PCT = 4
PDB_NEITHER = 5
# tq slots: the victims terminating (a termination grace above 0; the
# openb engine's ``_gpu_preempt`` layout)
T_HEAD = 0          # the first of ``tqp`` not yet due
T_TAIL = 1          # victims pushed to ``tqp``
T_WHEAD = 2         # the first pending deadline of ``tqt`` (a ring)
T_WLEN = 3          # pending deadlines
T_OVER = 4          # 1: more pending deadlines than ``tqt`` holds (the run is wrong)
TQ_N = 5
INF = float("inf")
# ``ls[L_LOW]`` before the first search: below every priority (int32), so
# the first PostFilter scans; ``preempt_on``'s answer with no pod bound
LOW_UNKNOWN = -4611686018427387904
LOW_NONE = 4611686018427387904


def overlay(j, pj, sign, nom, nlist, n_nom, pst, prio, pod_cls, c_request, c_nonzero, used,
            nz_used, mark, touched):
    """The pods nominated to a node with priority >= ``pj`` (not pod
    ``j``, not bound or gone) counted on it (``sign`` 1) or taken off
    again (-1): the nominated pods ``nlist[:n_nom]`` walked, not every
    pod.  Adding, the nodes touched go to ``touched`` (``mark`` [n] set;
    returned: how many)."""
    nt = 0
    for t in range(n_nom):
        k = nlist[t]
        i = nom[k]
        if i < 0 or k == j or pst[k] == P_BOUND or pst[k] == P_GONE or prio[k] < pj:
            continue
        cc = pod_cls[k]
        for r in range(used.shape[1]):
            used[i, r] += sign * c_request[cc, r]
        used[i, RES_PODS] += sign
        nz_used[i, 0] += sign * c_nonzero[cc, 0]
        nz_used[i, 1] += sign * c_nonzero[cc, 1]
        if sign > 0 and mark[i] == 0:
            mark[i] = 1
            touched[nt] = i
            nt += 1
    return nt


def overlay_on(j, c, nom, nlist, n_nom, pst, prio, pod_cls, alloc, used, nz_used, c_request,
               c_nonzero, c_anything, c_ignored, c_fit_filter, c_active, static_bits, reasons, raw,
               strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res,
               bal_kind, mark, touched, save_bits, save_raw):
    """Pod ``j``'s cycle with the nominated pods of priority >= its own
    counted on their nodes (``overlay``): class ``c``'s answers on the nodes
    touched are saved (``save_bits`` [n], ``save_raw`` [n, S], in
    ``touched`` order) and recomputed.  Returns how many nodes;
    ``overlay_off`` undoes it after the cycle."""
    nt = overlay(j, prio[j], 1, nom, nlist, n_nom, pst, prio, pod_cls, c_request, c_nonzero,
                 used, nz_used, mark, touched)
    for t in range(nt):
        ii = touched[t]
        save_bits[t] = reasons[c, ii]
        for s in range(raw.shape[2]):
            save_raw[t, s] = raw[c, ii, s]
        refresh_row(ii, c, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                    c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                    fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
    return nt


def overlay_off(j, c, nt, nom, nlist, n_nom, pst, prio, pod_cls, used, nz_used, c_request,
                c_nonzero, reasons, raw, mark, touched, save_bits, save_raw):
    """``overlay_on``'s ``nt`` nodes as they were before pod ``j``'s cycle:
    the nominated pods taken off again, class ``c``'s saved answers back."""
    overlay(j, prio[j], -1, nom, nlist, n_nom, pst, prio, pod_cls, c_request, c_nonzero, used,
            nz_used, mark, touched)
    for t in range(nt):
        ii = touched[t]
        mark[ii] = 0
        reasons[c, ii] = save_bits[t]
        for s in range(raw.shape[2]):
            raw[c, ii, s] = save_raw[t, s]


def nominate(j, target, nom, nlist, n_nom, prio):
    """Pod ``j`` nominated to node ``target`` (``nom`` [P] each pod's node,
    -1 none; ``nlist[:n_nom]`` the nominated pods, in no order): the pods
    nominated there with a lower priority lose their nomination (the list
    walked, not every pod).  Returns the number of nominations after."""
    pj = prio[j]
    t = n_nom - 1
    while t >= 0:
        k = nlist[t]
        if nom[k] == target and k != j and prio[k] < pj:
            # the list's last in its place (already walked, from the end)
            nom[k] = -1
            n_nom -= 1
            nlist[t] = nlist[n_nom]
        t -= 1
    if nom[j] < 0:
        nlist[n_nom] = j
        n_nom += 1
    nom[j] = target
    return n_nom


def nom_drop(k, nom, nlist, n_nom):
    """Pod ``k``'s nomination ends (it binds, is deleted or its node is):
    off ``nlist[:n_nom]`` (the list's last in its place).  Returns the
    number of nominations after."""
    if nom[k] < 0:
        return n_nom
    nom[k] = -1
    for t in range(n_nom):
        if nlist[t] == k:
            nlist[t] = nlist[n_nom - 1]
            return n_nom - 1
    return n_nom


def take_pod(i, k, sign, preq, used):
    """Pod ``k``'s requests (``preq[k]``) off node ``i`` (``sign`` -1) or
    back (1), for a Filter call of the victim search (scores are not read
    there)."""
    for r in range(used.shape[1]):
        used[i, r] += sign * preq[k, r]
    used[i, RES_PODS] += sign


def fits_now(i, c, alloc, used, c_request, c_anything, c_ignored, c_fit_filter):
    """Whether NodeResourcesFit passes class ``c`` on node ``i`` now (the
    other filters pass it on a node the search visits)."""
    if not c_fit_filter[c]:
        return True
    return fit_reasons(i, alloc, used, c_request[c], c_anything[c], c_ignored[c]) == 0


def more_important(a, b, prio, pstart, krank):
    """MoreImportantPod: higher priority, then the earlier start, then the
    pod key (the victim table's slot order)."""
    if prio[a] != prio[b]:
        return prio[a] > prio[b]
    if pstart[a] != pstart[b]:
        return pstart[a] < pstart[b]
    return krank[a] < krank[b]


def pdb_allowed(n_pdb, pdb_kind, pdb_val, pmatch, pst, gone, victim, left):
    """Each PDB's disruptionsAllowed now into ``left[:n_pdb]``
    (``parsing.pdb.disruptions_allowed`` over the pods bound now: queue
    pods ``pst`` BOUND, bound pods of the manifests not ``gone``; a pod
    terminating by preemption, ``victim`` nonzero, is expected but not
    healthy)."""
    n_q = pst.shape[0]
    for p in range(n_pdb):
        kd = pdb_kind[p]
        val = pdb_val[p]
        if kd == PDB_FIXED:
            left[p] = val
            continue
        expected = 0
        healthy = 0
        for k in range(pmatch.shape[0]):
            code = pmatch[k, p]
            if code == 0:
                continue
            if k < n_q:
                if pst[k] != P_BOUND:
                    continue
            elif gone[k] != 0:
                continue
            expected += 1
            if code == PDB_HEALTHY and victim[k] == 0:
                healthy += 1
        if kd == PDB_MAX_UNAVAILABLE:
            desired = max(0, expected - val)
        elif kd == PDB_MAX_UNAVAILABLE_PCT:
            desired = max(0, expected - (val * expected + 99) // 100)
        elif kd == PDB_MIN_AVAILABLE:
            desired = val
        elif kd == PDB_MIN_AVAILABLE_PCT:
            desired = (val * expected + 99) // 100
        else:
            expected = 0
            desired = 0
        got = healthy - desired
        left[p] = got if expected > 0 and got > 0 else 0


def pdb_flags(k, cur, n_pdb, pmatch, left, run, vflag):
    """filterPodsWithPDBViolation over ``cur[:k]`` (importance order):
    ``vflag[a]`` 1 when pod ``cur[a]`` violates (a PDB that applies to it
    falls below 0 on ``run``, a running copy of ``left``), else 0."""
    for p in range(n_pdb):
        run[p] = left[p]
    for a in range(k):
        s = cur[a]
        hit = 0
        for p in range(n_pdb):
            code = pmatch[s, p]
            if code == PDB_HEALTHY or code == PDB_DELETING:
                run[p] -= 1
                if run[p] < 0:
                    hit = 1
        vflag[a] = hit


def victims_on(i, c, k, cur, alloc, used, c_request, c_anything, c_ignored, c_fit_filter,
               preq, prio, pstart, krank, stats, n_pdb, pmatch, left, vflag):
    """SelectVictimsOnNode for node ``i`` whose ``k`` (> 0) bound pods of
    lower priority are ``cur[:k]`` (any order): the victims in ``cur``
    most important first, ``stats`` [4] their highest priority, sum of
    priority + 2^31, the earliest start among the highest-priority ones
    and their PDB violations; returns how many (0: not a candidate).
    ``used`` is as it was after.  ``left`` [2, .]: row 0 each PDB's
    disruptionsAllowed, row 1 scratch; ``vflag`` scratch."""
    for a in range(k):
        take_pod(i, cur[a], -1, preq, used)
    if not fits_now(i, c, alloc, used, c_request, c_anything, c_ignored, c_fit_filter):
        for a in range(k):
            take_pod(i, cur[a], 1, preq, used)
        return 0
    for a in range(1, k):
        s = cur[a]
        b = a - 1
        while b >= 0 and more_important(s, cur[b], prio, pstart, krank):
            cur[b + 1] = cur[b]
            b -= 1
        cur[b + 1] = s
    first = 1
    if n_pdb > 0:
        pdb_flags(k, cur, n_pdb, pmatch, left[0], left[1], vflag)
        first = 0
    else:
        for a in range(k):
            vflag[a] = 0
    # violating pods reprieved first (want 1), then the others; a victim's
    # flag gains 2
    for want in range(first, 2):
        for a in range(k):
            if vflag[a] != 1 - want:
                continue
            s = cur[a]
            take_pod(i, s, 1, preq, used)
            if not fits_now(i, c, alloc, used, c_request, c_anything, c_ignored, c_fit_filter):
                take_pod(i, s, -1, preq, used)
                vflag[a] += 2
    nv = 0
    n_viol = 0
    for a in range(k):
        if vflag[a] >= 2:
            n_viol += vflag[a] - 2
            cur[nv] = cur[a]
            nv += 1
    for a in range(nv):
        take_pod(i, cur[a], 1, preq, used)
    if nv == 0:
        return 0
    top = prio[cur[0]]
    total = 0
    earliest = pstart[cur[0]]
    for a in range(nv):
        s = cur[a]
        total += prio[s] + PRIORITY_OFFSET
        if prio[s] == top and pstart[s] < earliest:
            earliest = pstart[s]
    stats[0] = top
    stats[1] = total
    stats[2] = earliest
    stats[3] = n_viol
    return nv


def better(nv, stats, best_nv, best):
    """pickOneNodeForPreemption: a candidate (``nv`` victims, ``stats``)
    before the best so far (the earlier visited on a tie)."""
    if stats[3] != best[3]:
        return stats[3] < best[3]
    if stats[0] != best[0]:
        return stats[0] < best[0]
    if stats[1] != best[1]:
        return stats[1] < best[1]
    if nv != best_nv:
        return nv < best_nv
    return stats[2] > best[2]


def post_filter(j, c, n, attempt, seed_mix, pct, least, alloc, used, c_request, c_anything,
                c_ignored, c_fit_filter, static_bits, preq, prio, pstart, krank, pst, gone,
                victim, pot, head, nxt, cur, vout, stats, n_pdb, pdb_kind, pdb_val, pmatch,
                left, vflag):
    """DefaultPreemption for pod ``j`` (class ``c``) whose cycle failed on
    the ``n`` nodes (``used`` with the nominated pods counted): (the node
    to nominate, -1 none; its victims, in ``vout`` most important first:
    pod k < P the queue's, P + b the manifests' bound pod b).  ``stats``
    [8] scratch; ``n_pdb`` PDBs (``pdb_kind`` / ``pdb_val``, ``pmatch``:
    module doc); ``left`` [2, .], ``vflag`` scratch."""
    m = 0
    for i in range(n):
        if static_bits[c, i] == 0:
            pot[m] = i
            m += 1
    # (the node, its victims' count, the lowest bound priority: ``preempt_on``)
    return preempt_on(j, c, m, n, attempt, seed_mix, pct, least, alloc, used, c_request,
                      c_anything, c_ignored, c_fit_filter, preq, prio, pstart, krank, pst, gone,
                      victim, pot, head, nxt, cur, vout, stats, n_pdb, pdb_kind, pdb_val,
                      pmatch, left, vflag)


def preempt_on(j, c, m, n, attempt, seed_mix, pct, least, alloc, used, c_request, c_anything,
               c_ignored, c_fit_filter, preq, prio, pstart, krank, pst, gone, victim, pot, head,
               nxt, cur, vout, stats, n_pdb, pdb_kind, pdb_val, pmatch, left, vflag):
    """``post_filter``'s search over the ``m`` potential nodes ``pot[:m]``
    (row order) of the ``n`` local rows; ``head`` [n] / ``nxt`` [P + B]
    each row's list of the pods bound there (``_candidates.row_push`` at
    each binding, ``preempt_start``); ``gone`` [P + B]: nonzero for a
    manifests' bound pod no longer there; ``victim`` [P + B]: nonzero for a
    pod preempted (still bound: terminating, a victim again).  Third: the
    lowest priority among the bound pods (``LOW_NONE`` none), read on the
    way (``ls[L_LOW]``: a pod of that priority or below finds no victim
    anywhere, its PostFilter skipped)."""
    pj = prio[j]
    # every row's list walked once (the pods gone since unlinked): the
    # lowest bound priority of all rows, and whether any bound pod is below
    # pod j's; the visit reads the potential rows' lists again
    low = 0
    lowest = LOW_NONE
    for i in range(n):
        k, lo = row_low(i, pj, prio, pst, gone, head, nxt, cur, 0, False)
        low += k
        if lo < lowest:
            lowest = lo
    if m == 0 or low == 0:
        return -1, 0, lowest
    if n_pdb > 0:
        pdb_allowed(n_pdb, pdb_kind, pdb_val, pmatch, pst, gone, victim, left[0])
    cap = num_candidates(m, pct, least)
    listed = max(cap, 1)
    off = preempt_offset(seed_mix, attempt, m)
    n_ok = 0
    n_bad = 0
    best_node = -1
    best_nv = 0
    for t in range(m):
        q = off + t
        if q >= m:
            q -= m
        i = pot[q]
        k, _ = row_low(i, pj, prio, pst, gone, head, nxt, cur, 0, True)
        if k == 0:
            continue
        nv = victims_on(i, c, k, cur, alloc, used, c_request, c_anything, c_ignored,
                        c_fit_filter, preq, prio, pstart, krank, stats, n_pdb, pmatch, left,
                        vflag)
        if nv == 0:
            continue
        # upstream's two lists (non-violating, violating), each its first cap
        if stats[3] > 0:
            n_bad += 1
            shown = n_bad <= listed
        else:
            n_ok += 1
            shown = n_ok <= listed
        if shown and (best_node < 0 or better(nv, stats, best_nv, stats[4:])):
            best_node = i
            best_nv = nv
            for s in range(4):
                stats[4 + s] = stats[s]
            for a in range(nv):
                vout[a] = cur[a]
        if n_ok >= 1 and min(n_ok, cap) + min(n_bad, cap) >= cap:
            break
    return best_node, best_nv, lowest


def evict_from(i, v, n_q, every, alloc, used, nz_used, c_request, c_nonzero, c_anything,
               c_ignored, c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
               strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res,
               bal_kind, hi, hi_cnt, seed_mix, tkey, old_reasons, old_raw, dirty, preq, pnz,
               pst, gone):
    """Pod ``v`` (a queue pod v < ``n_q``, else a manifests' bound pod)
    leaves node ``i``: gone, its requests (``preq[v]`` / ``pnz[v]``) off,
    the node's answers recomputed.  Marking a victim and logging are the
    caller's."""
    if every:
        keep_node(i, reasons, raw, old_reasons, old_raw)
    if v < n_q:
        pst[v] = P_GONE
    else:
        gone[v] = 1
    for r in range(used.shape[1]):
        used[i, r] -= preq[v, r]
    used[i, RES_PODS] -= 1
    nz_used[i, 0] -= pnz[v, 0]
    nz_used[i, 1] -= pnz[v, 1]
    refresh_node(i, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                 c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                 fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
    fold_node(i, every, reasons, raw, c_active, c_norm, c_weights, hi, hi_cnt, seed_mix, used,
              tkey, old_reasons, old_raw, dirty)


# ---------------------------------------------------------------------------
# A termination grace above 0 (``schedule_one``'s ``_evict`` / ``terminate_due``,
# as ``_gpu_preempt``'s ``terminate_*`` do it for the openb engine): a victim
# stays bound, its requests held, terminating by preemption (``victim``
# nonzero while there), until its first eviction's time + grace; then it
# leaves as an assigned pod's deletion.  Chosen again while terminating it
# keeps that deadline, but every eviction's deadline is a time the
# scheduler's clock stops at (and no stall stop while one is pending).
# ``vt`` [P + B] float64: each victim's first eviction time; ``tqp`` [P + B]:
# the victims in the order of their first eviction (their deadlines in that
# order: the terminating heap's (deadline, push) order); ``tqt`` [R]
# float64: the pending deadlines, a ring, equal ones once; ``tq`` [TQ_N].

def terminating_on(j, i, prio, pst, gone, victim, head, nxt):
    """PodEligibleToPreemptOthers' terminating rule: node ``i`` (pod
    ``j``'s nominated node) holds a pod of lower priority than ``j``'s
    terminating by preemption (a victim still there), so ``j`` may not
    preempt now.  Row ``i``'s list of bound pods (``head`` / ``nxt``) read,
    not every pod."""
    n_q = pst.shape[0]
    pj = prio[j]
    x = head[i]
    while x >= 0:
        if victim[x] != 0 and prio[x] < pj and (
                pst[x] == P_BOUND if x < n_q else gone[x] == 0):
            return True
        x = nxt[x]
    return False


def may_search(j, low, grace, may, prio, nom, pst, gone, victim, head, nxt):
    """Whether pod ``j``'s failed cycle runs PostFilter's search: it may
    preempt (``may`` empty: no pod may), its priority is above ``low``
    (at most the lowest bound priority: below it nothing to evict, no
    candidate), and, with a ``grace`` above 0, its nominated node holds no
    lower-priority pod terminating by preemption (``terminating_on``)."""
    if may.shape[0] == 0 or may[j] == 0 or prio[j] <= low:
        return False
    return not (grace > 0.0 and nom[j] >= 0
                and terminating_on(j, nom[j], prio, pst, gone, victim, head, nxt))


def evicted(v, now, victim, vt):
    """Pod ``v`` chosen as a victim at ``now``: counted in ``victim``, its
    first eviction's time in ``vt``.  Whether this is its first."""
    first = victim[v] == 0
    if first:
        vt[v] = now
    victim[v] += 1
    return first


def bound_on(j, i, now, lists, dur, qi, qf, pst, dk, ds, dp, prio, nom, nlist, head, nxt,
             out_node, out_bind, log_t, log_pod, ls, s_m, s_nnom, s_low):
    """Pod ``j`` bound on node ``i`` at ``now`` (its node's usage and
    answers already the caller's): the queue's binding, its nomination
    ended, the outputs and the log; with ``lists`` (preemption) pushed on
    the row's list of bound pods and the lowest bound priority lowered.
    ``ls`` the loop's scalars, ``s_m`` / ``s_nnom`` / ``s_low`` their
    slots of the log rows, the nominations, the lowest priority."""
    q_bound(j, dur, qi, qf, pst, dk, ds, dp)
    if lists:
        row_push(i, j, head, nxt)
        if prio[j] < ls[s_low]:
            ls[s_low] = prio[j]
    ls[s_nnom] = nom_drop(j, nom, nlist, ls[s_nnom])
    out_node[j] = i
    out_bind[j] = now
    ls[s_m] = log_change(ls[s_m], now, j, log_t, log_pod)


def terminate_victims(now, grace, nv, vout, victim, vt, tqp, tqt, tq):
    """The chosen victims ``vout[:nv]`` terminating from ``now`` (each
    eviction counted in ``victim``): those evicted for the first time
    queued in ``tqp`` (their eviction time in ``vt``), the deadline ``now +
    grace`` pending."""
    for a in range(nv):
        v = vout[a]
        if evicted(v, now, victim, vt):
            tqp[tq[T_TAIL]] = v
            tq[T_TAIL] += 1
    deadline_push(now + grace, tqt, tq)


def pop_terminated(now, grace, pst, gone, vt, tqp, tqt, tq):
    """The next victim whose grace ended by ``now`` and still bound: now
    gone (a queue pod ``pst`` GONE, a bound one ``gone``); the caller frees
    its node, logs it and moves the pool (an assigned pod's deletion).  -1
    when none is left, the deadlines due then passed."""
    n_q = pst.shape[0]
    while tq[T_HEAD] < tq[T_TAIL]:
        v = tqp[tq[T_HEAD]]
        if vt[v] + grace > now:
            break
        tq[T_HEAD] += 1
        if v < n_q:
            if pst[v] == P_BOUND:
                pst[v] = P_GONE
                return v
        elif gone[v] == 0:
            gone[v] = 1
            return v
    deadlines_pass(now, tqt, tq)
    return -1


# ls slots: the cluster loop's scalars between its steps (``attempt_open``,
# the pick, ``attempt_close``: the CPU twin's loop, and the CUDA form's, whose
# block picks while thread 0 runs the steps)
L_M = 0             # log rows used
L_NNOM = 1          # nominations outstanding
L_EVERY = 2         # 1: every node scored, the key trees kept (``start_answers``)
L_NT = 3            # the nodes this attempt's nominated overlay touched
L_COUNTED = 4       # 1: this attempt counts the nominated pods (``overlay_on``)
L_LOW = 5           # at most the lowest priority among the bound pods (``preempt_on``)
L_N = 6
Q_ATTEMPTED = 1     # ``_queue.ATTEMPT``


def preempt_start(n_q, out_victim, nom, mark, tq, gone, vt, head, nxt, bnode, ls):
    """The preemption state before the loop (``ls`` [L_N] zeros but
    ``L_EVERY``, set by the caller; ``vt`` each pod's first eviction time,
    NaN: not evicted yet; ``head`` / ``nxt`` each row's list of bound
    pods: the manifests' bound pods, on rows ``bnode``)."""
    for j in range(n_q):
        nom[j] = -1
    for k in range(out_victim.shape[0]):
        out_victim[k] = 0
        gone[k] = 0
    for k in range(vt.shape[0]):
        vt[k] = np.nan
    for k in range(tq.shape[0]):
        tq[k] = 0
    for i in range(mark.shape[0]):
        mark[i] = 0
        head[i] = -1
    for b in range(bnode.shape[0]):
        row_push(bnode[b], n_q + b, head, nxt)
    ls[L_M] = 0
    ls[L_NNOM] = 0
    ls[L_NT] = 0
    ls[L_COUNTED] = 0
    ls[L_LOW] = LOW_UNKNOWN


def attempt_open(alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored, c_fit_filter,
                 c_active, c_norm, c_weights, static_bits, reasons, raw, strategy, fit_res,
                 fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind, pod_cls, arr,
                 dep, dur, backoff0, backoff_max, max_unsched, seed_mix, out_node, out_bind, log_t,
                 log_pod, hi, hi_cnt, tkey, old_reasons, old_raw, dirty, qi, qf, pst, patt, pts,
                 aq, up, hk, hs, hp, dk, ds, dp, rank, ak, prio, may, krank, pstart, preq, pnz,
                 bnode, pct, least, out_victim, nom, nlist, pot, head, nxt, cur, vout, stats, mark,
                 touched, save_bits, save_raw, n_pdb, pdb_kind, pdb_val, pmatch, left, vflag,
                 grace, vt, tqp, tqt, tq, gone, ls):
    """The loop's next step up to an attempt's pick: ``_queue``'s answer;
    a termination (``Q_TERMINATE``, maybe none left: the deadlines passed)
    or a departure done here; an attempt (``Q_ATTEMPTED``, pod
    ``qi[Q_POD]``) with the nominated pods of priority >= its own counted
    on their nodes (``ls[L_COUNTED]``, ``ls[L_NT]``)."""
    kind = q_next_due(arr, dep, backoff0, backoff_max, max_unsched, qi, qf, pst, patt, pts,
                      aq, up, hk, hs, hp, dk, ds, dp, rank, ak, deadline_next(tqt, tq))
    if kind == Q_DONE:
        return kind
    n = alloc.shape[0]
    n_q = pod_cls.shape[0]
    every = ls[L_EVERY] != 0
    now = qf[Q_NOW]
    if kind == Q_TERMINATE:
        v = pop_terminated(now, grace, pst, gone, vt, tqp, tqt, tq)
        if v < 0:
            return kind
        # its grace over: it leaves as an assigned pod's deletion
        # (no conditional inside the call: its arguments must be one block)
        iv = out_node[v] if v < n_q else bnode[v - n_q]
        evict_from(iv, v, n_q, every, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                   c_ignored, c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons,
                   raw, strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                   bal_res, bal_kind, hi, hi_cnt, seed_mix, tkey, old_reasons, old_raw, dirty,
                   preq, pnz, pst, gone)
        ls[L_M] = log_change(ls[L_M], now, -1 - v, log_t, log_pod)
        move_all(now, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp, rank, ak)
        return kind
    j = qi[Q_POD]
    c = pod_cls[j]
    if kind == Q_DEPART:
        shift_pod(out_node[j], c, False, every, alloc, used, nz_used, c_request, c_nonzero,
                  c_anything, c_ignored, c_fit_filter, c_active, c_norm, c_weights,
                  static_bits, reasons, raw, strategy, fit_res, fit_kind, fit_weights,
                  shape_util, shape_score, bal_res, bal_kind, hi, hi_cnt, seed_mix, tkey,
                  old_reasons, old_raw, dirty)
        ls[L_M] = log_change(ls[L_M], now, -1 - j, log_t, log_pod)
        return kind
    nt = 0
    counted = n > 0 and ls[L_NNOM] > 0
    if counted:
        # the nominated pods of priority >= j's use their nodes in this
        # cycle: class c's answers there recomputed, a scan
        nt = overlay_on(j, c, nom, nlist, ls[L_NNOM], pst, prio, pod_cls, alloc, used, nz_used,
                        c_request, c_nonzero, c_anything, c_ignored, c_fit_filter, c_active,
                        static_bits, reasons, raw, strategy, fit_res, fit_kind, fit_weights,
                        shape_util, shape_score, bal_res, bal_kind, mark, touched, save_bits,
                        save_raw)
    ls[L_NT] = nt
    ls[L_COUNTED] = 1 if counted else 0
    return Q_ATTEMPTED


def attempt_close(j, i, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                        c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                        strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res,
                        bal_kind, pod_cls, arr, dep, dur, backoff0, backoff_max, max_unsched,
                        seed_mix, out_node, out_bind, log_t, log_pod, hi, hi_cnt, tkey,
                        old_reasons, old_raw, dirty, qi, qf, pst, patt, pts, aq, up, hk, hs, hp,
                        dk, ds, dp, rank, ak, prio, may, krank, pstart, preq, pnz, bnode, pct,
                        least, out_victim, nom, nlist, pot, head, nxt, cur, vout, stats, mark,
                        touched, save_bits, save_raw, n_pdb, pdb_kind, pdb_val, pmatch, left,
                        vflag, grace, vt, tqp, tqt, tq, gone, ls):
    """Pod ``j``'s attempt after its pick ``i`` (-1: it fits nowhere):
    PostFilter when it may preempt (``search_due``), then the rest
    (``attempt_finish``)."""
    c = pod_cls[j]
    target = -1
    nv = 0
    if search_due(j, i, alloc.shape[0], grace, may, prio, nom, pst, gone, out_victim, head, nxt,
                  ls[L_LOW]):
        target, nv, lowest = post_filter(
            j, c, alloc.shape[0], qi[Q_ATTEMPT], seed_mix, pct, least, alloc, used, c_request,
            c_anything, c_ignored, c_fit_filter, static_bits, preq, prio, pstart, krank, pst,
            gone, out_victim, pot, head, nxt, cur, vout, stats, n_pdb, pdb_kind, pdb_val,
            pmatch, left, vflag)
        ls[L_LOW] = lowest
    attempt_finish(j, i, target, nv, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                   c_ignored, c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                   strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res,
                   bal_kind, pod_cls, arr, dep, dur, backoff0, backoff_max, max_unsched, seed_mix,
                   out_node, out_bind, log_t, log_pod, hi, hi_cnt, tkey, old_reasons, old_raw,
                   dirty, qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak, prio,
                   may, krank, pstart, preq, pnz, bnode, pct, least, out_victim, nom, nlist, pot,
                   head, nxt, cur, vout, stats, mark, touched, save_bits, save_raw, n_pdb,
                   pdb_kind, pdb_val, pmatch, left, vflag, grace, vt, tqp, tqt, tq, gone, ls)


def search_due(j, i, n, grace, may, prio, nom, pst, gone, victim, head, nxt, low):
    """Whether pod ``j``'s attempt (pick ``i``, -1 none, on ``n`` rows)
    runs PostFilter's search: it fits nowhere and ``may_search`` (a pod
    of priority ``low``, ``ls[L_LOW]``, or below has no lower-priority pod
    to evict anywhere: the search would find no candidate, no scan)."""
    return i < 0 and n > 0 and may_search(j, low, grace, may, prio, nom, pst, gone, victim,
                                          head, nxt)


def attempt_finish(j, i, target, nv, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                   c_ignored, c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons,
                   raw, strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                   bal_res, bal_kind, pod_cls, arr, dep, dur, backoff0, backoff_max, max_unsched,
                   seed_mix, out_node, out_bind, log_t, log_pod, hi, hi_cnt, tkey, old_reasons,
                   old_raw, dirty, qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank,
                   ak, prio, may, krank, pstart, preq, pnz, bnode, pct, least, out_victim, nom,
                   nlist, pot, head, nxt, cur, vout, stats, mark, touched, save_bits, save_raw,
                   n_pdb, pdb_kind, pdb_val, pmatch, left, vflag, grace, vt, tqp, tqt, tq, gone,
                   ls):
    """Pod ``j``'s attempt after its pick ``i`` and PostFilter's answer
    (``target`` -1: none or not run; its ``nv`` victims in ``vout``): the
    nominated overlay off, then the binding, the failure or the preemption
    (module doc).  ``local_preempt_cuda``'s thread 0 runs it after the
    block's search."""
    n = alloc.shape[0]
    n_q = pod_cls.shape[0]
    c = pod_cls[j]
    every = ls[L_EVERY] != 0
    now = qf[Q_NOW]
    if ls[L_COUNTED] != 0:
        overlay_off(j, c, ls[L_NT], nom, nlist, ls[L_NNOM], pst, prio, pod_cls, used, nz_used,
                    c_request, c_nonzero, reasons, raw, mark, touched, save_bits, save_raw)
    if i >= 0:
        shift_pod(i, c, True, every, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                  c_ignored, c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons,
                  raw, strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                  bal_res, bal_kind, hi, hi_cnt, seed_mix, tkey, old_reasons, old_raw, dirty)
        bound_on(j, i, now, True, dur, qi, qf, pst, dk, ds, dp, prio, nom, nlist, head, nxt,
                 out_node, out_bind, log_t, log_pod, ls, L_M, L_NNOM, L_LOW)
        return
    if target < 0:
        q_failed(j, qi, qf, pst, pts, up)
        return
    # nominated: lower-priority nominations to the node end
    ls[L_NNOM] = nominate(j, target, nom, nlist, ls[L_NNOM], prio)
    if grace > 0.0:
        # the victims terminate on the node; no pod left, so the
        # preemptor goes to the unschedulable pool
        terminate_victims(now, grace, nv, vout, out_victim, vt, tqp, tqt, tq)
        q_failed(j, qi, qf, pst, pts, up)
        return
    m = ls[L_M]
    for a in range(nv):
        v = vout[a]
        evicted(v, now, out_victim, vt)
        evict_from(target, v, n_q, every, alloc, used, nz_used, c_request, c_nonzero,
                   c_anything, c_ignored, c_fit_filter, c_active, c_norm, c_weights,
                   static_bits, reasons, raw, strategy, fit_res, fit_kind, fit_weights,
                   shape_util, shape_score, bal_res, bal_kind, hi, hi_cnt, seed_mix, tkey,
                   old_reasons, old_raw, dirty, preq, pnz, pst, gone)
        m = log_change(m, now, -1 - v, log_t, log_pod)
    ls[L_M] = m
    # the victims' deletion moved the pool during the cycle: the
    # preemptor goes back as a pod with a move request (backoffQ)
    move_all(now, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp, rank, ak)
    pts[j] = now
    move(j, now, backoff0, backoff_max, qi, pst, patt, pts, aq, hk, hs, hp, rank, ak)


def run_local_preempt_cluster(alloc, used, nz_used, c_request, c_nonzero, c_anything,
                              c_ignored, c_fit_filter, c_active, c_norm, c_weights, static_bits,
                              reasons, raw, strategy, fit_res, fit_kind, fit_weights,
                              shape_util, shape_score, bal_res, bal_kind, pod_cls, arr, dep,
                              dur, backoff0, backoff_max, max_unsched, num_to_find, seed_mix,
                              out_node, out_bind, out_tries, log_t, log_pod, n_log, end,
                              positions, total_scratch, ties_scratch, hi_scratch, hi, hi_cnt,
                              tkey, old_reasons, old_raw, dirty,
                              qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak,
                              prio, may, krank, pstart, preq, pnz, bnode, pct, least,
                              out_victim, nom, nlist, pot, head, nxt, cur, vout, stats, mark,
                              touched, save_bits, save_raw, n_pdb, pdb_kind, pdb_val, pmatch, left,
                              vflag, grace, vt, tqp, tqt, tq, gone, ls):
    """``_local_trace.run_local_trace_cluster`` (its arguments first, the
    same outputs) with DefaultPreemption (module doc).  Pods k < P are the
    queue's (``pod_cls``' order), P + b the manifests' bound pod b (on
    local node ``bnode[b]``, in ``used`` from the start); per pod [P + B]
    ``prio``, ``may`` (first P), ``krank``, ``pstart``, ``preq`` [P + B, R]
    (pods column 0) and ``pnz`` [P + B, 2] its requests and non-zero
    cpu / memory; ``pct`` / ``least`` the profile's
    minCandidateNodesPercentage / minCandidateNodesAbsolute; out:
    ``out_victim`` [P + B] how many times each pod was preempted (1; a
    pod terminating may be chosen again).  Scratch: ``nom`` [P]
    (each pod's nominated node), ``nlist`` [P] (the nominated pods, the
    first ``ls[L_NNOM]``), ``pot``, ``mark``, ``touched`` [n],
    ``save_bits`` [n], ``save_raw`` [n, S], ``cur``, ``vout`` [P + B],
    ``stats`` [8]; ``head`` [n] / ``nxt`` [P + B] each row's list of
    the pods bound there (module doc).  PodDisruptionBudgets: ``n_pdb`` of
    them, each ``pdb_kind`` / ``pdb_val`` [>= n_pdb] (how its
    disruptionsAllowed comes), ``pmatch`` [P + B, >= n_pdb] (module doc);
    scratch ``left`` [2, >= n_pdb], ``vflag`` [P + B].  ``grace``: the
    termination grace in seconds (0: the victims leave at once; above 0
    they terminate first, ``tqp`` [P + B], ``tqt`` [R] float64 and ``tq``
    [TQ_N] zeros the section above's scratch); out: ``vt`` [P + B]
    float64 each pod's first eviction's time (seconds, NaN never evicted:
    with ``out_victim`` and the log it tells a victim that departed while
    terminating, before ``vt + grace``, from one whose grace ended;
    ``tq[T_OVER]`` 1 after when ``tqt`` was too small); ``gone`` [P + B]
    scratch (a manifests' bound pod no longer there); ``ls`` [L_N]
    scratch (the loop's scalars: ``attempt_open`` / ``attempt_close``)."""
    n = alloc.shape[0]
    every = start_answers(alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                          c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                          strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                          bal_res, bal_kind, num_to_find, positions, hi, hi_cnt, seed_mix,
                          tkey)
    trace_start(pod_cls, out_node, out_bind, qi, qf, pst, patt, pts)
    preempt_start(pod_cls.shape[0], out_victim, nom, mark, tq, gone, vt, head, nxt, bnode, ls)
    ls[L_EVERY] = 1 if every else 0
    start = 0
    while True:
        kind = attempt_open(alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                            c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                            strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                            bal_res, bal_kind, pod_cls, arr, dep, dur, backoff0, backoff_max,
                            max_unsched, seed_mix, out_node, out_bind, log_t, log_pod, hi, hi_cnt,
                            tkey, old_reasons, old_raw, dirty, qi, qf, pst, patt, pts, aq, up, hk,
                            hs, hp, dk, ds, dp, rank, ak, prio, may, krank, pstart, preq, pnz,
                            bnode, pct, least, out_victim, nom, nlist, pot, head, nxt, cur, vout,
                            stats, mark, touched, save_bits, save_raw, n_pdb, pdb_kind, pdb_val,
                            pmatch, left, vflag, grace, vt, tqp, tqt, tq, gone, ls)
        if kind == Q_DONE:
            break
        if kind != Q_ATTEMPTED:
            continue
        j = qi[Q_POD]
        i = -1
        if n > 0:
            i, start = pick_next(pod_cls[j], n, every and ls[L_COUNTED] == 0, start, reasons,
                                 raw, c_active, c_norm, c_weights, num_to_find, seed_mix, used,
                                 positions, total_scratch, ties_scratch, hi_scratch, tkey)
        attempt_close(j, i, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                      c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                      strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res,
                      bal_kind, pod_cls, arr, dep, dur, backoff0, backoff_max, max_unsched,
                      seed_mix, out_node, out_bind, log_t, log_pod, hi, hi_cnt, tkey, old_reasons,
                      old_raw, dirty, qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank,
                      ak, prio, may, krank, pstart, preq, pnz, bnode, pct, least, out_victim, nom,
                      nlist, pot, head, nxt, cur, vout, stats, mark, touched, save_bits, save_raw,
                      n_pdb, pdb_kind, pdb_val, pmatch, left, vflag, grace, vt, tqp, tqt, tq,
                      gone, ls)
    trace_end(ls[L_M], qf, patt, n_log, end, out_tries)
