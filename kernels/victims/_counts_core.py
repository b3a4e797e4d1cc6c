"""SelectVictimsOnNode on counts and DryRunPreemption's visit, as plain
scalar code compiled by ``victims._numba`` on top of the fused filter core
(``node_reasons`` below is the compiled fused rule).  The public side, with
the meaning of every array, is ``victims.on_counts``.

Why counts are enough: between two Filter calls of SelectVictimsOnNode only
the pods of one node move.  The built-in filters then change only through
the node's requested resources (NodeResourcesFit) and the host ports its
pods hold (NodePorts); PodTopologySpread and InterPodAffinity only through
how many pods matching each of their selectors left the node (``taken``).
So the rules that pods do not change run once per node (``node_reasons``
with NodePorts and NodeResourcesFit masked off), and every reprieve step is
a few integer comparisons.  Before each step the node fits (the first test
passed, and a pod put back is kept only when the node still fits), so a
step fails on ports exactly when the pod put back holds a conflicting port.

Plain ints below: keep in step with ``kernels/layout.py``,
``victims._core`` and ``victims.on_counts``.
"""

R_PORTS = 64
R_TOO_MANY_PODS = 128
R_INVALID_ROW = 32768
INSUFFICIENT_SHIFT = 24
F_PORTS = 16
F_FIT = 32
RES_PODS = 3
CODE_NO_VICTIMS = -1
CODE_NONE_LEFT = -2
START_NOW = 9223372036854775807
PRIORITY_OFFSET = 2147483648

KIND_OK = 0
KIND_BITS = 1
KIND_NONE_LEFT = 4
KIND_NO_VICTIMS = 6

VS_NON_VIOLATING = 0
VS_VIOLATING = 1
VS_CALLS = 2
VS_BEST = 3
VS_VISITED = 4
VS_STOPPED = 5


def pod_ports_conflict(row, s, pod_ports, port_conflicts):
    """The pod in slot s of ``row`` holds a host port the preemptor's
    NodePorts check collides with."""
    for w in range(port_conflicts.shape[0]):
        if pod_ports[row, s, w] & port_conflicts[w]:
            return True
    return False


def fit_bits_of(work, limit, fit_cols):
    """NodeResourcesFit's reason bits with the node's requested amounts of
    the compared columns ``work`` (``work[0]`` the pod count, ``work[1 + k]``
    resource ``fit_cols[k]``) against ``limit`` (allocatable - 1 for the
    pod count, allocatable - request for a resource): the fused rule
    ``fit_reasons`` on one node's working copy."""
    bits = 0
    if work[0] > limit[0]:
        bits |= R_TOO_MANY_PODS
    for k in range(fit_cols.shape[0]):
        if work[1 + k] > limit[1 + k]:
            bits |= 1 << (INSUFFICIENT_SHIFT + fit_cols[k])
    return bits


def affinity_code(i, off, ia_code, ia_valid, ia_base, ia_pos, ia_self, taken):
    """InterPodAffinity's filter code at batch index i (0 fits, 1 affinity,
    2 anti-affinity, 3 existing pods' anti-affinity) with ``taken[off + j]``
    pods of condition j off the node (``AffinityProbe.code``)."""
    n = ia_code.shape[0]
    any_pair = False
    for j in range(n):
        if ia_code[j] == 1 and ia_pos[j] >= 0:
            p = ia_pos[j]
            if ia_valid[i, j]:
                if ia_base[i, j] - taken[off + j] > 0:
                    p += 1
                if ia_base[i, j] > 0:
                    p -= 1
            if p > 0:
                any_pair = True
    first = (not any_pair) and ia_self
    for j in range(n):
        s = ia_base[i, j] - taken[off + j]
        if ia_code[j] == 1:
            if not ia_valid[i, j]:
                return 1
            if s <= 0 and not first:
                return 1
        elif ia_valid[i, j] and s > 0:
            return ia_code[j]
    return 0


