"""One openb cluster's run with timed node events (a scenario's node steps),
on the batched engine's rules (``_rules``), decision (``_env.decide``)
and queue (``_queue.q_next_steps``): plain Python on scalars and array
rows, no allocation, compiled with ``njit`` for the CPU twin
(``openb_events``, one cluster per ``prange`` iteration of
``_openb_events_driver``) and with ``cuda.jit(device=True)`` for the CUDA
form (``openb_events_cuda``, a block per cluster: its thread 0 the serial
steps of ``run_events_cluster``'s loop, the block the pick and the
victim search between them): one source.

The cluster's N local rows are the rows its Simulation's state gives its
nodes (a node added later takes a row from the start, absent until its
time; a row freed by a removal is taken by the next node added, as the
state reuses rows).  ``live`` [N] says which rows hold a node now,
``cordoned`` [N] which of them are unschedulable.  A row that is absent
or cordoned passes no filter for any pod: its pod slots are lowered by
``BLOCKED`` (NodeResourcesFit's pod count then says no; the trace's pods
tolerate no taint, so NodeUnschedulable rejects every one of them on a
cordoned node), and its version bumped so the answer cache forgets it.

Node event e (time order, at ``ev_t[e]`` seconds) of kind ``ev_kind[e]``
on local row ``ev_row[e]``: ``EV_ADD`` puts universe node ``ev_x[e]``
there (its GPUs, model, cpu, memory, pod slots; empty; cordoned when
``ev_flag[e]``), ``EV_UPDATE`` sets the row's cordon to ``ev_flag[e]``,
``EV_EVICT`` (a drain, after its cordon) and ``EV_DELETE`` free the row's
bound pods (``out_why`` ``WHY_EVICTED`` / ``WHY_DELETED``), a delete then
takes the node away; ``EV_POD_DELETE`` deletes the run's pod
``made[ev_x[e]]`` (a scenario's created pod: bound, it frees its node and
leaves, ``WHY_POD_DELETED``; pending, it leaves the queue), at its time
before the departures (``_queue.q_next_steps``' lead kind).  The
unschedulable pool moves as the Simulation's queue moves it: Node/Add,
Node/Update, Pod/Delete (per freed pod, once is the same), Node/Delete,
each to the pods whose rejecting plugins listen to it
(``_queue.move_where``).  A failed pod's rejectors: each live row's
first failing filter, NodeUnschedulable on a cordoned row
(``cordon_interest``), else NodeResourcesFit or GpuShareFit
(``fit_interest``: they listen to the same events); with no live row,
none: the pod moves on any event, an arrival too (``_queue.admit_moving``).

OpenbTieRank: a row's static score (``static_total`` [N]) is its node's,
``u_static`` [U] (the tie weight times the node's rank label), taken with
the node when it is added (``first_static`` at the start).

Fragmentation: the Simulation's ``GpuTracker`` sums the live rows' values
in row order with ``numpy.sum`` (``live_frag``: the same pairwise tree
over the live rows gathered).  Each change logs it (``frag_log``); on the
device thread 0's step leaves the sum to the block after it
(``openb_events_cuda.block_frag``: the rows gathered and the tree's
leaves summed by its threads, the same bits), the start's alone summed by
thread 0.  What waits is one row's changes over one live set: before a
step changes another row or the live set (a node event, a departure, a
binding, a preemption's evictions) it calls ``frag_before``, which sums
anything still waiting on thread 0 (the block's sum runs between steps,
so on the device nothing waits there).

DefaultPreemption (a run's flag ``pre``; ``_gpu_preempt``'s nominated-pod
overlay, victim search and pick, compiled beneath this module): a failed
pod's candidates are the live, schedulable rows (``potential_rows``,
kept with the live rows' counts as node events change them:
``rows_refresh``; ``post_filter_rows`` visits them from the seeded offset
of their number),
the victims leave at once (``evict_victims``), a Pod/Delete for the pool,
the preemptor goes back with a move request; a node's deletion ends the
nominations to it, a cordon keeps them.  With a termination grace above
0 (the run's ``grace``) the victims terminate on their node (holding
it) until their first eviction + grace and the preemptor waits in the
pool (``_gpu_preempt.terminate_later`` / ``waits_for_victims``); each
deadline is a time the clock stops at (``_queue.q_next_steps_due``), and
then the victims still bound leave (``terminate_where``) -- one a drain,
a removal, a Pod delete or its departure took off before is gone, its
termination finds nothing.
"""

# ruff: noqa: F821

NAN = float("nan")
# ``_queue``'s answers, slots and interest bits (a compiled namespace holds functions only)
Q_DONE = 0
Q_DEPART = 2
Q_NODE = 3
Q_TERMINATE = 4
Q_POD = 10
Q_ATTEMPT = 11
Q_CYCLE = 1             # _queue.ATTEMPT: an attempt's cycle (``events_open``)
Q_NOW = 0
P_NOT_ARRIVED = 0
P_BOUND = 4
P_GONE = 5
I_POD_DELETE = 1
I_NODE_ADD = 2
I_NODE_UPDATE = 4
I_NODE_DELETE = 8
T_HEAD = 0              # ``_gpu_preempt``'s tq slots (the victims terminating)
T_TAIL = 1
T_WHEAD = 2
T_WLEN = 3

