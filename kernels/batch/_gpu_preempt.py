"""DefaultPreemption in the batched openb engine's queue (``_cluster``,
``cuda``): what the ``Simulation`` does for a pod whose cycle fails on the
openb profile (NodeResourcesFit + GpuShareFit) with DefaultPreemption at
postFilter and a termination grace (0: the victims leave at once; above
0: they terminate on their node first, ``terminate_later``),
``framework/preemption`` (``evaluator``, ``host_search``) and
``framework/scheduler/schedule_one``.  The node-local trace form's
(``_local_preempt``) rules, where a victim also frees its GPU share.

- The nominated pods: while nominations are outstanding, a cycle of pod
  j adds the pods nominated to a node with priority >= j's (not j, not
  bound or deleted) to the state on their nodes, in the nominator's order
  (nodes in the order they got their first current nomination, a node's
  pods in nomination order), each with GPUs picked as the GPU table
  places an added pod (``select_gpus`` best fit / first free; the GPUs it
  held when it was the last pod taken off that node, when they are still
  free: the table's ``prefer``), filters, scores and PostFilter run with
  them, and they are taken off again before the bind or the evictions.
  The nominated pods are a doubly linked list in that order (``pw[:,
  W_LINK]``, its ends ``ps[S_NHEAD]`` / ``ps[S_NTAIL]``, a node's last pod
  there ``nw[:, N_TAIL]``): a nomination goes after its node's last one
  (a node without nominations: at the end) and leaves the list when it
  ends, so a cycle walks the nominations only (dropping the pods bound or
  deleted since), a nomination ends the lower ones on its node from that
  node's last pod back, and the terminating rule reads the victims whose
  grace has not ended (``waits_for_terminating``): no per-cycle step reads
  every pod.
- The victim search on a node (``victims_on_gpu``): every bound pod of
  lower priority off (its cpu, memory, pod slot and its GPU milli on its
  GPU indices), the pod must pass NodeResourcesFit and GpuShareFit (a pod
  without a GPU ask: NodeResourcesFit only), then reprieve most important
  first (priority, then the pod key: trace pods have no start time): put
  back on the very GPUs it holds, kept when the pod still fits, else a
  victim.  Every node is a potential node (both filters reject with
  Unschedulable, never UnschedulableAndUnresolvable), so numCandidates is
  of all ``n`` nodes and the visit starts at the seeded offset
  (``_candidates.preempt_offset``) and stops at the numCandidates-th
  candidate; pickOneNodeForPreemption (the lowest highest-victim
  priority, the smallest sum of priority + 2^31, the fewest victims, then
  the first visited; no PodDisruptionBudgets, no start times).
- The preemptor is nominated to the chosen node (the pods nominated there
  with a lower priority lose their nomination), with a grace of 0 the
  victims leave in
  importance order (each an assigned pod's deletion: every unschedulable
  pod moves) and the preemptor goes back to the queue as a pod that failed
  while a move request came: backoffQ while it backs off.  A nomination
  ends when its pod binds, is deleted, or preempts again.

State per cluster: ``pw`` [P, PW_N] int64 per pod (its nominated node,
its nominated pods' list links, the GPUs its nominated copy holds, list
links of the victim search), ``nw`` [N, NW_N] int64 per node (victim list
head, nominations, its last nominated pod), ``ps`` [PS_N] int64 scalars
(the last pod taken off a node: pod, row, GPUs; counters; the nominated
pods' list ends; the best candidate's statistics).  Per pod
inputs ``prio`` (priority) and ``krank`` (its key's rank); ``victim`` [P]
out: the times each pod was evicted (DefaultPreemption chose it; above 1
only where a terminating victim was chosen again), 0 never.

Plain Python on scalars and arrays (``_rules`` and ``_queue`` inlined),
compiled with ``njit`` (``cpu``) and ``cuda.jit(device=True)`` (``cuda``:
thread 0 of the cluster's block, except the victim search: there every
thread runs ``victims_in_slots`` for its nodes, each node's lower-priority
pods in its own range of per-pod slots and its statistics in its row of
``vs`` [N, VS_N], before the block picks; ``cuda.block_post_filter``).
"""

# ruff: noqa: F821

P_BOUND = 4             # _queue's statuses (a compiled namespace holds functions only)
P_GONE = 5
P_UNSCHED = 3
Q_UP_HEAD = 2           # _queue's slots of the unschedulable pool's ring
Q_UP_LEN = 3
INF = float("inf")
SEL_BEST = 0
PRIORITY_OFFSET = 2147483648

