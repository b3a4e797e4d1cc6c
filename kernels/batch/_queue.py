"""One cluster's simulated clock and scheduling queue in the batched engine:
the order in which the ``Simulation`` (its agenda, its Scheduler's
run-until-idle and the scheduling queue) attempts pods and lets bound pods
leave, activeQ in PrioritySort's order (higher priority first, then the
earlier creation time, then first-in first-out), with departures at
absolute times or a duration after the binding, and no preemption.  Plain
Python on scalars and array rows, compiled with ``njit`` (``cpu``) and
``cuda.jit(device=True)`` (``cuda``, run by one thread of the cluster's
block).

What it reproduces (``framework/simulation`` and ``framework/scheduler``):

- the agenda: at one time, departures first (in the order they were
  pushed: an absolute departure when its pod arrives, a duration's when
  its pod binds), then the pods arriving then (in trace order), then the
  departures of those pods due at their arrival (they never bind); a pod
  bound at t with duration d leaves at t + d (before later events: the
  Simulation lowers its horizon);
- between event times the scheduler runs until idle, its clock at most the
  next event time: it pops activeQ's head (each pop a scheduling attempt,
  counted: the Scheduler's attempt number); when activeQ is empty it jumps
  to the next backoff expiry (one at the next event time still comes
  first); every pop first flushes backoffQ (expired, in (expiry, push)
  order) and then the unschedulable pods waiting ``max_unsched`` seconds or
  more (in the order they entered);
- a pod that fits nowhere goes to the unschedulable pool (its rejecting
  plugins, NodeResourcesFit and GpuShareFit, wait for an assigned pod's
  deletion); a bound pod's departure moves every unschedulable pod, to
  backoffQ while it backs off (``backoff0 * 2^(attempts-1)`` capped at
  ``backoff_max`` seconds from its last failure), else to activeQ; a
  pending pod's departure deletes it from the queue.
- the stall stop (``stalled``): a run that bound no pod for more than
  2 x (``max_unsched`` + ``backoff_max``) seconds of clock, no victim
  terminating, stops jumping to its backoff expiries and waits for the
  next event time, where a fresh run starts (``run_fresh``).

State, per cluster: ``qi`` [QI_N] int64 and ``qf`` [QF_N] float64
scalars (the slots below); per pod [P]: ``pst`` (status), ``patt``
(attempts), ``pts`` (timestamp, seconds); rings and heap [2P]: ``aq``
(activeQ: a ring, or with ``rank`` a heap of its pods keyed ``ak`` =
``rank << 32 | push number``), ``up`` (unschedulable pool), ``hk`` / ``hs`` / ``hp``
(backoffQ's expiry, push number and pod); heap [P]: ``dk`` / ``ds`` /
``dp`` (the departures due: time, push number and pod; each pod pushes
at most one).  Entries of a deleted pod die
where they are and are skipped when reached.

Inputs per pod (trace order): ``arr`` and ``dep`` seconds (``dep`` inf:
no absolute departure; ``dep >= arr``), ``dur`` seconds bound before it
leaves (inf: stays; never with a finite ``dep``), or ``dur`` empty: no
pod has one; ``rank`` [P] int64 each pod's place in activeQ's order
before the push order (the dense rank of (-priority, creation time)), or
empty: all equal, activeQ first-in first-out.
"""

# ruff: noqa: F821

INF = float("inf")

# pod status
NOT_ARRIVED = 0
ACTIVE = 1
BACKOFF = 2
UNSCHED = 3
BOUND = 4
GONE = 5
IN_FLIGHT = 6

# what q_next asks of the caller
DONE = 0
ATTEMPT = 1
DEPART = 2
TERMINATE = 4          # q_next_due: victims' termination deadline reached (NODE is 3)