EV_ADD = 0
EV_UPDATE = 1
EV_EVICT = 2
EV_DELETE = 3
EV_POD_DELETE = 4
WHY_DELETED = 1
WHY_EVICTED = 2
WHY_POD_DELETED = 3     # deleted by a scenario's step (not with its node)
WHY_PREEMPTED = 4       # a victim of DefaultPreemption
W_NOM = 0               # ``_gpu_preempt``'s pw columns: nominated node, the chosen victims
W_VOUT = 5
N_CNT = 1               # ``_gpu_preempt``'s nw columns: a node's nominations, its last one
N_TAIL = 2
S_STATS = 8             # ``_gpu_preempt``'s ps slots: a node's statistics, the best's after
BLOCKED = 1 << 40       # pod slots a row that is absent or cordoned lacks
# ``rs`` [RS_N] int64: a run's scalars between its loop's steps (on the
# device, the slots thread 0 leaves for the block)
RS_M = 0                # log rows used
RS_LIVE = 1             # live rows
RS_CORD = 2             # live rows cordoned
RS_NPOT = 3             # DefaultPreemption's potential rows (``pot[:RS_NPOT]``)
RS_KIND = 4             # the step ``events_open`` answered
RS_WAITS = 5            # 1: the attempt's pod may not preempt now (``preempt_waits``)
RS_DEFER = 6            # 1: a change's fragmentation left to the block (``frag_log``; the device)
RS_F_FIRST = 7          # the first log row waiting for its fragmentation
RS_F_ROW = 8            # the row whose changes they follow
RS_F_N = 9              # how many wait (consecutive log rows from RS_F_FIRST)
RS_F_POS = 10           # the block's scratch: that row's place among the live rows (-1 absent)
RS_F_LEAVES = 11        # ... and the summation tree's leaves
RS_N = 12
PW_BLOCK = 128          # numpy's pairwise block (``pairwise``)
PW_LANES = 8


def pairwise_sum(a, m, leaf_val, s_lo, s_m, s_st, s_v):
    """``numpy.sum`` of ``a[0:m]`` (its pairwise tree: blocks of at most 128
    by ``leaf_sum``, halves split at a multiple of eight), walked with an
    explicit stack (``s_*`` [64]: no recursion on the device).  With
    ``leaf_val`` not empty the leaves' sums are read from it (the leaves
    left to right, ``pairwise_leaves``' order) instead of summed here."""
    given = leaf_val.shape[0] > 0
    if m <= PW_BLOCK:
        return leaf_val[0] if given else leaf_sum(a, 0, m)
    d = 0
    s_lo[0] = 0
    s_m[0] = m
    s_st[0] = 0
    ret = 0.0
    t = 0
    while d >= 0:
        mm = s_m[d]
        if mm <= PW_BLOCK:
            if given:
                ret = leaf_val[t]
            else:
                ret = leaf_sum(a, s_lo[d], mm)
            t += 1
            d -= 1
            continue
        h = mm // 2
        h -= h % PW_LANES
        st = s_st[d]
        if st == 0:
            s_st[d] = 1
            s_lo[d + 1] = s_lo[d]
            s_m[d + 1] = h
            s_st[d + 1] = 0
            d += 1
        elif st == 1:
            s_v[d] = ret
            s_st[d] = 2
            s_lo[d + 1] = s_lo[d] + h
            s_m[d + 1] = mm - h
            s_st[d + 1] = 0
            d += 1
        else:
            ret = s_v[d] + ret
            d -= 1
    return ret


def pairwise_leaves(m, leaf_lo, leaf_len, s_lo, s_m):
    """The leaves of ``pairwise_sum``'s tree over ``m`` elements, left to
    right: each one's first element and length into ``leaf_lo`` /
    ``leaf_len`` (at least m // 64 + 1 long: a leaf of a split holds 64
    or more); how many.  ``s_*`` [64] a stack of the parts still to
    split."""
    d = 0
    s_lo[0] = 0
    s_m[0] = m
    t = 0
    while d >= 0:
        lo = s_lo[d]
        mm = s_m[d]
        d -= 1
        if mm <= PW_BLOCK:
            leaf_lo[t] = lo
            leaf_len[t] = mm
            t += 1
            continue
        h = mm // 2
        h -= h % PW_LANES
        # the right half below the left: the left is taken first
        s_lo[d + 1] = lo + h
        s_m[d + 1] = mm - h
        s_lo[d + 2] = lo
        s_m[d + 2] = h
        d += 2
    return t


def live_frag(n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v):
    """The live rows' fragmentation (GPU milli) summed as ``GpuTracker`` sums it."""
    m = 0
    for i in range(n):
        if live[i] != 0:
            fbuf[m] = nfrag[i]
            m += 1
    return pairwise_sum(fbuf, m, s_v[:0], s_lo, s_m, s_st, s_v)


def frag_log(m, row, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs):
    """Log row ``m``'s fragmentation after a change on ``row``: the live
    rows' sum now (``live_frag``), or, with ``rs[RS_DEFER]`` (the device:
    thread 0's step, the block after it), the row's value now kept in its
    place and the log row noted as waiting (``rs[RS_F_*]``) for
    ``openb_events_cuda.block_frag``.  The waiting rows are changes on
    one row over one live set: the step calls ``frag_before`` before it
    changes another row or the live set."""
    if rs[RS_DEFER] == 0:
        log_frag[m] = live_frag(n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v)
        return
    if rs[RS_F_N] == 0:
        rs[RS_F_FIRST] = m
        rs[RS_F_ROW] = row
    rs[RS_F_N] += 1
    log_frag[m] = nfrag[row]


def frag_before(row, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs):
    """Before a step changes ``row``'s fragmentation (-1: the live set,
    or reads the last logged one): the log rows waiting on another row
    (any row, for -1) get their sums now (``frag_flush``), so every
    waiting row's state is the live set and rows of now but for its own
    row's value.  Nothing waiting (the twin; on the device, a step's
    first change): nothing done."""
    if rs[RS_F_N] > 0 and (row < 0 or row != rs[RS_F_ROW]):
        frag_flush(n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs)