def counted_kind(i, taken, sp_valid, sp_counted, sp_base, sp_bound, sp_other, sp_here,
                 ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first):
    """The host filters on counts at batch index i: 0 fits, else the kind
    (2 spread missing key, 3 spread skew, 7-9 InterPodAffinity's codes 1-3)
    of the first that fails, profile order (``ia_first``: InterPodAffinity
    before PodTopologySpread)."""
    n_cons = sp_valid.shape[1]
    if ia_first:
        r = affinity_code(i, n_cons, ia_code, ia_valid, ia_base, ia_pos, ia_self, taken)
        if r != 0:
            return r + 6
    for c in range(n_cons):
        if not sp_valid[i, c]:
            return 2
        s = sp_base[i, c] - taken[c] if sp_counted[i, c] else sp_base[i, c]
        g = sp_other[i, c]
        if sp_here[i, c] and s < g:
            g = s
        if s - g > sp_bound[i, c]:
            return 3
    if not ia_first:
        r = affinity_code(i, n_cons, ia_code, ia_valid, ia_base, ia_pos, ia_self, taken)
        if r != 0:
            return r + 6
    return 0


def step_fits(row, s, i, check_ports, fit, work, limit, fit_cols, port_conflicts,
              pod_ports, taken, sp_valid, sp_counted, sp_base, sp_bound, sp_other, sp_here,
              ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first):
    """Slot s put back on a node that fits now: does it still fit?  ``work``
    and ``taken`` hold the node with s back on it (the caller added it)."""
    if check_ports:
        if pod_ports_conflict(row, s, pod_ports, port_conflicts):
            return False
    if fit:
        if work[0] > limit[0]:
            return False
        for k in range(fit_cols.shape[0]):
            if work[1 + k] > limit[1 + k]:
                return False
    if taken.shape[0] > 0:
        if counted_kind(i, taken, sp_valid, sp_counted, sp_base, sp_bound, sp_other,
                        sp_here, ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first) != 0:
            return False
    return True


def move_slot(row, s, i, sign, work, fit_cols, taken, pod_req, match):
    """Slot s taken off (sign -1) or put back (+1): ``work`` and ``taken``."""
    work[0] += sign * pod_req[row, s, RES_PODS]
    for k in range(fit_cols.shape[0]):
        work[1 + k] += sign * pod_req[row, s, fit_cols[k]]
    for c in range(taken.shape[0]):
        taken[c] -= sign * match[c, i, s]


def row_victims(i, row, t0, static, fit, check_ports, any_pdb, allocatable, requested,
                fit_cols, fit_want, port_conflicts, pod_count, pod_prio, pod_start, pod_req,
                pod_ports, pod_pdb, pdb_allowed, pod_order, match,
                sp_valid, sp_counted, sp_base, sp_bound, sp_other, sp_here,
                ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first,
                bits_out, stats, work, limit, viol, is_victim, taken, left, cur):
    """SelectVictimsOnNode for node ``row`` (batch index i) whose
    lower-priority pods are ``pod_order[row, t0:]`` (at least one) and whose
    pod-independent filters give ``static``: its kind, ``stats[i]``
    (STAT_* columns), ``bits_out[i]`` and the victims in
    ``cur[:stats[i, 1]]`` (slots, most important first)."""
    n_on = pod_count[row]
    bits = static
    if static != R_INVALID_ROW:
        # The first Filter call: every lower-priority pod off the node (all
        # its checks run, so the failure names every reason).
        if check_ports:
            for t in range(t0):
                if pod_ports_conflict(row, pod_order[row, t], pod_ports, port_conflicts):
                    bits |= R_PORTS
                    break
        work[0] = requested[row, RES_PODS]
        limit[0] = allocatable[row, RES_PODS] - 1
        for k in range(fit_cols.shape[0]):
            work[1 + k] = requested[row, fit_cols[k]]
            limit[1 + k] = allocatable[row, fit_cols[k]] - fit_want[k]
        for c in range(taken.shape[0]):
            taken[c] = 0
        for t in range(t0, n_on):
            move_slot(row, pod_order[row, t], i, -1, work, fit_cols, taken, pod_req, match)
        if fit:
            bits |= fit_bits_of(work, limit, fit_cols)
    stats[i, 3] = 1
    if bits != 0:
        stats[i, 0] = bits
        bits_out[i] = bits
        return KIND_BITS
    if taken.shape[0] > 0:
        kind = counted_kind(i, taken, sp_valid, sp_counted, sp_base, sp_bound, sp_other,
                            sp_here, ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first)
        if kind != 0:
            return kind
    # filterPodsWithPDBViolation on a running copy of disruptionsAllowed.
    n_violating = 0
    if any_pdb:
        for p in range(left.shape[0]):
            left[p] = pdb_allowed[p]
    for t in range(t0, n_on):
        is_victim[t] = False
        viol[t] = False
        if not any_pdb:
            continue
        s = pod_order[row, t]
        for w in range(pod_pdb.shape[2]):
            word = pod_pdb[row, s, w]
            b = 0
            while word != 0:
                if word & 1:
                    p = w * 64 + b
                    left[p] -= 1
                    if left[p] < 0:
                        viol[t] = True
                word = (word >> 1) & 9223372036854775807
                b += 1
        if viol[t]:
            n_violating += 1
    # Reprieve: PDB-violating pods first, then the others, each most
    # important first.
    calls = 1
    n_viol = 0
    for g in range(2):
        want = g == 0
        if want and n_violating == 0:
            continue
        for t in range(t0, n_on):
            if viol[t] != want:
                continue
            s = pod_order[row, t]
            move_slot(row, s, i, 1, work, fit_cols, taken, pod_req, match)
            calls += 1
            if not step_fits(row, s, i, check_ports, fit, work, limit, fit_cols,
                             port_conflicts, pod_ports, taken, sp_valid, sp_counted, sp_base,
                             sp_bound, sp_other, sp_here, ia_code, ia_valid, ia_base,
                             ia_pos, ia_self, ia_first):
                move_slot(row, s, i, -1, work, fit_cols, taken, pod_req, match)
                is_victim[t] = True
                if want:
                    n_viol += 1
    stats[i, 3] = calls
    nv = 0
    top = 0
    total = 0
    earliest = START_NOW
    for t in range(t0, n_on):
        if not is_victim[t]:
            continue
        s = pod_order[row, t]
        cur[nv] = s
        pr = pod_prio[row, s]
        if nv == 0:
            top = pr
        total += pr + PRIORITY_OFFSET
        if pr == top and pod_start[row, s] < earliest:
            earliest = pod_start[row, s]
        nv += 1
    if nv == 0:
        stats[i, 0] = CODE_NONE_LEFT
        return KIND_NONE_LEFT
    stats[i, 1] = nv
    stats[i, 2] = n_viol
    stats[i, 4] = top
    stats[i, 5] = total
    stats[i, 6] = earliest
    return KIND_OK