# qi slots
QI_AQ_HEAD = 0
QI_AQ_LEN = 1
QI_UP_HEAD = 2
QI_UP_LEN = 3
QI_H_LEN = 4
QI_SEQ = 5
QI_ATTEMPTS = 6
QI_NEXT_ARR = 7
QI_BOUND_NEW = 8       # 1: a pod bound since the stall clock last looked (``stalled``)
QI_EVENTS = 9          # 1: applying the events due now; 0: the scheduler runs
QI_POD = 10            # q_next's answer: the pod
QI_ATTEMPT = 11        # ... and the attempt number of an ATTEMPT
QI_D_LEN = 12          # departures due (heap ``dk`` / ``ds`` / ``dp``)
QI_D_SEQ = 13          # departures pushed
QI_N = 14
# qf slots
QF_NOW = 0
QF_PROGRESS = 1        # the stall clock: when the scheduler's run started or last bound a pod
QF_N = 2


def q_init(qi, qf, pst, patt, pts):
    for k in range(qi.shape[0]):
        qi[k] = 0
    for k in range(qf.shape[0]):
        qf[k] = 0.0
    for j in range(pst.shape[0]):
        pst[j] = NOT_ARRIVED
        patt[j] = 0
        pts[j] = 0.0


def backoff_seconds(attempts, backoff0, backoff_max):
    """The backoff after ``attempts`` attempts (backoffQ's ``duration``)."""
    d = backoff0
    for _ in range(1, attempts):
        d *= 2.0
        if d >= backoff_max:
            return backoff_max
    return min(d, backoff_max)


def ring_push(ring, qi, head_slot, len_slot, j):
    # wrap by a compare, not a modulo (an integer division per pod)
    k = qi[head_slot] + qi[len_slot]
    if k >= ring.shape[0]:
        k -= ring.shape[0]
    ring[k] = j
    qi[len_slot] += 1


def ring_pop(ring, qi, head_slot, len_slot):
    j = ring[qi[head_slot]]
    k = qi[head_slot] + 1
    qi[head_slot] = 0 if k == ring.shape[0] else k
    qi[len_slot] -= 1
    return j


def heap_less(hk, hs, a, b):
    return hk[a] < hk[b] or (hk[a] == hk[b] and hs[a] < hs[b])


def heap_swap(hk, hs, hp, a, b):
    k = hk[a]
    hk[a] = hk[b]
    hk[b] = k
    s = hs[a]
    hs[a] = hs[b]
    hs[b] = s
    p = hp[a]
    hp[a] = hp[b]
    hp[b] = p


def heap_push(hk, hs, hp, qi, key, j):
    heap_push_at(hk, hs, hp, qi, QI_H_LEN, key, qi[QI_SEQ], j)


def heap_push_at(hk, hs, hp, qi, len_slot, key, seq, j):
    """Entry (``key``, ``seq``, pod ``j``) into the heap whose length is ``qi[len_slot]``."""
    m = qi[len_slot]
    hk[m] = key
    hs[m] = seq
    hp[m] = j
    qi[len_slot] = m + 1
    while m > 0:
        parent = (m - 1) // 2
        if not heap_less(hk, hs, m, parent):
            break
        heap_swap(hk, hs, hp, m, parent)
        m = parent


def heap_pop(hk, hs, hp, qi):
    """Remove backoffQ's smallest entry; returns its pod."""
    return heap_pop_at(hk, hs, hp, qi, QI_H_LEN)


def heap_pop_at(hk, hs, hp, qi, len_slot):
    """Remove the smallest entry of the heap of length ``qi[len_slot]``; returns its pod."""
    j = hp[0]
    m = qi[len_slot] - 1
    qi[len_slot] = m
    if m > 0:
        hk[0] = hk[m]
        hs[0] = hs[m]
        hp[0] = hp[m]
        k = 0
        while True:
            a = 2 * k + 1
            if a >= m:
                break
            if a + 1 < m and heap_less(hk, hs, a + 1, a):
                a += 1
            if not heap_less(hk, hs, a, k):
                break
            heap_swap(hk, hs, hp, a, k)
            k = a
    return j