def frag_flush(n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs):
    """The waiting log rows summed here, one at a time (thread 0 on the
    device, between a step's changes): each is the live rows' sum with the
    waiting row at the value it logged (``live_frag``'s gather and tree,
    its bits)."""
    row = rs[RS_F_ROW]
    m0 = rs[RS_F_FIRST]
    for w in range(rs[RS_F_N]):
        m = 0
        for i in range(n):
            if live[i] != 0:
                fbuf[m] = log_frag[m0 + w] if i == row else nfrag[i]
                m += 1
        log_frag[m0 + w] = pairwise_sum(fbuf, m, s_v[:0], s_lo, s_m, s_st, s_v)
    rs[RS_F_N] = 0


def failure_bits(rs, fit_interest, cordon_interest):
    """The events a failed pod's rejecting plugins listen to (module doc):
    each live row's first failing filter's, from the live rows' counts
    (``rs[RS_LIVE]``, ``rs[RS_CORD]`` cordoned); 0 (any event) when no
    node is live."""
    m = 0
    if rs[RS_LIVE] > rs[RS_CORD]:
        m |= fit_interest
    if rs[RS_CORD] > 0:
        m |= cordon_interest
    return m


def rows_refresh(n, live, cordoned, pot, rs):
    """After the live rows or their cordons changed (the start, a node
    event): their counts (``rs[RS_LIVE]``, ``rs[RS_CORD]``) and the
    potential rows of DefaultPreemption, ``pot[:rs[RS_NPOT]]`` (``pot``
    empty: not kept), so an attempt reads no per-node loop for them."""
    nl = 0
    nc = 0
    for i in range(n):
        if live[i] != 0:
            nl += 1
            if cordoned[i] != 0:
                nc += 1
    rs[RS_LIVE] = nl
    rs[RS_CORD] = nc
    rs[RS_NPOT] = potential_rows(n, live, cordoned, pot) if pot.shape[0] > 0 else 0


def last_frag(rs, log_frag, frag0):
    """The live rows' fragmentation now: the last change's (the start's
    before any)."""
    m = rs[RS_M]
    return log_frag[m - 1] if m > 0 else frag0[0]


def bump(i, node_ver, version):
    version[0] += 1
    node_ver[i] = version[0]


def first_nodes(row0, cord0, u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap,
                gpu_count, model, cpu_cap, mem_cap, pods_cap, live, cordoned):
    """The local rows at the start: row i holds universe node ``row0[i]``
    (its columns; live; cordoned as ``cord0[i]``), or nothing (-1: zeros,
    not live)."""
    for i in range(row0.shape[0]):
        x = row0[i]
        if x >= 0:
            gpu_count[i] = u_gpu_count[x]
            model[i] = u_model[x]
            cpu_cap[i] = u_cpu_cap[x]
            mem_cap[i] = u_mem_cap[x]
            pods_cap[i] = u_pods_cap[x]
            live[i] = 1
            cordoned[i] = cord0[i]
        else:
            gpu_count[i] = 0
            model[i] = 0
            cpu_cap[i] = 0
            mem_cap[i] = 0
            pods_cap[i] = 0
            live[i] = 0
            cordoned[i] = 0


def first_names(row0, u_name, row_name):
    """Each local row's node name at the start (``u_name`` [U] a name's
    number, -1 on an empty row)."""
    for i in range(row0.shape[0]):
        x = row0[i]
        row_name[i] = u_name[x] if x >= 0 else -1


def first_static(row0, u_static, static_total):
    """Each local row's static score at the start: its first node's
    (``u_static`` [U]; 0 on an empty row)."""
    for i in range(row0.shape[0]):
        x = row0[i]
        static_total[i] = u_static[x] if x >= 0 else 0


def potential_rows(n, live, cordoned, pot):
    """The rows where preemption might help, in row order, into ``pot``
    [N]; how many: the live, schedulable ones (on a cordoned or tainted
    row NodeUnschedulable / TaintToleration reject the pod as
    UnschedulableAndUnresolvable; NodeResourcesFit and GpuShareFit never
    do)."""
    m = 0
    for i in range(n):
        if live[i] != 0 and cordoned[i] == 0:
            pot[m] = i
            m += 1
    return m


def evict_victims(j, target, now, m, n, live, cls, c_cpu, c_mem, c_num, c_milli, prio, gmask,
                  gpu_count, model, gpu_left, cpu_left, mem_left, pods_left, aff, node_ver,
                  version, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, nfrag, fbuf, s_lo, s_m,
                  s_st, s_v, log_t, log_pod, log_frag, out_why, victim, pst, pw, nw, ps, rs):
    """``post_filter_rows`` chose ``target`` for pod ``j`` (a termination
    grace of 0): nominated there (lower-priority nominations there end),
    the victims evicted in order (``out_why`` ``WHY_PREEMPTED``, ``victim``
    counting it, each logged at ``now`` with the live rows' fragmentation after it,
    from log row ``m``); returns the log rows used so far.  The queue's
    moves are the caller's."""
    nominate_to(j, target, prio, pw, nw, ps)
    frag_before(target, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs)
    for a in range(ps[S_STATS + 5]):
        v = pw[a, W_VOUT]
        evict_victim(v, target, cls, c_cpu, c_mem, c_num, c_milli, gmask, gpu_count, model,
                     gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version, tp_cpu,
                     tp_num, tp_milli, tp_mask, tp_freq, nfrag, pst, ps)
        out_why[v] = WHY_PREEMPTED
        victim[v] += 1
        log_t[m] = now
        log_pod[m] = -1 - v
        frag_log(m, target, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs)
        m += 1
    return m