def alike_victims(i, row, t0, static, fit, check_ports, monotone, allocatable, requested,
                  fit_cols, fit_want, port_conflicts, pod_count, pod_prio, pod_start, pod_req, pod_ports,
                  pod_order, match, sp_valid, sp_counted, sp_base, sp_bound, sp_other,
                  sp_here, ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first,
                  bits_out, stats, work, limit, taken, cur):
    """``row_victims`` when the lower-priority pods ``pod_order[row, t0:]``
    are alike (same request and class, no host port, no PDB): O(victims).

    None violates a PDB, so the reprieve is one pass; and once one of them
    does not fit back, none after it does (each later test sees the same
    node and the same pod), so the pods put back are the longest prefix
    that fits: bounded by the free room over the pod's request per fit
    column, then found on the counts (``monotone``: no required affinity
    term, by bisection)."""
    n_on = pod_count[row]
    k = n_on - t0
    ref = pod_order[row, n_on - 1]
    bits = static
    if static != R_INVALID_ROW:
        if check_ports:
            for t in range(t0):
                if pod_ports_conflict(row, pod_order[row, t], pod_ports, port_conflicts):
                    bits |= R_PORTS
                    break
        work[0] = requested[row, RES_PODS] - k * pod_req[row, ref, RES_PODS]
        limit[0] = allocatable[row, RES_PODS] - 1
        for q in range(fit_cols.shape[0]):
            work[1 + q] = requested[row, fit_cols[q]] - k * pod_req[row, ref, fit_cols[q]]
            limit[1 + q] = allocatable[row, fit_cols[q]] - fit_want[q]
        for c in range(taken.shape[0]):
            taken[c] = k * match[c, i, ref]
        if fit:
            bits |= fit_bits_of(work, limit, fit_cols)
    stats[i, 3] = 1
    if bits != 0:
        stats[i, 0] = bits
        bits_out[i] = bits
        return KIND_BITS
    if taken.shape[0] > 0:
        kind = counted_kind(i, taken, sp_valid, sp_counted, sp_base, sp_bound, sp_other,
                            sp_here, ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first)
        if kind != 0:
            return kind
    back = k
    if check_ports and pod_ports_conflict(row, ref, pod_ports, port_conflicts):
        back = 0
    if fit:
        # The first test passed: every room below is >= 0.
        d = pod_req[row, ref, RES_PODS]
        if d > 0:
            back = min(back, (limit[0] - work[0]) // d)
        for q in range(fit_cols.shape[0]):
            d = pod_req[row, ref, fit_cols[q]]
            if d > 0:
                back = min(back, (limit[1 + q] - work[1 + q]) // d)
    if taken.shape[0] > 0 and back > 0:
        if monotone:
            # Putting pods back only raises the node's domain sums, and every
            # condition here only fails more as they rise: the longest prefix
            # that fits by bisection.
            lo = 0
            hi = back
            while lo < hi:
                mid = (lo + hi + 1) // 2
                for c in range(taken.shape[0]):
                    taken[c] = (k - mid) * match[c, i, ref]
                if counted_kind(i, taken, sp_valid, sp_counted, sp_base, sp_bound, sp_other,
                                sp_here, ia_code, ia_valid, ia_base, ia_pos, ia_self,
                                ia_first) == 0:
                    lo = mid
                else:
                    hi = mid - 1
            back = lo
        else:
            j = 0
            while j < back:
                for c in range(taken.shape[0]):
                    taken[c] -= match[c, i, ref]
                if counted_kind(i, taken, sp_valid, sp_counted, sp_base, sp_bound,
                                sp_other, sp_here, ia_code, ia_valid, ia_base, ia_pos,
                                ia_self, ia_first) != 0:
                    break
                j += 1
            back = j
    stats[i, 3] = 1 + k
    nv = k - back
    if nv == 0:
        stats[i, 0] = CODE_NONE_LEFT
        return KIND_NONE_LEFT
    top = pod_prio[row, pod_order[row, t0 + back]]
    total = 0
    earliest = START_NOW
    for a in range(nv):
        s = pod_order[row, t0 + back + a]
        cur[a] = s
        pr = pod_prio[row, s]
        total += pr + PRIORITY_OFFSET
        if pr == top and pod_start[row, s] < earliest:
            earliest = pod_start[row, s]
    stats[i, 1] = nv
    stats[i, 4] = top
    stats[i, 5] = total
    stats[i, 6] = earliest
    return KIND_OK


def beats(stats, i, best):
    """Candidate i ranks before the kept best (``best`` [7], an earlier
    position): pickOneNodeForPreemption's order (``_core.ranks_before``)."""
    if stats[i, 2] != best[2]:
        return stats[i, 2] < best[2]
    if stats[i, 4] != best[4]:
        return stats[i, 4] < best[4]
    if stats[i, 5] != best[5]:
        return stats[i, 5] < best[5]
    if stats[i, 1] != best[1]:
        return stats[i, 1] < best[1]
    if stats[i, 6] != best[6]:
        return stats[i, 6] > best[6]
    return False


def position_kind(i, row, allocatable, requested, unschedulable, valid, label_vals,
                  label_nums, label_isnum, taint_bits, port_bits, request, requests_anything,
                  fit_ignored, node_name_row, prefilter_rows, tolerates_unschedulable,
                  taint_reject, has_node_selector, has_required, has_added_required,
                  program_terms, term_offsets, req_key, req_op, req_num, val_offsets, vals,
                  port_conflicts, prio, static_flags, fit, check_ports, any_pdb, monotone,
                  pod_count, pod_prio, pod_start, pod_req, pod_ports, pod_pdb, pdb_allowed,
                  pod_order, alike_from, fit_cols, fit_want, match, sp_valid, sp_counted,
                  sp_base, sp_bound, sp_other, sp_here, ia_code, ia_valid, ia_base, ia_pos,
                  ia_self, ia_first, bits_out, stats, work, limit, viol, is_victim, taken,
                  left, cur):
    """SelectVictimsOnNode on counts for node ``row`` at batch index i: its
    kind (KIND_*), ``stats[i]``, ``bits_out[i]`` and, for a candidate, the
    victims in ``cur[:stats[i, 1]]``.  ``static_flags`` the query's filter
    flags less NodePorts and NodeResourcesFit, ``fit`` NodeResourcesFit
    runs, ``monotone`` no required affinity condition (``visit_rows``).
    The device's thread per node (cuda) runs it; ``visit_rows`` holds the
    same lines inline (numba inlines the rules below into it, but not a
    call of this many arguments: Python passes over 30 as ``f(*args)``,
    which numba's inliner refuses, and as a call it cost the serial visit
    ~35 %); the cuda tests hold the two to the same answers."""
    for t in range(stats.shape[1]):
        stats[i, t] = 0
    bits_out[i] = 0
    # The lower-priority pods are the tail of the row's importance
    # order (priority desc, start asc, slot asc).
    n_on = pod_count[row]
    lo = 0
    hi = n_on
    while lo < hi:
        mid = (lo + hi) // 2
        if pod_prio[row, pod_order[row, mid]] < prio:
            hi = mid
        else:
            lo = mid + 1
    t0 = lo
    if t0 == n_on:
        stats[i, 0] = CODE_NO_VICTIMS
        k = KIND_NO_VICTIMS
    else:
        if not valid[row]:
            static = R_INVALID_ROW
        else:
            static = node_reasons(row, allocatable, requested, unschedulable,  # noqa: F821
                                  valid, label_vals, label_nums, label_isnum,
                                  taint_bits, port_bits, static_flags, request,
                                  requests_anything, fit_ignored, node_name_row,
                                  prefilter_rows, tolerates_unschedulable,
                                  taint_reject, has_node_selector, has_required,
                                  has_added_required, program_terms, term_offsets,
                                  req_key, req_op, req_num, val_offsets, vals,
                                  port_conflicts)
        if t0 >= alike_from[row]:
            k = alike_victims(i, row, t0, static, fit, check_ports, monotone,
                              allocatable, requested, fit_cols, fit_want,
                              port_conflicts, pod_count, pod_prio, pod_start, pod_req, pod_ports, pod_order, match,
                              sp_valid, sp_counted, sp_base, sp_bound, sp_other, sp_here,
                              ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first,
                              bits_out, stats, work, limit, taken, cur)
        else:
            k = row_victims(i, row, t0, static, fit, check_ports, any_pdb, allocatable,
                            requested, fit_cols, fit_want, port_conflicts, pod_count,
                            pod_prio, pod_start, pod_req, pod_ports, pod_pdb, pdb_allowed,
                            pod_order, match, sp_valid, sp_counted, sp_base, sp_bound,
                            sp_other, sp_here, ia_code, ia_valid, ia_base, ia_pos,
                            ia_self, ia_first, bits_out, stats, work, limit, viol,
                            is_victim, taken, left, cur)
    return k


def visit_rows(base, rows, allocatable, requested, unschedulable, valid, label_vals,
               label_nums, label_isnum, taint_bits, port_bits, filter_flags, request,
               requests_anything, fit_ignored, node_name_row, prefilter_rows,
               tolerates_unschedulable, taint_reject, has_node_selector, has_required,
               has_added_required, program_terms, term_offsets, req_key, req_op, req_num,
               val_offsets, vals, port_conflicts, prio, pod_count, pod_prio, pod_start,
               pod_req, pod_ports, pod_pdb, pdb_allowed, pod_order, alike_from, fit_cols,
               fit_want, check_ports, any_pdb, match, sp_valid, sp_counted, sp_base, sp_bound,
               sp_other, sp_here, ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first,
               cap, vs, best_stats, best_victims, kind, bits_out, stats, victims_out,
               work, limit, viol, is_victim, taken, left, cur):
    """Visit ``rows`` (visit positions base, base + 1, ...) until upstream's
    DryRunPreemption stops, keeping the chosen candidate on the way."""
    static_flags = filter_flags & ~(F_PORTS | F_FIT)
    fit = (filter_flags & F_FIT) != 0
    # Required pod affinity is the one count condition that putting pods
    # back can satisfy (``alike_victims``).
    monotone = True
    for j in range(ia_code.shape[0]):
        if ia_code[j] == 1:
            monotone = False
    for i in range(rows.shape[0]):
        if vs[VS_STOPPED] != 0:
            return
        row = rows[i]
        for t in range(stats.shape[1]):
            stats[i, t] = 0
        bits_out[i] = 0
        # The lower-priority pods are the tail of the row's importance
        # order (priority desc, start asc, slot asc).
        n_on = pod_count[row]
        lo = 0
        hi = n_on
        while lo < hi:
            mid = (lo + hi) // 2
            if pod_prio[row, pod_order[row, mid]] < prio:
                hi = mid
            else:
                lo = mid + 1
        t0 = lo
        if t0 == n_on:
            stats[i, 0] = CODE_NO_VICTIMS
            k = KIND_NO_VICTIMS
        else:
            if not valid[row]:
                static = R_INVALID_ROW
            else:
                static = node_reasons(row, allocatable, requested, unschedulable,  # noqa: F821
                                      valid, label_vals, label_nums, label_isnum,
                                      taint_bits, port_bits, static_flags, request,
                                      requests_anything, fit_ignored, node_name_row,
                                      prefilter_rows, tolerates_unschedulable,
                                      taint_reject, has_node_selector, has_required,
                                      has_added_required, program_terms, term_offsets,
                                      req_key, req_op, req_num, val_offsets, vals,
                                      port_conflicts)
            if t0 >= alike_from[row]:
                k = alike_victims(i, row, t0, static, fit, check_ports, monotone,
                                  allocatable, requested, fit_cols, fit_want,
                                  port_conflicts, pod_count, pod_prio, pod_start, pod_req, pod_ports, pod_order, match,
                                  sp_valid, sp_counted, sp_base, sp_bound, sp_other, sp_here,
                                  ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first,
                                  bits_out, stats, work, limit, taken, cur)
            else:
                k = row_victims(i, row, t0, static, fit, check_ports, any_pdb, allocatable,
                                requested, fit_cols, fit_want, port_conflicts, pod_count,
                                pod_prio, pod_start, pod_req, pod_ports, pod_pdb, pdb_allowed,
                                pod_order, match, sp_valid, sp_counted, sp_base, sp_bound,
                                sp_other, sp_here, ia_code, ia_valid, ia_base, ia_pos,
                                ia_self, ia_first, bits_out, stats, work, limit, viol,
                                is_victim, taken, left, cur)
        kind[i] = k
        vs[VS_VISITED] = base + i + 1
        vs[VS_CALLS] += stats[i, 3]
        if k != KIND_OK:
            continue
        nv = stats[i, 1]
        if victims_out.shape[0] > 0:
            for a in range(nv):
                victims_out[i, a] = cur[a]
        # Upstream's two candidate lists, each at most ``cap`` long.
        slot = VS_VIOLATING if stats[i, 2] > 0 else VS_NON_VIOLATING
        if vs[slot] >= cap:
            continue
        vs[slot] += 1
        if vs[VS_BEST] < 0 or beats(stats, i, best_stats):
            vs[VS_BEST] = base + i
            for t in range(best_stats.shape[0]):
                best_stats[t] = stats[i, t]
            for a in range(nv):
                best_victims[a] = cur[a]
        if vs[VS_NON_VIOLATING] >= 1 and vs[VS_NON_VIOLATING] + vs[VS_VIOLATING] >= cap:
            vs[VS_STOPPED] = 1
            return


def index_rows(rows, pod_count, pod_prio, pod_start, shape, cls, pod_ports, pod_pdb, dying,
               order, alike_from):
    """``order[row]`` (occupied slots most important first, then the free
    ones) and ``alike_from[row]`` of the victim table rows ``rows``: the
    compiled twin of ``on_counts.importance_order`` / ``alike_tail``."""
    c_max = order.shape[1]
    for rr in range(rows.shape[0]):
        row = rows[rr]
        n = pod_count[row]
        for s in range(n):
            t = s
            while t > 0:
                o = order[row, t - 1]
                if pod_prio[row, o] > pod_prio[row, s] or (
                        pod_prio[row, o] == pod_prio[row, s] and (
                            pod_start[row, o] < pod_start[row, s] or (
                                pod_start[row, o] == pod_start[row, s] and o < s))):
                    break
                order[row, t] = o
                t -= 1
            order[row, t] = s
        for s in range(n, c_max):
            order[row, s] = s
        t = n
        while t > 0:
            s = order[row, t - 1]
            special = dying[row, s]
            for w in range(pod_ports.shape[2]):
                if pod_ports[row, s, w] != 0:
                    special = True
            for w in range(pod_pdb.shape[2]):
                if pod_pdb[row, s, w] != 0:
                    special = True
            if special:
                break
            if t < n:
                u = order[row, t]
                if shape[row, s] != shape[row, u] or cls[row, s] != cls[row, u]:
                    break
            t -= 1
        alike_from[row] = t