def key_push(ak, aq, qi, key, j):
    """Pod ``j`` into activeQ's heap under ``key`` (smallest first)."""
    m = qi[QI_AQ_LEN]
    ak[m] = key
    aq[m] = j
    qi[QI_AQ_LEN] = m + 1
    while m > 0:
        parent = (m - 1) // 2
        if ak[parent] <= ak[m]:
            break
        k = ak[m]
        ak[m] = ak[parent]
        ak[parent] = k
        k = aq[m]
        aq[m] = aq[parent]
        aq[parent] = k
        m = parent


def key_pop(ak, aq, qi):
    """activeQ's heap head out; returns its pod."""
    j = aq[0]
    m = qi[QI_AQ_LEN] - 1
    qi[QI_AQ_LEN] = m
    if m > 0:
        ak[0] = ak[m]
        aq[0] = aq[m]
        k = 0
        while True:
            a = 2 * k + 1
            if a >= m:
                break
            if a + 1 < m and ak[a + 1] < ak[a]:
                a += 1
            if ak[k] <= ak[a]:
                break
            t = ak[a]
            ak[a] = ak[k]
            ak[k] = t
            t = aq[a]
            aq[a] = aq[k]
            aq[k] = t
            k = a
    return j


def push_active(j, qi, pst, aq, rank, ak):
    pst[j] = ACTIVE
    qi[QI_SEQ] += 1
    if rank.shape[0] == 0:
        ring_push(aq, qi, QI_AQ_HEAD, QI_AQ_LEN, j)
    else:
        # the push number below 2^32: ties of rank go first-in first-out
        key_push(ak, aq, qi, (rank[j] << 32) | qi[QI_SEQ], j)


def pop_active(qi, aq, rank, ak):
    if rank.shape[0] == 0:
        return ring_pop(aq, qi, QI_AQ_HEAD, QI_AQ_LEN)
    return key_pop(ak, aq, qi)


def move(j, now, backoff0, backoff_max, qi, pst, patt, pts, aq, hk, hs, hp, rank, ak):
    """An unschedulable pod back: to backoffQ while it backs off, else activeQ."""
    if patt[j] > 0:
        expiry = pts[j] + backoff_seconds(patt[j], backoff0, backoff_max)
        if expiry > now:
            pst[j] = BACKOFF
            qi[QI_SEQ] += 1
            heap_push(hk, hs, hp, qi, expiry, j)
            return
    push_active(j, qi, pst, aq, rank, ak)


def move_all(now, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp, rank, ak):
    """An assigned pod deleted: every unschedulable pod moves, in the order they entered."""
    while qi[QI_UP_LEN] > 0:
        j = ring_pop(up, qi, QI_UP_HEAD, QI_UP_LEN)
        if pst[j] == UNSCHED:
            move(j, now, backoff0, backoff_max, qi, pst, patt, pts, aq, hk, hs, hp, rank, ak)


def flush(now, backoff0, backoff_max, max_unsched, qi, pst, patt, pts, aq, up, hk, hs, hp,
          rank, ak):
    """Before a pop: backoffQ's expired pods to activeQ, then the pods
    unschedulable for ``max_unsched`` seconds or more moved."""
    while qi[QI_H_LEN] > 0 and hk[0] <= now:
        j = heap_pop(hk, hs, hp, qi)
        if pst[j] == BACKOFF:
            push_active(j, qi, pst, aq, rank, ak)
    if max_unsched == INF:
        return
    while qi[QI_UP_LEN] > 0:
        j = up[qi[QI_UP_HEAD]]
        if pst[j] != UNSCHED:
            ring_pop(up, qi, QI_UP_HEAD, QI_UP_LEN)
            continue
        if now - pts[j] < max_unsched:
            break
        ring_pop(up, qi, QI_UP_HEAD, QI_UP_LEN)
        move(j, now, backoff0, backoff_max, qi, pst, patt, pts, aq, hk, hs, hp, rank, ak)