def waits_on_named(j, n, live, row_name, gone_nom, prio, pst, out_node, victim):
    """``_gpu_preempt.waits_for_victims`` for pod ``j`` whose nomination a
    node's removal ended: its status still names that node
    (``gone_nom[j]``, a name's number, -1 none), and a node added later
    under that name counts (the Simulation looks the name up): True where
    such a node is live and holds a pod of lower priority terminating by
    preemption."""
    x = gone_nom[j]
    if x < 0:
        return False
    pj = prio[j]
    for i in range(n):
        if live[i] != 0 and row_name[i] == x:
            for k in range(pst.shape[0]):
                if victim[k] != 0 and pst[k] == P_BOUND and out_node[k] == i and prio[k] < pj:
                    return True
            return False
    return False


def terminate_where(now, grace, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp,
                    rank, ak, pmask, tqp, tqt, tq):
    """``_gpu_preempt.terminate_pop`` on this engine's pool: the next
    victim whose grace ended by ``now`` and still bound (not gone since
    with its node, by a scenario's delete or its own departure: its
    termination then finds nothing) is now gone, the pods listening to an
    assigned pod's deletion moved (``move_where``); the caller frees its
    node and logs it.  -1 when none is left, the deadlines due then
    passed (each one a time the clock stopped at)."""
    while tq[T_HEAD] < tq[T_TAIL]:
        v = tqp[tq[T_HEAD]]
        if pts[v] + grace > now:
            break
        tq[T_HEAD] += 1
        if pst[v] == P_BOUND:
            pst[v] = P_GONE
            move_where(I_POD_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up,
                       hk, hs, hp, rank, ak, pmask)
            return v
    deadlines_pass(now, tqt, tq)
    return -1


def run_events_cluster(n, gpu_count, model, cpu_cap, mem_cap, pods_cap, live, cordoned,
                       u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap,
                       ev_t, ev_kind, ev_row, ev_x, ev_flag, fit_interest, cordon_interest,
                       c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask,
                       tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                       policy, sel, seed_mix, gpu_weight, u_static, static_total, made,
                       cls, u, arr, dep, dur, rank, backoff0, backoff_max, max_unsched,
                       out_node, out_gmask, out_bind, out_tries, out_why,
                       log_t, log_pod, log_frag, n_log, frag0, end,
                       gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version,
                       cache_score, cache_gpu, cache_ver, work, gidx, nfrag, feas, fbuf,
                       s_lo, s_m, s_st, s_v,
                       qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, ak, pmask,
                       pre, pct, least, prio, krank, pw, nw, ps, pot, pbuf,
                       nhead, pnext, victim, grace, tqp, tqt, tq, u_name, row_name, gone_nom,
                       rs):
    """One cluster (module doc): rows 0..n-1 with their first node's
    columns (``gpu_count`` .. ``pods_cap`` [N], updated as nodes are
    added), ``live`` / ``cordoned`` [N] int8 at the start (updated); the
    universe's nodes ``u_*`` [U]; the node events ``ev_*`` [E];
    ``u_static`` [U] each node's static score, ``static_total`` [N] the
    rows' now (set by ``first_static``, updated); ``made`` [K] the run's
    pod index of each pod a scenario creates.  Pods and
    outputs as ``_cluster.run_cluster`` (``ak`` activeQ's heap keys with
    ``rank``, ``pmask`` [P] each failed pod's interest bits), plus
    ``out_why`` [P]; the change log (``log_*`` [2P + E]) also holds each
    node event, ``log_pod`` = P + e, after the pods it freed.  The rest:
    scratch as ``_cluster`` names it, ``fbuf`` [N], ``s_*`` [64].

    ``pre`` nonzero: DefaultPreemption (``_gpu_preempt``'s rules;
    minCandidateNodesPercentage ``pct``, minCandidateNodesAbsolute
    ``least``, per pod ``prio`` its priority, ``krank`` its key's rank; a
    victim's ``out_why`` ``WHY_PREEMPTED``, its eviction in the log as a
    departure): the candidates are the live, schedulable rows
    (``potential_rows``); a node's deletion ends the nominations to it, a
    cordon keeps them; every pod taken off a node (a departure, a drain, a
    deletion) is the GPU table's last released; the victims' deletion moves
    the pool for Pod/Delete and the preemptor goes back as a pod with a
    move request.  A node's pods leave it (a drain, a deletion) in key order
    where ``krank`` is given (with or without preemption: the order the
    Simulation logs them in), in row order where it is empty.  Scratch
    ``pw`` [P, 7], ``nw`` [N, 3], ``ps`` [16], ``pot`` [N]; 0: none (those
    arrays may be empty).  ``nhead`` [N] / ``pnext`` [P]: each row's pods
    bound there since its last drain or deletion (a list, pushed at the
    binding; the pods gone since are skipped when the row is drained or
    deleted, and the list is empty after: a drain reads its row's pods,
    not every pod), ``pbuf`` [P] scratch (their key order).  Out
    ``victim`` [P] the times a pod was evicted (its why ``WHY_PREEMPTED``
    when it left by preemption).

    ``grace`` (seconds) above 0, with ``pre``: the victims terminate on
    their node until their first eviction + grace (``_gpu_preempt``'s
    ``terminate_later``; ``tqp`` [P], ``tqt`` [2P] float64, ``tq``
    [TQ_N] zeros, ``tq[T_OVER]`` 1 after where ``tqt`` was too small),
    then leave as a departure does (``terminate_where``: not when a drain,
    a removal, a Pod delete or their departure took them first); the
    preemptor waits in the pool as a failed pod, and may not preempt again
    while its nominated node holds a lower-priority pod terminating
    (``waits_for_victims``; where a removal ended its nomination, the node
    its status names: a node added later under that name,
    ``waits_on_named``: ``u_name`` [U] each universe node's name number,
    scratch ``row_name`` [N] set by ``first_names``, ``gone_nom`` [P]).
    ``rs`` [RS_N]: the run's scalars between its loop's steps.

    The loop is its steps (``events_open``, ``decide``, ``preempt_waits``
    and ``post_filter_rows``, ``events_close``), in the order the CUDA
    form (``openb_events_cuda``) runs them: thread 0 the serial ones, the
    block the pick and the victim search."""
    for i in range(n):
        start_row(i, gpu_count, model, cpu_cap, mem_cap, pods_cap, live, cordoned, gpu_left,
                  cpu_left, mem_left, pods_left, aff, node_ver, cache_ver, tp_cpu, tp_num,
                  tp_milli, tp_mask, tp_freq, nfrag, nhead)
    events_start(n, live, cordoned, nfrag, fbuf, s_lo, s_m, s_st, s_v, version, frag0,
                 out_node, out_gmask, out_bind, out_why, pmask, qi, qf, pst, patt, pts,
                 pre, pw, nw, ps, victim, gone_nom, pot, rs)
    while True:
        kind = events_open(n, gpu_count, model, cpu_cap, mem_cap, pods_cap, live, cordoned,
                           u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap, ev_t,
                           ev_kind, ev_row, ev_x, ev_flag, c_cpu, c_mem, c_num, c_milli,
                           tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, u_static, static_total,
                           made, cls, arr, dep, rank, backoff0, backoff_max, max_unsched,
                           out_node, out_gmask, out_why, log_t, log_pod, log_frag, frag0,
                           gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version,
                           gidx, nfrag, fbuf, s_lo, s_m, s_st, s_v, qi, qf, pst, patt, pts, aq,
                           up, hk, hs, hp, dk, ds, dp, ak, pmask, pre, prio, krank, pw, nw, ps,
                           pot, pbuf, nhead, pnext, grace, tqp, tqt, tq, u_name, row_name,
                           gone_nom, rs=rs)
        if kind == Q_DONE:
            break
        if kind != Q_CYCLE:
            continue
        j = qi[Q_POD]
        c = cls[j]
        row = decide(n, gpu_count, model, gpu_left, cpu_left, mem_left, pods_cap, pods_left,
                     aff, node_ver, c_cpu[c], c_mem[c], c_cpu_nz[c], c_num[c], c_milli[c],
                     c_mask[c], tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, policy, seed_mix,
                     qi[Q_ATTEMPT], gpu_weight, static_total, cache_score[c], cache_gpu[c],
                     cache_ver[c], work, feas)
        target = -1
        if pre != 0 and row < 0 and not preempt_waits(j, n, live, row_name, gone_nom, prio,
                                                      pst, out_node, victim, pw, grace):
            target = post_filter_rows(j, n, pot, rs[RS_NPOT], qi[Q_ATTEMPT], seed_mix, pct,
                                      least, c_cpu[c], c_mem[c], c_num[c], c_milli[c],
                                      c_mask[c], prio, krank, pst, out_node, cls, c_cpu, c_mem,
                                      c_num, c_milli, out_gmask, gpu_count, model, gpu_left,
                                      cpu_left, mem_left, pods_left, nhead, pnext, pw, nw, ps)
        events_close(j, row, target, n, gpu_count, model, live, fit_interest, cordon_interest,
                     c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask, tp_cpu, tp_num, tp_milli,
                     tp_mask, tp_freq, policy, sel, cls, u, dur, rank, backoff0, backoff_max,
                     out_node, out_gmask, out_bind, out_why, log_t, log_pod, log_frag, gpu_left,
                     cpu_left, mem_left, pods_left, aff, node_ver, version, cache_score,
                     cache_gpu, cache_ver, work, gidx, nfrag, fbuf, s_lo, s_m, s_st, s_v, qi,
                     qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, ak, pmask, pre, prio,
                     pw, nw, ps, victim, grace, tqp, tqt, tq, gone_nom, nhead, pnext, rs=rs)
    events_end(end, out_tries, qf, patt, rs, n_log)


