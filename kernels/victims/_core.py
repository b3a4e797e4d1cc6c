"""Per-node victim selection (DefaultPreemption's SelectVictimsOnNode) as plain
scalar code, compiled like ``fused._core``: ``victims._numba`` with ``njit``
(``prange`` over candidate nodes) and ``victims._cuda`` with
``cuda.jit(device=True)`` (one thread per node).  ``node_reasons`` is the
fused filter core of ``fused._core``, compiled for the same target.

Why the fused filter core is enough for "the pod fits with every filter":
removing or adding back pods changes only a node's requested resources
(including the pod count) and its used host ports; every other built-in
filter (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity) reads
node columns that pods do not touch.  So each Filter call of upstream's
SelectVictimsOnNode is ``node_reasons`` on row i with ``work_req[i]`` and
``work_ports[i]`` standing in for the node's requested and port columns.

Pod table (one row per node, C slots, see kernels/victims/search.py):
  pod_count [N]; pod_prio, pod_start [N, C] int64 (start ns; a pod without
  start time holds START_NOW); pod_req [N, C, R] int64 (pods slot = 1);
  pod_ports [N, C, WP] int64 host-port bitset; pod_pdb [N, C, WB] int64
  bitset of the PDBs the pod counts against (same namespace, selector
  matches, not listed in the PDB's disruptedPods); pdb_allowed [P] int64.

Outputs per evaluated position j (node row rows[j]):
  stats[j, :] = (code, n_victims, n_pdb_violations, filter_calls,
                 highest victim priority, sum of (priority + 2^31),
                 earliest start among the highest-priority victims)
  code: 0 candidate, CODE_NO_VICTIMS (no lower-priority pod), CODE_NONE_LEFT
  (every pod reprieved: upstream's "expected at least one victim" error), or
  the filter reason bits (> 0) with every lower-priority pod removed.
  victims[j, :n_victims] slot ids, most important first (priority desc,
  start asc, slot asc).
"""

CODE_NO_VICTIMS = -1
CODE_NONE_LEFT = -2
START_NOW = 9223372036854775807
PRIORITY_OFFSET = 2147483648


def more_important(pa, sa, ia, pb, sb, ib):
    """Upstream's MoreImportantPod: higher priority, then earlier start; the
    slot (pods sorted by key per node) makes the order total."""
    if pa != pb:
        return pa > pb
    if sa != sb:
        return sa < sb
    return ia < ib