def next_backoff(hk, hp, hs, qi, pst):
    """The first live backoff expiry (inf: none); dead entries dropped."""
    while qi[QI_H_LEN] > 0:
        if pst[hp[0]] == BACKOFF:
            return hk[0]
        heap_pop(hk, hs, hp, qi)
    return INF


def push_departure(t, j, qi, dk, ds, dp):
    """Pod ``j`` leaves at ``t`` (after the departures pushed before it at ``t``)."""
    heap_push_at(dk, ds, dp, qi, QI_D_LEN, t, qi[QI_D_SEQ], j)
    qi[QI_D_SEQ] += 1


def horizon(arr, qi, dk):
    """The next event time (inf: none left)."""
    h = INF
    if qi[QI_NEXT_ARR] < arr.shape[0]:
        h = arr[qi[QI_NEXT_ARR]]
    if qi[QI_D_LEN] > 0:
        h = min(h, dk[0])
    return h


def admit_arrivals(now, arr, dep, qi, pst, pts, aq, rank, ak, dk, ds, dp):
    """The pods arriving at ``now`` (the next ones of ``arr``) into activeQ,
    their departures (``dep``, absolute) into the heap; False when none
    arrives then."""
    p = arr.shape[0]
    a = qi[QI_NEXT_ARR]
    if a >= p or arr[a] != now:
        return False
    while a < p and arr[a] == now:
        pts[a] = now
        push_active(a, qi, pst, aq, rank, ak)
        if dep[a] < INF:
            push_departure(dep[a], a, qi, dk, ds, dp)
        a += 1
    qi[QI_NEXT_ARR] = a
    return True


def start_attempt(qi, pst, patt, aq, rank, ak):
    """activeQ's head in flight (``qi[QI_POD]``, attempt number
    ``qi[QI_ATTEMPT]``), entries of pods no longer active dropped on the
    way; False when activeQ holds none."""
    while qi[QI_AQ_LEN] > 0:
        j = pop_active(qi, aq, rank, ak)
        if pst[j] != ACTIVE:
            continue
        pst[j] = IN_FLIGHT
        patt[j] += 1
        qi[QI_POD] = j
        qi[QI_ATTEMPT] = qi[QI_ATTEMPTS]
        qi[QI_ATTEMPTS] += 1
        return True
    return False


def depart_due(now, qi, pst, dk, ds, dp):
    """The next bound pod due to leave at ``now``, now GONE (the caller
    moves the pool); the due entries of pods no longer bound dropped on the
    way (their pods GONE); -1 when none is due."""
    while qi[QI_D_LEN] > 0 and dk[0] == now:
        k = heap_pop_at(dk, ds, dp, qi, QI_D_LEN)
        was = pst[k]
        pst[k] = GONE
        if was == BOUND:
            return k
    return -1


def take_event(now, ev_t, qi):
    """The next node event when it is due at ``now``: it is taken
    (``qi[QI_POD]``) and True; False otherwise."""
    e = qi[QI_NEXT_EV]
    if e < ev_t.shape[0] and ev_t[e] == now:
        qi[QI_NEXT_EV] = e + 1
        qi[QI_POD] = e
        return True
    return False


def stalled(t, due, now, max_unsched, backoff_max, qi, qf):
    """The Scheduler's stall stop (``Scheduler.run_until_idle``): about to
    jump to its wakeup ``t`` (seconds), a simulated run ends when no pod
    was bound for more than ``stall_horizon()`` = 2 * (``max_unsched`` +
    ``backoff_max``) seconds of clock (no Permit wait in these engines)
    since the run started or last bound one, and no victim is still
    terminating (``due`` inf); the run then waits for the next event time
    (``run_fresh``).  A pod bound since the last look moves the stall
    clock to ``now`` instead."""
    if qi[QI_BOUND_NEW] != 0:
        qi[QI_BOUND_NEW] = 0
        qf[QF_PROGRESS] = now
        return False
    return due == INF and t - qf[QF_PROGRESS] > 2.0 * (max_unsched + backoff_max)