def start_row(i, gpu_count, model, cpu_cap, mem_cap, pods_cap, live, cordoned, gpu_left,
              cpu_left, mem_left, pods_left, aff, node_ver, cache_ver, tp_cpu, tp_num, tp_milli,
              tp_mask, tp_freq, nfrag, nhead):
    """Row ``i`` at the start (its first node's columns set): empty (no
    pod in its list ``nhead``), its pod slots lowered where it is absent
    or cordoned, no cached answer.
    Reads and writes row ``i`` only (the device's threads run rows at
    once)."""
    init_node(i, gpu_count, cpu_cap, mem_cap, pods_cap, model, gpu_left, cpu_left, mem_left,
              pods_left, aff, node_ver, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, nfrag)
    if live[i] == 0 or cordoned[i] != 0:
        pods_left[i] -= BLOCKED
    for s in range(cache_ver.shape[0]):
        cache_ver[s, i] = -1
    nhead[i] = -1


def events_start(n, live, cordoned, nfrag, fbuf, s_lo, s_m, s_st, s_v, version, frag0,
                 out_node, out_gmask, out_bind, out_why, pmask, qi, qf, pst, patt, pts,
                 pre, pw, nw, ps, victim, gone_nom, pot, rs):
    """The run's state at the start, after every row's ``start_row``: the
    fragmentation ``frag0[0]``, the outputs, the queue, DefaultPreemption's
    state, the live rows' counts (``rs``)."""
    p = out_node.shape[0]
    version[0] = 0
    frag0[0] = live_frag(n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v)
    for j in range(p):
        out_node[j] = -1
        out_gmask[j] = 0
        out_bind[j] = NAN
        out_why[j] = 0
        pmask[j] = 0
    q_init(qi, qf, pst, patt, pts)
    if pre != 0:
        preempt_init(pw, nw, ps, victim)
        for k in range(p):
            gone_nom[k] = -1
    for s in range(RS_N):
        rs[s] = 0
    rows_refresh(n, live, cordoned, pot, rs)