# pw columns
W_NOM = 0           # nominated node (-1 none)
W_LINK = 1          # its neighbours in the nominated pods' list (``link_prev`` / ``link_next``)
W_GM = 2            # the GPUs (bit mask) its nominated copy holds in a cycle
W_NXT = 3           # next lower-priority pod on its node (victim search)
W_CUR = 4           # a node's lower-priority pods (victim search)
W_VOUT = 5          # the best candidate's victims
W_ADDED = 6         # the nominated pods a cycle added, in order
PW_N = 7
# nw columns
N_HEAD = 0
N_CNT = 1           # pods nominated there
N_TAIL = 2          # the last of them in the nominated pods' list (while N_CNT > 0)
NW_N = 3
# ps slots
S_JR_POD = 0        # the pod last taken off a node (-1: a pod was added since)
S_JR_ROW = 1
S_JR_GM = 2
S_NNOM = 4          # nominations outstanding
S_NADD = 5          # nominated pods this cycle added
S_NHEAD = 6         # the nominated pods' list: its first and last pod (-1: empty)
S_NTAIL = 7
S_STATS = 8         # 8..10 this node's (top priority, sum, victims), 11..13 the best's
PS_N = 16
# tq slots: the victims terminating (a termination grace above 0)
T_HEAD = 0          # the first of ``tqp`` not yet due
T_TAIL = 1          # victims pushed to ``tqp``
T_WHEAD = 2         # the first pending deadline of ``tqt`` (a ring)
T_WLEN = 3          # pending deadlines
T_OVER = 4          # 1: more pending deadlines than ``tqt`` holds (the run is wrong)
TQ_N = 5
# vs columns: the block-parallel search's per-node scratch (``cuda``)
V_TOP = 0           # its victims' highest priority (``victims_in_slots``'s stats)
V_SUM = 1           # their sum of priority + 2^31
V_NV = 2            # how many (0: not a candidate)
V_LOW = 3           # its bound pods of lower priority than the preemptor's
V_OFF = 4           # where they start in the per-pod slots
V_FILL = 5          # how many are there so far
VS_N = 6
LINK = 4294967296   # 2^32: a link word is (previous + 1) + (next + 1) * LINK
LINK_LOW = 4294967295


def preempt_init(pw, nw, ps, victim):
    for k in range(pw.shape[0]):
        pw[k, W_NOM] = -1
        victim[k] = 0
    for i in range(nw.shape[0]):
        nw[i, N_CNT] = 0
    for s in range(ps.shape[0]):
        ps[s] = 0
    ps[S_JR_POD] = -1
    ps[S_NHEAD] = -1
    ps[S_NTAIL] = -1


def taken_off(k, row, gm, ps):
    """Pod ``k`` (GPUs ``gm``) just left ``row``: the GPU table's
    ``_just_released``."""
    ps[S_JR_POD] = k
    ps[S_JR_ROW] = row
    ps[S_JR_GM] = gm


def link_prev(k, pw):
    """The pod before ``k`` in the nominated pods' list (-1: none)."""
    return (pw[k, W_LINK] & LINK_LOW) - 1


def link_next(k, pw):
    """The pod after ``k`` in the nominated pods' list (-1: none)."""
    return (pw[k, W_LINK] >> 32) - 1


def set_links(k, prev, nxt, pw):
    # (a run's pods are fewer than 2^31: both fit a word)
    pw[k, W_LINK] = (prev + 1) + (nxt + 1) * LINK


def nom_delete(k, pw, nw, ps):
    """Pod ``k``'s nomination ends (none: nothing): off the list, its
    node's last pod there the one before it."""
    i = pw[k, W_NOM]
    if i < 0:
        return
    p = link_prev(k, pw)
    x = link_next(k, pw)
    if p >= 0:
        set_links(p, link_prev(p, pw), x, pw)
    else:
        ps[S_NHEAD] = x
    if x >= 0:
        set_links(x, p, link_next(x, pw), pw)
    else:
        ps[S_NTAIL] = p
    if nw[i, N_TAIL] == k:
        nw[i, N_TAIL] = p       # (a pod of the node while any is left: they are adjacent)
    nw[i, N_CNT] -= 1
    pw[k, W_NOM] = -1
    ps[S_NNOM] -= 1