def run_fresh(h, qi, qf):
    """The clock to event time ``h``: the events due then are applied and
    the scheduler's run starts afresh there (its stall clock at ``h``)."""
    qf[QF_NOW] = h
    qf[QF_PROGRESS] = h
    qi[QI_BOUND_NEW] = 0
    qi[QI_EVENTS] = 1


def q_next(arr, dep, backoff0, backoff_max, max_unsched,
           qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak):
    """Advance to what the caller must do next: ATTEMPT (pod ``qi[QI_POD]``,
    attempt number ``qi[QI_ATTEMPT]``; answer with ``q_failed`` or
    ``q_bound``), DEPART (bound pod ``qi[QI_POD]`` leaves: free its node)
    or DONE.  ``qf[QF_NOW]``: the clock."""
    return q_next_due(arr, dep, backoff0, backoff_max, max_unsched, qi, qf, pst, patt, pts,
                      aq, up, hk, hs, hp, dk, ds, dp, rank, ak, INF)


def q_next_due(arr, dep, backoff0, backoff_max, max_unsched,
               qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak, due):
    """``q_next`` with the scheduler's own timer ``due`` (seconds, inf:
    none): the next deadline of the victims still terminating
    (``deadline_next``).  Like a backoff expiry it is a time
    the scheduler's clock jumps to (before the events of that time); once
    the clock has reached it, the scheduler's next step answers TERMINATE
    (before backoffQ's flush and the pop: the Scheduler's ``_tick``), and
    the caller lets the victims due leave, each an assigned pod's deletion
    (``move_all``), before it asks again."""
    while True:
        now = qf[QF_NOW]
        if qi[QI_EVENTS] == 1:
            k = depart_due(now, qi, pst, dk, ds, dp)
            if k >= 0:
                move_all(now, backoff0, backoff_max, qi, pst, patt, pts, aq, up,
                         hk, hs, hp, rank, ak)
                qi[QI_POD] = k
                return DEPART
            if admit_arrivals(now, arr, dep, qi, pst, pts, aq, rank, ak, dk, ds, dp):
                continue
            qi[QI_EVENTS] = 0
            continue
        if due <= now:
            return TERMINATE
        flush(now, backoff0, backoff_max, max_unsched, qi, pst, patt, pts, aq, up, hk, hs, hp,
              rank, ak)
        if start_attempt(qi, pst, patt, aq, rank, ak):
            return ATTEMPT
        t = min(next_backoff(hk, hp, hs, qi, pst), due)
        h = horizon(arr, qi, dk)
        if t < INF and stalled(t, due, now, max_unsched, backoff_max, qi, qf):
            t = INF
        if t == INF and h == INF:
            return DONE
        if t > h:
            run_fresh(h, qi, qf)
            continue
        qf[QF_NOW] = max(t, now)


def q_failed(j, qi, qf, pst, pts, up):
    """The attempted pod fits nowhere: into the unschedulable pool."""
    pst[j] = UNSCHED
    pts[j] = qf[QF_NOW]
    ring_push(up, qi, QI_UP_HEAD, QI_UP_LEN, j)


def q_bound(j, dur, qi, qf, pst, dk, ds, dp):
    """The attempted pod bound now; with a duration it leaves that long after."""
    pst[j] = BOUND
    qi[QI_BOUND_NEW] = 1
    if dur.shape[0] > 0 and dur[j] < INF:
        push_departure(qf[QF_NOW] + dur[j], j, qi, dk, ds, dp)


# ---------------------------------------------------------------------------
# The scheduler's own timer under a termination grace: the deadlines of the
# victims still terminating (DefaultPreemption's engines keep them: the
# openb ones in ``_gpu_preempt``, the node-local ones in ``_local_preempt``,
# each with its queue of victims ``tqp``).  ``tqt`` [R] float64: the
# pending deadlines in seconds, a ring in time order, equal ones once;
# ``tq`` [5] int64, slots below (those engines' ``T_*`` slots, same values).
T_WHEAD = 2         # the first pending deadline of ``tqt``
T_WLEN = 3          # pending deadlines
T_OVER = 4          # 1: more pending deadlines than ``tqt`` holds (the run is wrong)