def node_event(e, now, n, gpu_count, model, cpu_cap, mem_cap, pods_cap, live, cordoned,
               u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap, ev_kind, ev_row, ev_x,
               ev_flag, c_cpu, c_mem, c_num, c_milli, tp_cpu, tp_num, tp_milli, tp_mask,
               tp_freq, u_static, static_total, made, cls, backoff0, backoff_max, out_node,
               out_gmask, out_why, log_t, log_pod, log_frag, frag0, gpu_left, cpu_left,
               mem_left, pods_left, aff, node_ver, version, nfrag, fbuf, s_lo, s_m, s_st, s_v,
               qi, pst, patt, pts, aq, up, hk, hs, hp, rank, ak, pmask, pre, pw, nw, ps, pot,
               krank, pbuf, nhead, pnext, u_name, row_name, gone_nom, rs):
    """Node event ``e`` at ``now`` (module doc): the cluster changed, its
    freed pods and then the event logged, the pool moved."""
    p = cls.shape[0]
    # a node event changes the live set or reads the last fragmentation
    frag_before(-1, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs)
    m = rs[RS_M]
    row = ev_row[e]
    what = ev_kind[e]
    if what == EV_POD_DELETE:
        jj = made[ev_x[e]]
        if pst[jj] == P_BOUND:
            row = out_node[jj]
            c = cls[jj]
            release(row, out_gmask[jj], c_cpu[c], c_mem[c], c_num[c], c_milli[c], gpu_left,
                    cpu_left, mem_left, pods_left, aff, node_ver, version)
            pst[jj] = P_GONE
            out_why[jj] = WHY_POD_DELETED
            if pre != 0:
                taken_off(jj, row, out_gmask[jj], ps)
            nfrag[row] = node_frag_of(row, gpu_count, model, gpu_left, cpu_left, tp_cpu,
                                      tp_num, tp_milli, tp_mask, tp_freq)
            log_t[m] = now
            log_pod[m] = -1 - jj
            frag_log(m, row, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs)
            m += 1
            move_where(I_POD_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up,
                       hk, hs, hp, rank, ak, pmask)
        elif pst[jj] != P_GONE and pst[jj] != P_NOT_ARRIVED:
            # pending: it leaves the queue (its entries die where they are);
            # no cluster event
            pst[jj] = P_GONE
            out_why[jj] = WHY_POD_DELETED
    elif what == EV_ADD:
        x = ev_x[e]
        gpu_count[row] = u_gpu_count[x]
        model[row] = u_model[x]
        cpu_cap[row] = u_cpu_cap[x]
        mem_cap[row] = u_mem_cap[x]
        pods_cap[row] = u_pods_cap[x]
        init_node(row, gpu_count, cpu_cap, mem_cap, pods_cap, model, gpu_left, cpu_left,
                  mem_left, pods_left, aff, node_ver, tp_cpu, tp_num, tp_milli, tp_mask,
                  tp_freq, nfrag)
        static_total[row] = u_static[x]
        row_name[row] = u_name[x]
        live[row] = 1
        cordoned[row] = ev_flag[e]
        if cordoned[row] != 0:
            pods_left[row] -= BLOCKED
        bump(row, node_ver, version)
        rows_refresh(n, live, cordoned, pot, rs)
        move_where(I_NODE_ADD, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs,
                   hp, rank, ak, pmask)
    elif what == EV_UPDATE:
        flag = ev_flag[e]
        if flag != cordoned[row]:
            if flag != 0:
                pods_left[row] -= BLOCKED
            else:
                pods_left[row] += BLOCKED
            cordoned[row] = flag
            bump(row, node_ver, version)
            rows_refresh(n, live, cordoned, pot, rs)
        move_where(I_NODE_UPDATE, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk,
                   hs, hp, rank, ak, pmask)
    else:
        frag = last_frag(rs, log_frag, frag0)
        gone = row_pods(row, krank, pst, pbuf, nhead, pnext)
        for t in range(gone):
            j = pbuf[t]
            c = cls[j]
            release(row, out_gmask[j], c_cpu[c], c_mem[c], c_num[c], c_milli[c], gpu_left,
                    cpu_left, mem_left, pods_left, aff, node_ver, version)
            pst[j] = P_GONE
            out_why[j] = WHY_EVICTED if what == EV_EVICT else WHY_DELETED
            if pre != 0:
                taken_off(j, row, out_gmask[j], ps)
            log_t[m] = now
            log_pod[m] = -1 - j
            log_frag[m] = frag          # (the event's entry below follows)
            m += 1
        nfrag[row] = node_frag_of(row, gpu_count, model, gpu_left, cpu_left, tp_cpu, tp_num,
                                  tp_milli, tp_mask, tp_freq)
        if gone > 0:
            move_where(I_POD_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up,
                       hk, hs, hp, rank, ak, pmask)
        if what == EV_DELETE:
            if cordoned[row] == 0:
                pods_left[row] -= BLOCKED
            live[row] = 0
            cordoned[row] = 0
            rows_refresh(n, live, cordoned, pot, rs)
            if pre != 0 and nw[row, N_CNT] > 0:
                # the nominator forgets the nominations to a deleted node
                # (its pods together in the nominated pods' list, from its
                # last back); the pods' status still names it
                k = nw[row, N_TAIL]
                while k >= 0 and pw[k, W_NOM] == row:
                    x = link_prev(k, pw)
                    gone_nom[k] = row_name[row]
                    nom_delete(k, pw, nw, ps)
                    k = x
            bump(row, node_ver, version)
            move_where(I_NODE_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up,
                       hk, hs, hp, rank, ak, pmask)
    log_t[m] = now
    log_pod[m] = p + e
    frag_log(m, row, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs)
    rs[RS_M] = m + 1