def nom_add(k, i, pw, nw, ps):
    """The nominator's ``add``: ``k`` off its old node, appended to ``i``'s
    pods (a node without nominations goes after the others): the list
    stays in the nominator's order, each node's pods together."""
    nom_delete(k, pw, nw, ps)
    t = nw[i, N_TAIL] if nw[i, N_CNT] > 0 else ps[S_NTAIL]
    x = link_next(t, pw) if t >= 0 else ps[S_NHEAD]
    set_links(k, t, x, pw)
    if t >= 0:
        set_links(t, link_prev(t, pw), k, pw)
    else:
        ps[S_NHEAD] = k
    if x >= 0:
        set_links(x, k, link_next(x, pw), pw)
    else:
        ps[S_NTAIL] = k
    nw[i, N_TAIL] = k
    nw[i, N_CNT] += 1
    pw[k, W_NOM] = i
    ps[S_NNOM] += 1


def gpu_bits(left, count, gm, milli, num):
    """Whether the GPUs ``gm`` (bit mask) are ``num`` GPUs of the node with
    ``milli`` free each."""
    took = 0
    for g in range(16):
        if (gm >> g) & 1:
            if g >= count or left[g] < milli:
                return False
            took += 1
    return took == num


def nominees_on(j, prio, pst, cls, c_cpu, c_mem, c_num, c_milli, gpu_count, gpu_left, cpu_left,
                mem_left, pods_left, aff, node_ver, version, gidx, pw, nw, ps):
    """Pod ``j``'s cycle: the nominated pods it counts added to their nodes
    (module doc); returns how many (``pw[:, W_ADDED]``, in order)."""
    ps[S_NADD] = 0
    pj = prio[j]
    na = 0
    k = ps[S_NHEAD]
    while k >= 0:
        x = link_next(k, pw)
        if pst[k] == P_BOUND or pst[k] == P_GONE:
            # bound or deleted since: the nominator forgot it then (no
            # nomination came in between, so the order is the same)
            nom_delete(k, pw, nw, ps)
        elif k != j and prio[k] >= pj:
            pw[na, W_ADDED] = k
            na += 1
        k = x
    for a in range(na):
        k = pw[a, W_ADDED]
        i = pw[k, W_NOM]
        c = cls[k]
        num = c_num[c]
        milli = c_milli[c]
        gm = 0
        if num > 0 and milli > 0:
            left = gpu_left[i]
            if ps[S_JR_POD] == k and ps[S_JR_ROW] == i and gpu_bits(
                    left, gpu_count[i], ps[S_JR_GM], milli, num):
                gm = ps[S_JR_GM]
            else:
                took = select_gpus(SEL_BEST, gpu_count[i], left, num, milli, 0.0, gidx)
                if took == num:         # else it holds none (the table's ``unplaced``)
                    for q in range(took):
                        gm |= 1 << gidx[q]
            for g in range(16):
                if (gm >> g) & 1:
                    left[g] -= milli
        ps[S_JR_POD] = -1
        cpu_left[i] -= c_cpu[c]
        mem_left[i] -= c_mem[c]
        pods_left[i] -= 1
        aff[i, affinity_tag(num, milli)] += 1
        version[0] += 1
        node_ver[i] = version[0]
        pw[k, W_GM] = gm
    ps[S_NADD] = na
    return na


def nominees_off(cls, c_cpu, c_mem, c_num, c_milli, gpu_left, cpu_left, mem_left, pods_left,
                 aff, node_ver, version, pw, ps):
    """The nominated pods ``nominees_on`` added taken off again, in the
    order they came."""
    for a in range(ps[S_NADD]):
        k = pw[a, W_ADDED]
        i = pw[k, W_NOM]
        c = cls[k]
        release(i, pw[k, W_GM], c_cpu[c], c_mem[c], c_num[c], c_milli[c], gpu_left, cpu_left,
                mem_left, pods_left, aff, node_ver, version)
        taken_off(k, i, pw[k, W_GM], ps)
    ps[S_NADD] = 0