def victims_node(j, i, allocatable, requested, unschedulable, valid, label_vals,
                 label_nums, label_isnum, taint_bits, port_bits, filter_flags, request,
                 requests_anything, fit_ignored, node_name_row, prefilter_rows,
                 tolerates_unschedulable, taint_reject, has_node_selector, has_required,
                 has_added_required, program_terms, term_offsets, req_key, req_op, req_num,
                 val_offsets, vals, port_conflicts,
                 prio, pod_count, pod_prio, pod_start, pod_req, pod_ports, pod_pdb,
                 pdb_allowed, work_req, work_ports, save_ports, order, flags, pdb_left,
                 victims, stats):
    """SelectVictimsOnNode for node row i, results at position j."""
    n_res = work_req.shape[1]
    n_pw = work_ports.shape[1]
    for r in range(n_res):
        work_req[i, r] = requested[i, r]
    for w in range(n_pw):
        work_ports[i, w] = 0
    k = 0
    for s in range(pod_count[i]):
        if pod_prio[i, s] < prio:
            order[j, k] = s
            k += 1
            for r in range(n_res):
                work_req[i, r] -= pod_req[i, s, r]
        else:
            for w in range(n_pw):
                work_ports[i, w] |= pod_ports[i, s, w]
    for c in range(stats.shape[1]):
        stats[j, c] = 0
    for c in range(victims.shape[1]):
        victims[j, c] = 0           # the unused tail reads 0 on every backend
    if k == 0:
        stats[j, 0] = CODE_NO_VICTIMS
        return
    calls = 1
    bits = node_reasons(i, allocatable, work_req, unschedulable, valid, label_vals,  # noqa: F821
                        label_nums, label_isnum, taint_bits, work_ports, filter_flags,
                        request, requests_anything, fit_ignored, node_name_row,
                        prefilter_rows, tolerates_unschedulable, taint_reject,
                        has_node_selector, has_required, has_added_required,
                        program_terms, term_offsets, req_key, req_op, req_num,
                        val_offsets, vals, port_conflicts)
    if bits != 0:
        stats[j, 0] = bits
        stats[j, 3] = calls
        return
    # Most important first (insertion sort: a node holds a few dozen pods).
    for a in range(1, k):
        s = order[j, a]
        b = a - 1
        while b >= 0:
            t = order[j, b]
            if more_important(pod_prio[i, s], pod_start[i, s], s,
                              pod_prio[i, t], pod_start[i, t], t):
                order[j, b + 1] = t
                b -= 1
            else:
                break
        order[j, b + 1] = s
    # filterPodsWithPDBViolation on a running copy of disruptionsAllowed.
    n_pdb = pdb_allowed.shape[0]
    for p in range(n_pdb):
        pdb_left[j, p] = pdb_allowed[p]
    n_bw = pod_pdb.shape[2]
    for a in range(k):
        s = order[j, a]
        violating = 0
        for w in range(n_bw):
            word = pod_pdb[i, s, w]
            bit = 0
            while word != 0:
                if word & 1:
                    p = w * 64 + bit
                    pdb_left[j, p] -= 1
                    if pdb_left[j, p] < 0:
                        violating = 1
                word = (word >> 1) & 9223372036854775807
                bit += 1
        flags[j, a] = violating
    # Reprieve: PDB-violating pods first, then the others, each in order.
    n_viol = 0
    for phase in range(2):
        want = 1 - phase
        for a in range(k):
            if flags[j, a] != want:
                continue
            s = order[j, a]
            for r in range(n_res):
                work_req[i, r] += pod_req[i, s, r]
            for w in range(n_pw):
                save_ports[i, w] = work_ports[i, w]
                work_ports[i, w] |= pod_ports[i, s, w]
            calls += 1
            bits = node_reasons(i, allocatable, work_req, unschedulable, valid, label_vals,  # noqa: F821
                                label_nums, label_isnum, taint_bits, work_ports,
                                filter_flags, request, requests_anything, fit_ignored,
                                node_name_row, prefilter_rows, tolerates_unschedulable,
                                taint_reject, has_node_selector, has_required,
                                has_added_required, program_terms, term_offsets, req_key,
                                req_op, req_num, val_offsets, vals, port_conflicts)
            if bits != 0:
                for r in range(n_res):
                    work_req[i, r] -= pod_req[i, s, r]
                for w in range(n_pw):
                    work_ports[i, w] = save_ports[i, w]
                flags[j, a] = 2 + want       # 2 = victim, 3 = violating victim
                if want == 1:
                    n_viol += 1
    # Victims in importance order and the ranking statistics.
    nv = 0
    total = 0
    top = 0
    earliest = START_NOW
    for a in range(k):
        if flags[j, a] < 2:
            continue
        s = order[j, a]
        victims[j, nv] = s
        pr = pod_prio[i, s]
        if nv == 0:
            top = pr
            earliest = pod_start[i, s]
        elif pr == top and pod_start[i, s] < earliest:
            earliest = pod_start[i, s]
        total += pr + PRIORITY_OFFSET
        nv += 1
    stats[j, 3] = calls
    if nv == 0:
        stats[j, 0] = CODE_NONE_LEFT
        return
    stats[j, 0] = 0
    stats[j, 1] = nv
    stats[j, 2] = n_viol
    stats[j, 4] = top
    stats[j, 5] = total
    stats[j, 6] = earliest


def ranks_before(stats, a, b):
    """pickOneNodeForPreemption's order between candidate positions a and b
    of ``stats`` [M, 7]: fewer PDB violations, lower highest-victim
    priority, smaller priority sum, fewer victims, later earliest start of
    the highest-priority victims, then the earlier position (upstream keeps
    the first of its candidate list, where non-violating candidates come
    before violating ones: the first criterion already orders those)."""
    if stats[a, 2] != stats[b, 2]:
        return stats[a, 2] < stats[b, 2]
    if stats[a, 4] != stats[b, 4]:
        return stats[a, 4] < stats[b, 4]
    if stats[a, 5] != stats[b, 5]:
        return stats[a, 5] < stats[b, 5]
    if stats[a, 1] != stats[b, 1]:
        return stats[a, 1] < stats[b, 1]
    if stats[a, 6] != stats[b, 6]:
        return stats[a, 6] > stats[b, 6]
    return a < b