def row_pods(row, krank, pst, pbuf, nhead, pnext):
    """The pods bound on ``row`` now into ``pbuf``, in key order (``krank``
    empty: pod order); how many.  Its list (``nhead`` / ``pnext``) is
    emptied: the caller takes them all off."""
    k = 0
    j = nhead[row]
    while j >= 0:
        if pst[j] == P_BOUND:
            # insertion sort (a node holds few pods)
            a = k
            kj = krank[j] if krank.shape[0] > 0 else j
            while a > 0 and (krank[pbuf[a - 1]] if krank.shape[0] > 0 else pbuf[a - 1]) > kj:
                pbuf[a] = pbuf[a - 1]
                a -= 1
            pbuf[a] = j
            k += 1
        j = pnext[j]
    nhead[row] = -1
    return k


def pod_leaves(j, now, n, gpu_count, model, live, cls, c_cpu, c_mem, c_num, c_milli, tp_cpu,
               tp_num, tp_milli, tp_mask, tp_freq, out_node, out_gmask, log_t, log_pod,
               log_frag, gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version, nfrag,
               fbuf, s_lo, s_m, s_st, s_v, pre, ps, rs):
    """Bound pod ``j`` leaves its node at ``now`` (its departure, or its
    termination's end; its status the caller's), logged."""
    m = rs[RS_M]
    c = cls[j]
    row = out_node[j]
    frag_before(row, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs)
    release(row, out_gmask[j], c_cpu[c], c_mem[c], c_num[c], c_milli[c], gpu_left, cpu_left,
            mem_left, pods_left, aff, node_ver, version)
    if pre != 0:
        taken_off(j, row, out_gmask[j], ps)
    nfrag[row] = node_frag_of(row, gpu_count, model, gpu_left, cpu_left, tp_cpu, tp_num,
                              tp_milli, tp_mask, tp_freq)
    log_t[m] = now
    log_pod[m] = -1 - j
    frag_log(m, row, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs)
    rs[RS_M] = m + 1


def events_open(n, gpu_count, model, cpu_cap, mem_cap, pods_cap, live, cordoned,
                u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap, ev_t, ev_kind, ev_row,
                ev_x, ev_flag, c_cpu, c_mem, c_num, c_milli, tp_cpu, tp_num, tp_milli, tp_mask,
                tp_freq, u_static, static_total, made, cls, arr, dep, rank, backoff0,
                backoff_max, max_unsched, out_node, out_gmask, out_why, log_t, log_pod,
                log_frag, frag0, gpu_left, cpu_left, mem_left, pods_left, aff, node_ver,
                version, gidx, nfrag, fbuf, s_lo, s_m, s_st, s_v, qi, qf, pst, patt, pts, aq,
                up, hk, hs, hp, dk, ds, dp, ak, pmask, pre, prio, krank, pw, nw, ps, pot, pbuf,
                nhead, pnext, grace, tqp, tqt, tq, u_name, row_name, gone_nom, rs):
    """The run's next step, up to an attempt's decision: the queue's
    answer (``Q_DONE``: nothing is left), a node event, a departure or a
    termination's end done (``Q_NODE``, ``Q_DEPART``, ``Q_TERMINATE``), or
    ``Q_CYCLE``: pod ``qi[Q_POD]``'s cycle begins (the nominated pods it
    counts added: ``nominees_on``); the node's pick (``decide``), the
    victim search and ``events_close`` follow."""
    # pod deletes lead their time's departures; while no node is live an
    # arrival moves the pods that failed there (pmask 0: ``failure_bits``;
    # the next node event moves them all otherwise)
    kind = q_next_steps_due(arr, dep, ev_t, ev_kind, EV_POD_DELETE,
                            1 if rs[RS_LIVE] == 0 else 0, backoff0, backoff_max, max_unsched,
                            qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak,
                            pmask, deadline_next(tqt, tq))
    if kind == Q_DONE:
        return kind
    now = qf[Q_NOW]
    if kind == Q_NODE:
        node_event(qi[Q_POD], now, n, gpu_count, model, cpu_cap, mem_cap, pods_cap, live,
                   cordoned, u_gpu_count, u_model, u_cpu_cap, u_mem_cap, u_pods_cap, ev_kind,
                   ev_row, ev_x, ev_flag, c_cpu, c_mem, c_num, c_milli, tp_cpu, tp_num,
                   tp_milli, tp_mask, tp_freq, u_static, static_total, made, cls, backoff0,
                   backoff_max, out_node, out_gmask, out_why, log_t, log_pod, log_frag, frag0,
                   gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version, nfrag, fbuf,
                   s_lo, s_m, s_st, s_v, qi, pst, patt, pts, aq, up, hk, hs, hp, rank, ak,
                   pmask, pre, pw, nw, ps, pot, krank, pbuf, nhead, pnext, u_name, row_name,
                   gone_nom, rs)
        return kind
    if kind == Q_TERMINATE:
        # a victim whose grace ended leaves its node (an assigned pod's
        # deletion: the pool moved inside) as a departure is logged
        j = terminate_where(now, grace, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk,
                            hs, hp, rank, ak, pmask, tqp, tqt, tq)
        if j < 0:
            return kind
        out_why[j] = WHY_PREEMPTED
        kind = Q_DEPART
    else:
        j = qi[Q_POD]
    if kind == Q_DEPART:
        pod_leaves(j, now, n, gpu_count, model, live, cls, c_cpu, c_mem, c_num, c_milli,
                   tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, out_node, out_gmask, log_t,
                   log_pod, log_frag, gpu_left, cpu_left, mem_left, pods_left, aff, node_ver,
                   version, nfrag, fbuf, s_lo, s_m, s_st, s_v, pre, ps, rs)
        return kind
    if pre != 0:
        nominees_on(j, prio, pst, cls, c_cpu, c_mem, c_num, c_milli, gpu_count, gpu_left,
                    cpu_left, mem_left, pods_left, aff, node_ver, version, gidx, pw, nw, ps)
    return Q_CYCLE