def bound_here(j, row, policy, c, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left,
               aff, c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask, tp_cpu, tp_num, tp_milli,
               tp_mask, tp_freq, cs, cg, cv, node_ver, work, pw, nw, ps):
    """Pod ``j`` (class ``c``) binds on ``row`` after its cycle: the row's
    answer again where the nominated pods changed it (Reserve's GPU pick
    sees the node without them), its nomination over, a pod added."""
    if cv[row] != node_ver[row]:
        node_answer(row, policy, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left,
                    aff, c_cpu[c], c_mem[c], c_cpu_nz[c], c_num[c], c_milli[c], c_mask[c],
                    tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, cs, cg, cv, node_ver, work)
    ps[S_JR_POD] = -1
    nom_delete(j, pw, nw, ps)


def shift_pod(i, k, sign, cls, c_cpu, c_mem, c_num, c_milli, gmask, gpu_left, cpu_left,
              mem_left, pods_left):
    """Bound pod ``k`` off node ``i`` (``sign`` 1: its requests and GPU
    milli given back) or on again (-1), on the GPUs it holds; for a filter
    test of the victim search (scores are not read there)."""
    c = cls[k]
    cpu_left[i] += sign * c_cpu[c]
    mem_left[i] += sign * c_mem[c]
    pods_left[i] += sign
    milli = c_milli[c]
    if c_num[c] > 0 and milli > 0:
        gm = gmask[k]
        for g in range(16):
            if (gm >> g) & 1:
                gpu_left[i, g] += sign * milli


def victims_on_gpu(i, cpu, mem, num, milli, mask, prio, krank, cls, c_cpu, c_mem, c_num,
                   c_milli, gmask, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left,
                   pw, nw, ps):
    """SelectVictimsOnNode for node ``i`` (its lower-priority pods the list
    ``nw[i, N_HEAD]`` / ``pw[:, W_NXT]``) and a pod asking ``cpu``, ``mem``,
    ``num`` x ``milli`` GPU of models ``mask``: the victims in
    ``pw[:, W_CUR]`` most important first, ``ps[S_STATS:S_STATS + 3]`` their
    highest priority, sum of priority + 2^31 and count; returns how many
    (0: not a candidate).  The node is as it was after."""
    k = 0
    x = nw[i, N_HEAD]
    while x >= 0:
        pw[k, W_CUR] = x
        k += 1
        x = pw[x, W_NXT]
    return victims_in_slots(i, pw[:, W_CUR], 0, k, cpu, mem, num, milli, mask, prio, krank,
                            cls, c_cpu, c_mem, c_num, c_milli, gmask, gpu_count, model,
                            gpu_left, cpu_left, mem_left, pods_left, ps[S_STATS:S_STATS + 3])


def more_important(s, t, prio, krank):
    """Whether pod ``s`` is reprieved before pod ``t``: the higher
    priority, then the smaller key rank, then (equal keys) the larger pod
    index, which is the order a list built by pushing pods in index order
    leaves equal keys in, so any order of the same pods sorts alike."""
    if prio[s] != prio[t]:
        return prio[s] > prio[t]
    if krank[s] != krank[t]:
        return krank[s] < krank[t]
    return s > t


def victims_in_slots(i, slot, off, k, cpu, mem, num, milli, mask, prio, krank, cls, c_cpu,
                     c_mem, c_num, c_milli, gmask, gpu_count, model, gpu_left, cpu_left,
                     mem_left, pods_left, st):
    """``victims_on_gpu``'s search on node ``i`` whose ``k`` lower-priority
    pods are ``slot[off:off + k]`` (any order): they are sorted most
    important first, then the victims kept in order at ``slot[off:off +
    nv]``; ``st[0:3]`` (the victims' highest priority, sum of priority +
    2^31, count) set when ``nv`` > 0; returns ``nv`` (0: not a candidate).
    Reads and writes only row ``i`` of the node columns and only those
    slots (so threads on different nodes and slot ranges run it at once);
    the node is as it was after."""
    if k == 0:
        return 0
    for a in range(k):
        shift_pod(i, slot[off + a], 1, cls, c_cpu, c_mem, c_num, c_milli, gmask, gpu_left,
                  cpu_left, mem_left, pods_left)
    if not node_feasible(i, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left, cpu,
                         mem, num, milli, mask):
        for a in range(k):
            shift_pod(i, slot[off + a], -1, cls, c_cpu, c_mem, c_num, c_milli, gmask,
                      gpu_left, cpu_left, mem_left, pods_left)
        return 0
    # most important first (insertion sort: a node holds few pods)
    for a in range(1, k):
        s = slot[off + a]
        b = a - 1
        while b >= 0 and more_important(s, slot[off + b], prio, krank):
            slot[off + b + 1] = slot[off + b]
            b -= 1
        slot[off + b + 1] = s
    # reprieve in that order; the victims kept in order at the front
    nv = 0
    for a in range(k):
        s = slot[off + a]
        shift_pod(i, s, -1, cls, c_cpu, c_mem, c_num, c_milli, gmask, gpu_left, cpu_left,
                  mem_left, pods_left)
        if not node_feasible(i, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left,
                             cpu, mem, num, milli, mask):
            shift_pod(i, s, 1, cls, c_cpu, c_mem, c_num, c_milli, gmask, gpu_left, cpu_left,
                      mem_left, pods_left)
            slot[off + nv] = s
            nv += 1
    for a in range(nv):
        shift_pod(i, slot[off + a], -1, cls, c_cpu, c_mem, c_num, c_milli, gmask, gpu_left,
                  cpu_left, mem_left, pods_left)
    if nv == 0:
        return 0
    total = 0
    for a in range(nv):
        total += prio[slot[off + a]] + PRIORITY_OFFSET
    st[0] = prio[slot[off]]
    st[1] = total
    st[2] = nv
    return nv