def deadline_push(d, tqt, tq):
    """Deadline ``d`` (seconds, not before the last one pushed) pending,
    unless it equals the last; ``tq[T_OVER]`` set instead when the ring is
    full."""
    r = tqt.shape[0]
    n = tq[T_WLEN]
    if n > 0:
        last = tq[T_WHEAD] + n - 1
        if last >= r:
            last -= r
        if tqt[last] == d:
            return
    if n == r:
        tq[T_OVER] = 1
        return
    k = tq[T_WHEAD] + n
    if k >= r:
        k -= r
    tqt[k] = d
    tq[T_WLEN] = n + 1


def deadlines_pass(now, tqt, tq):
    """The pending deadlines at or before ``now`` (seconds) dropped."""
    r = tqt.shape[0]
    while tq[T_WLEN] > 0 and tqt[tq[T_WHEAD]] <= now:
        k = tq[T_WHEAD] + 1
        tq[T_WHEAD] = 0 if k == r else k
        tq[T_WLEN] -= 1


def deadline_next(tqt, tq):
    """The next pending deadline (seconds; inf: none), the ``due`` that
    ``q_next_due`` and ``q_next_steps_due`` take."""
    if tq[T_WLEN] == 0:
        return INF
    return tqt[tq[T_WHEAD]]


# ---------------------------------------------------------------------------
# node events (``_local_preempt_events.run_local_preempt_events_cluster``):
# timed node changes between the departures and the arrivals of their time,
# and the unschedulable pool moved per cluster event by what its pods'
# rejecting plugins listen to (``pmask`` [P]: a pod's interest bits, set at
# its failure; 0: rejected by no plugin, moved by every event)

NODE = 3               # q_next_steps: node event ``qi[QI_POD]`` is due now
QI_NEXT_EV = 14        # the next node event
QI_EV_N = 15           # qi's length in the node-event form

# a failed pod's interest bits: the cluster events its rejecting plugins
# listen to (``framework/runtime/cluster_events``)
EV_POD_DELETE = 1
EV_NODE_ADD = 2
EV_NODE_UPDATE = 4
EV_NODE_DELETE = 8


def move_where(bit, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp, rank,
               ak, pmask):
    """A cluster event of interest ``bit``: the unschedulable pods whose
    rejecting plugins listen to it move (``move``), in the order they
    entered; the others keep their places."""
    for _ in range(qi[QI_UP_LEN]):
        j = ring_pop(up, qi, QI_UP_HEAD, QI_UP_LEN)
        if pst[j] != UNSCHED:
            continue
        if pmask[j] == 0 or (pmask[j] & bit) != 0:
            move(j, now, backoff0, backoff_max, qi, pst, patt, pts, aq, hk, hs, hp, rank, ak)
        else:
            ring_push(up, qi, QI_UP_HEAD, QI_UP_LEN, j)


def q_failed_mask(j, mask, qi, qf, pst, pts, up, pmask):
    """``q_failed`` of a pod whose rejecting plugins listen to ``mask``."""
    pmask[j] = mask
    q_failed(j, qi, qf, pst, pts, up)


def admit_moving(now, arr, dep, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp,
                 rank, ak, dk, ds, dp, pmask):
    """``admit_arrivals`` where each pod's arrival (an unscheduled pod's
    add) moves the unschedulable pods rejected by no plugin (``pmask`` 0:
    they failed where no node was), after its push, as the queue's
    ``add`` then ``move_all`` does."""
    p = arr.shape[0]
    a = qi[QI_NEXT_ARR]
    if a >= p or arr[a] != now:
        return False
    while a < p and arr[a] == now:
        pts[a] = now
        push_active(a, qi, pst, aq, rank, ak)
        if dep[a] < INF:
            push_departure(dep[a], a, qi, dk, ds, dp)
        qi[QI_NEXT_ARR] = a + 1
        move_where(0, now, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp, rank,
                   ak, pmask)
        a += 1
    return True