def preempt_waits(j, n, live, row_name, gone_nom, prio, pst, out_node, victim, pw, grace):
    """Whether pod ``j``, its cycle failed, may not preempt now: with a
    termination grace, its nominated node (or the node its status still
    names) holds a lower-priority pod terminating by preemption."""
    return grace > 0.0 and (waits_for_victims(j, prio, pst, out_node, victim, pw)
                            or waits_on_named(j, n, live, row_name, gone_nom, prio, pst,
                                              out_node, victim))


def events_close(j, row, target, n, gpu_count, model, live, fit_interest, cordon_interest,
                 c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask, tp_cpu, tp_num, tp_milli,
                 tp_mask, tp_freq, policy, sel, cls, u, dur, rank, backoff0, backoff_max,
                 out_node, out_gmask, out_bind, out_why, log_t, log_pod, log_frag, gpu_left,
                 cpu_left, mem_left, pods_left, aff, node_ver, version, cache_score, cache_gpu,
                 cache_ver, work, gidx, nfrag, fbuf, s_lo, s_m, s_st, s_v, qi, qf, pst, patt,
                 pts, aq, up, hk, hs, hp, dk, ds, dp, ak, pmask, pre, prio, pw, nw, ps, victim,
                 grace, tqp, tqt, tq, gone_nom, nhead, pnext, rs):
    """Pod ``j``'s cycle ends: ``row`` the pick (-1 none fits), ``target``
    the node DefaultPreemption chose (-1 none): the nominated pods taken
    off, then the victims evicted (or terminating, a grace above 0) and
    the pod back in the queue, or the pod bound on ``row`` and logged, or
    failed (its rejectors' interest: ``failure_bits``)."""
    now = qf[Q_NOW]
    c = cls[j]
    if pre != 0:
        nominees_off(cls, c_cpu, c_mem, c_num, c_milli, gpu_left, cpu_left, mem_left,
                     pods_left, aff, node_ver, version, pw, ps)
        if target >= 0 and grace > 0.0:
            # the victims terminate on their node; no pod left, so the
            # preemptor waits in the pool as a failed pod
            nominate_to(j, target, prio, pw, nw, ps)
            gone_nom[j] = -1
            terminate_later(now, grace, victim, pts, tqp, tqt, tq, pw, ps)
            q_failed_mask(j, failure_bits(rs, fit_interest, cordon_interest), qi, qf, pst,
                          pts, up, pmask)
            return
        if target >= 0:
            rs[RS_M] = evict_victims(j, target, now, rs[RS_M], n, live, cls, c_cpu, c_mem,
                                     c_num, c_milli, prio, out_gmask, gpu_count, model,
                                     gpu_left, cpu_left, mem_left, pods_left, aff, node_ver,
                                     version, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, nfrag,
                                     fbuf, s_lo, s_m, s_st, s_v, log_t, log_pod, log_frag,
                                     out_why, victim, pst, pw, nw, ps, rs)
            # the victims' deletion (Pod/Delete) moved the pool during the
            # cycle: the preemptor goes back with a move request
            move_where(I_POD_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up,
                       hk, hs, hp, rank, ak, pmask)
            pts[j] = now
            move(j, now, backoff0, backoff_max, qi, pst, patt, pts, aq, hk, hs, hp, rank, ak)
            return
        if row >= 0:
            bound_here(j, row, policy, c, gpu_count, model, gpu_left, cpu_left, mem_left,
                       pods_left, aff, c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask, tp_cpu,
                       tp_num, tp_milli, tp_mask, tp_freq, cache_score[c], cache_gpu[c],
                       cache_ver[c], node_ver, work, pw, nw, ps)
    if row < 0:
        q_failed_mask(j, failure_bits(rs, fit_interest, cordon_interest), qi, qf, pst, pts,
                      up, pmask)
        return
    m = rs[RS_M]
    frag_before(row, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs)
    out_gmask[j] = account(row, sel, gpu_count, c_cpu[c], c_mem[c], c_num[c], c_milli[c], u[j],
                           cache_gpu[c, row], gpu_left, cpu_left, mem_left, pods_left, aff,
                           node_ver, version, gidx)
    q_bound(j, dur, qi, qf, pst, dk, ds, dp)
    out_node[j] = row
    out_bind[j] = now
    row_push(row, j, nhead, pnext)
    nfrag[row] = node_frag_of(row, gpu_count, model, gpu_left, cpu_left, tp_cpu, tp_num,
                              tp_milli, tp_mask, tp_freq)
    log_t[m] = now
    log_pod[m] = j
    frag_log(m, row, n, live, nfrag, fbuf, s_lo, s_m, s_st, s_v, log_frag, rs)
    rs[RS_M] = m + 1


def events_end(end, out_tries, qf, patt, rs, n_log):
    """The run's last outputs: its log's length, its clock, the attempts."""
    n_log[0] = rs[RS_M]
    end[0] = qf[Q_NOW]
    for j in range(out_tries.shape[0]):
        out_tries[j] = patt[j]