def better_candidate(top, total, nv, best_top, best_total, best_nv):
    """pickOneNodeForPreemption between a candidate (its victims' highest
    priority, sum of priority + 2^31, count) and the best one visited
    before it: the lower highest priority, then the smaller sum, then the
    fewer victims win; a tie keeps the one visited first."""
    if top != best_top:
        return top < best_top
    if total != best_total:
        return total < best_total
    return nv < best_nv


def post_filter_gpu(j, n, attempt, seed_mix, pct, least, cpu, mem, num, milli, mask, prio,
                    krank, pst, out_node, cls, c_cpu, c_mem, c_num, c_milli, gmask, gpu_count,
                    model, gpu_left, cpu_left, mem_left, pods_left, pw, nw, ps):
    """DefaultPreemption for pod ``j`` whose cycle failed on the ``n``
    nodes (the nominated pods it counts on them), every node a potential
    one: ``post_filter_rows`` over rows 0 .. n - 1, the lower-priority
    pods from a scan of every pod (the engines pass their lists of each
    row's bound pods instead; this form is what the tests compare them
    with)."""
    # (empty views: no row list, the rows themselves; no lists of the rows' pods)
    return post_filter_rows(j, n, pw[:0, W_NXT], n, attempt, seed_mix, pct, least, cpu, mem,
                            num, milli, mask, prio, krank, pst, out_node, cls, c_cpu, c_mem,
                            c_num, c_milli, gmask, gpu_count, model, gpu_left, cpu_left,
                            mem_left, pods_left, pw[:0, W_NXT], pw[:0, W_NXT], pw, nw, ps)


def post_filter_rows(j, n, pot, npot, attempt, seed_mix, pct, least, cpu, mem, num, milli,
                     mask, prio, krank, pst, out_node, cls, c_cpu, c_mem, c_num, c_milli, gmask,
                     gpu_count, model, gpu_left, cpu_left, mem_left, pods_left, nhead, pnext, pw,
                     nw, ps):
    """DefaultPreemption for pod ``j`` whose cycle failed on the ``n``
    rows, the potential nodes (those the usage-independent filters pass)
    the rows ``pot[:npot]`` in row order (``pot`` empty: rows 0 .. npot -
    1): numCandidates and the seeded offset of their number, the visit
    from that position wrapping around.  A visited row's lower-priority
    bound pods: from its list of bound pods (``_candidates.row_low``: ``nhead`` [N] /
    ``pnext`` [P], the engine's), or (``nhead`` empty) from a scan of every
    pod first.  Returns the node to nominate (-1 none); its victims, most
    important first, ``pw[:nv, W_VOUT]``, ``nv`` in ``ps[S_STATS + 5]``."""
    pj = prio[j]
    listed = nhead.shape[0] > 0
    if not listed:
        for i in range(n):
            nw[i, N_HEAD] = -1
        low = 0
        for k in range(pw.shape[0]):
            if pst[k] == P_BOUND and prio[k] < pj:
                i = out_node[k]
                pw[k, W_NXT] = nw[i, N_HEAD]
                nw[i, N_HEAD] = k
                low += 1
        if low == 0:
            return -1
    if npot == 0:
        return -1
    cap = num_candidates(npot, pct, least)
    off = preempt_offset(seed_mix, attempt, npot)
    found = 0
    best = -1
    for t in range(npot):
        q = off + t
        if q >= npot:
            q -= npot
        i = q if pot.shape[0] == 0 else pot[q]
        if listed:
            # (``pst[:0]``: no pods but the queue's)
            k, _ = row_low(i, pj, prio, pst, pst[:0], nhead, pnext, pw[:, W_CUR], 0, True)
            nv = 0
            if k > 0:       # (no call for a row without lower-priority pods)
                nv = victims_in_slots(i, pw[:, W_CUR], 0, k, cpu, mem, num, milli, mask, prio,
                                      krank, cls, c_cpu, c_mem, c_num, c_milli, gmask,
                                      gpu_count, model, gpu_left, cpu_left, mem_left,
                                      pods_left, ps[S_STATS:S_STATS + 3])
        else:
            nv = victims_on_gpu(i, cpu, mem, num, milli, mask, prio, krank, cls, c_cpu, c_mem,
                                c_num, c_milli, gmask, gpu_count, model, gpu_left, cpu_left,
                                mem_left, pods_left, pw, nw, ps)
        if nv == 0:
            continue
        found += 1
        if found > cap:
            break
        b = S_STATS
        if best < 0 or better_candidate(ps[b], ps[b + 1], nv, ps[b + 3], ps[b + 4], ps[b + 5]):
            best = i
            for s in range(3):
                ps[b + 3 + s] = ps[b + s]
            for a in range(nv):
                pw[a, W_VOUT] = pw[a, W_CUR]
        if found >= cap:
            break
    return best