def q_next_steps(arr, dep, ev_t, ev_kind, lead_kind, add_moves, backoff0, backoff_max,
                 max_unsched, qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak,
                 pmask):
    """``q_next`` with node events at times ``ev_t`` [E] (NODE: event
    ``qi[QI_POD]``; the caller applies it and moves the pool; a departure
    moves the pods listening to an assigned pod's deletion only,
    ``move_where``), those of kind ``lead_kind`` (``ev_kind`` [E]) before
    the departures of their time: a scenario's pod
    deletes, which the Simulation's agenda holds among the departures
    (pushed before any of them).  At a time: those events (NODE), the
    departures due, the other events (NODE), the arrivals; the stream
    (``ev_t`` nondecreasing) lists a time's lead events first.
    ``add_moves`` nonzero: an arrival moves the pods rejected by no plugin
    (``admit_moving``).  No victim terminates (``q_next_steps_due``)."""
    return q_next_steps_due(arr, dep, ev_t, ev_kind, lead_kind, add_moves, backoff0,
                            backoff_max, max_unsched, qi, qf, pst, patt, pts, aq, up, hk, hs,
                            hp, dk, ds, dp, rank, ak, pmask, INF)


def q_next_steps_due(arr, dep, ev_t, ev_kind, lead_kind, add_moves, backoff0, backoff_max,
                     max_unsched, qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank,
                     ak, pmask, due):
    """``q_next_steps`` with the scheduler's own timer ``due`` (seconds,
    inf: none) as ``q_next_due`` takes it: the next deadline of the victims
    still terminating (``deadline_next``), a time the clock
    jumps to like a backoff expiry (before the events of that time, and no
    stall stop while one is pending); once reached, the scheduler's next
    step answers TERMINATE (after the events due then were applied,
    before backoffQ's flush and the pop), and the caller lets the victims
    due leave before it asks again."""
    while True:
        now = qf[QF_NOW]
        if qi[QI_EVENTS] == 1:
            e = qi[QI_NEXT_EV]
            if e < ev_t.shape[0] and ev_kind[e] == lead_kind and take_event(now, ev_t, qi):
                return NODE
            k = depart_due(now, qi, pst, dk, ds, dp)
            if k >= 0:
                move_where(EV_POD_DELETE, now, backoff0, backoff_max, qi, pst, patt, pts,
                           aq, up, hk, hs, hp, rank, ak, pmask)
                qi[QI_POD] = k
                return DEPART
            if take_event(now, ev_t, qi):
                return NODE
            if add_moves != 0:
                if admit_moving(now, arr, dep, backoff0, backoff_max, qi, pst, patt, pts, aq,
                                up, hk, hs, hp, rank, ak, dk, ds, dp, pmask):
                    continue
            elif admit_arrivals(now, arr, dep, qi, pst, pts, aq, rank, ak, dk, ds, dp):
                continue
            qi[QI_EVENTS] = 0
            continue
        if due <= now:
            return TERMINATE
        flush(now, backoff0, backoff_max, max_unsched, qi, pst, patt, pts, aq, up, hk, hs, hp,
              rank, ak)
        if start_attempt(qi, pst, patt, aq, rank, ak):
            return ATTEMPT
        t = min(next_backoff(hk, hp, hs, qi, pst), due)
        h = horizon(arr, qi, dk)
        if qi[QI_NEXT_EV] < ev_t.shape[0]:
            h = min(h, ev_t[qi[QI_NEXT_EV]])
        if t < INF and stalled(t, due, now, max_unsched, backoff_max, qi, qf):
            t = INF
        if t == INF and h == INF:
            return DONE
        if t > h:
            run_fresh(h, qi, qf)
            continue
        qf[QF_NOW] = max(t, now)