def nominate_to(j, target, prio, pw, nw, ps):
    """Pod ``j`` nominated to node ``target`` (DefaultPreemption chose it):
    the pods nominated there with a lower priority lose their nomination
    (the node's pods in the list, from its last back)."""
    pj = prio[j]
    k = nw[target, N_TAIL] if nw[target, N_CNT] > 0 else -1
    while k >= 0 and pw[k, W_NOM] == target:
        p = link_prev(k, pw)
        if k != j and prio[k] < pj:
            nom_delete(k, pw, nw, ps)
        k = p
    nom_add(j, target, pw, nw, ps)


def evict_victim(v, target, cls, c_cpu, c_mem, c_num, c_milli, gmask, gpu_count, model,
                 gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version, tp_cpu,
                 tp_num, tp_milli, tp_mask, tp_freq, nfrag, pst, ps):
    """Victim ``v`` leaves node ``target``: its cpu, memory, pod slot and
    GPU milli freed (the GPU table's last pod taken off that node), gone,
    the node's fragmentation ``nfrag[target]`` recomputed.  Marking it and
    logging the change are the caller's."""
    c = cls[v]
    release(target, gmask[v], c_cpu[c], c_mem[c], c_num[c], c_milli[c], gpu_left, cpu_left,
            mem_left, pods_left, aff, node_ver, version)
    taken_off(v, target, gmask[v], ps)
    pst[v] = P_GONE
    nfrag[target] = node_frag_of(target, gpu_count, model, gpu_left, cpu_left, tp_cpu, tp_num,
                                 tp_milli, tp_mask, tp_freq)


def preempt_for(j, target, now, backoff0, backoff_max, m, cls, c_cpu, c_mem, c_num, c_milli,
                prio, gmask, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left, aff,
                node_ver, version, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, nfrag, leaf_of,
                t_lo, t_len, t_left, t_right, tree_val, log_t, log_pod, log_frag, victim,
                qi, pst, patt, pts, aq, up, hk, hs, hp, rank, ak, pw, nw, ps, grace, tqp, tqt,
                tq):
    """``post_filter_rows`` chose ``target`` for pod ``j``: nominated there
    (lower-priority nominations there end).  With ``grace`` 0 the victims
    are evicted in order (each logged at ``now`` with the fragmentation
    after it, from log row ``m``), the unschedulable pods moved, ``j``
    requeued as a pod that failed while a move request came; above 0 they
    stay on the node terminating until ``now + grace``
    (``terminate_later``) and ``j``, no pod having left, goes to the
    unschedulable pool.  Returns the log rows used so far."""
    nominate_to(j, target, prio, pw, nw, ps)
    if grace > 0.0:
        terminate_later(now, grace, victim, pts, tqp, tqt, tq, pw, ps)
        pst[j] = P_UNSCHED
        pts[j] = now
        ring_push(up, qi, Q_UP_HEAD, Q_UP_LEN, j)
        return m
    for a in range(ps[S_STATS + 5]):
        v = pw[a, W_VOUT]
        evict_victim(v, target, cls, c_cpu, c_mem, c_num, c_milli, gmask, gpu_count, model,
                     gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version, tp_cpu,
                     tp_num, tp_milli, tp_mask, tp_freq, nfrag, pst, ps)
        victim[v] += 1
        log_t[m] = now
        log_pod[m] = -1 - v
        log_frag[m] = tree_refresh(nfrag, leaf_of[target], t_lo, t_len, t_left, t_right,
                                   tree_val)
        m += 1
    move_all(now, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp, rank, ak)
    pts[j] = now
    move(j, now, backoff0, backoff_max, qi, pst, patt, pts, aq, hk, hs, hp, rank, ak)
    return m


# ---------------------------------------------------------------------------
# A termination grace above 0 (``schedule_one``'s ``_evict`` / ``terminate_due``):
# a victim stays bound, its resources held, marked terminating by
# preemption (``victim`` above 0 while bound: its evictions), until its first eviction's time +
# grace; then it leaves as an assigned pod's deletion.  A pod evicted again
# while terminating keeps that deadline, but every eviction's deadline is a
# time the scheduler's clock stops at.  ``tqp`` [P]: the victims in the
# order of their first eviction (their deadlines ``pts + grace`` in that
# order: the terminating heap's (deadline, push) order); ``tqt`` [R]
# float64: the pending deadlines, a ring, equal ones once; ``tq`` [TQ_N].

def terminate_later(now, grace, victim, pts, tqp, tqt, tq, pw, ps):
    """The chosen victims (``pw[:nv, W_VOUT]``) terminating from ``now``:
    each one's evictions counted in ``victim``, the ones evicted for the
    first time queued in ``tqp`` (their eviction time in ``pts``), the
    deadline ``now + grace`` pending.  Each
    is taken off its node and put back on the same GPUs (the record
    updated): the GPU table's last pod taken off is none after."""
    for a in range(ps[S_STATS + 5]):
        v = pw[a, W_VOUT]
        if victim[v] == 0:
            pts[v] = now
            tqp[tq[T_TAIL]] = v
            tq[T_TAIL] += 1
        victim[v] += 1
    ps[S_JR_POD] = -1
    deadline_push(now + grace, tqt, tq)


def terminate_pop(now, grace, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp,
                  rank, ak, tqp, tqt, tq):
    """The next victim whose grace ended by ``now`` and still bound: now
    gone, the unschedulable pods moved (an assigned pod's deletion); the
    caller frees its node and logs it.  -1 when none is left, the
    deadlines due then passed."""
    while tq[T_HEAD] < tq[T_TAIL]:
        v = tqp[tq[T_HEAD]]
        if pts[v] + grace > now:
            break
        tq[T_HEAD] += 1
        if pst[v] == P_BOUND:
            pst[v] = P_GONE
            move_all(now, backoff0, backoff_max, qi, pst, patt, pts, aq, up, hk, hs, hp, rank,
                     ak)
            return v
    deadlines_pass(now, tqt, tq)
    return -1


def waits_for_victims(j, prio, pst, out_node, victim, pw):
    """PodEligibleToPreemptOthers' terminating rule: pod ``j``'s nominated
    node holds a pod of lower priority terminating by preemption (bound,
    ``victim`` above 0), so it may not preempt now.  Reads every pod; an engine
    with the terminating victims' queue calls ``waits_for_terminating``."""
    i = pw[j, W_NOM]
    if i < 0:
        return False
    pj = prio[j]
    for k in range(pst.shape[0]):
        if victim[k] != 0 and pst[k] == P_BOUND and out_node[k] == i and prio[k] < pj:
            return True
    return False


def waits_for_terminating(j, prio, pst, out_node, pw, tqp, tq):
    """``waits_for_victims`` over the victims whose grace has not ended
    (``tqp[T_HEAD:T_TAIL]``: every victim still bound is there), not over
    every pod."""
    i = pw[j, W_NOM]
    if i < 0:
        return False
    pj = prio[j]
    for a in range(tq[T_HEAD], tq[T_TAIL]):
        k = tqp[a]
        if pst[k] == P_BOUND and out_node[k] == i and prio[k] < pj:
            return True
    return False
