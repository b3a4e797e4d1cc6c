"""SelectVictimsOnNode for a preemptor whose only host filters are
PodTopologySpread and/or InterPodAffinity, simulated on counts for a batch
of node rows.

``framework.preemption.host_search.HostVictimSearch`` takes every lower-priority pod
off the node in the real state and runs the filters at each reprieve step.
When PodTopologySpread is the only host filter, what those steps read is
small: per node, the free amount of each resource the fit test compares,
and per spread constraint how many matching pods left the node (only that
node's domain sum moves; ``SpreadProbe`` gives the rest of the global
minimum).  This kernel replays the same steps on those numbers, one node
row after another, with the same order (PDB-violating pods first, each
group most important first) and the same filter-call count.

Per row i (``rows[i]``; C victim-table slots, K fit columns, S constraints):

* ``fixed[i]``: reason bits of the filters pods on the node do not change
  here (the static built-ins, and NodePorts from pods that stay);
* ``free0[i, k]``: allocatable - requested of fit column ``cols[k]``, the
  test failing when ``wants[k] > free`` with reason bit ``reason[k]``
  (only when ``fit``);
* ``match[i, s, c]``: slot s matches constraint c (counts in its domain);
  the InterPodAffinity conditions follow the S spread constraints;
* spread per constraint: ``sp_valid`` (the node has the key), ``sp_counted``
  (the node's pods count in its domain), ``sp_base`` (baseline domain sum),
  ``sp_bound`` (maxSkew - self), ``sp_other`` (least sum over the other
  present domains), ``sp_here`` (the node's domain is present).

* InterPodAffinity per condition j (``AffinityProbe``): ``ia_code[j]`` (1
  required affinity term, 2 own anti-affinity term, 3 bound pods'
  anti-affinity term), ``ia_valid[i, j]`` (the node has the key),
  ``ia_base[i, j]`` (baseline domain sum), ``ia_pos[j]`` (positive domains
  of a code-1 term, -1 when its key is nowhere), ``ia_self`` (the pod
  matches all its affinity terms), ``ia_first`` (it runs before spread).

Outputs: ``kind[i]`` (0 candidate, 1 built-in misfit with ``bits[i]``, 2
spread missing key, 3 spread skew, 4 none left, 5 search on the state: a
lower-priority pod holds host ports the preemptor's NodePorts could see,
6 no lower-priority pod, 7-9 InterPodAffinity's codes 1-3), ``stats[i]`` as the victim kernel's (STAT_*),
``victims[i, :n]`` slot ids most important first.
"""

from __future__ import annotations

import numpy as np

from ._core import CODE_NONE_LEFT, PRIORITY_OFFSET, START_NOW

KIND_OK = 0
KIND_BITS = 1
KIND_MISSING = 2
KIND_SKEW = 3
KIND_NONE_LEFT = 4
KIND_ON_STATE = 5
KIND_NO_VICTIMS = 6
KIND_AFFINITY = 7       # InterPodAffinity codes 1-3 (``_misfit`` 4-6 + 3)
KIND_ANTI = 8
KIND_EXISTING = 9


def _ipa_code(i, off, ia_code, ia_valid, ia_base, ia_pos, ia_self, taken):
    """InterPodAffinity's filter code of row i (0 fits, 1 affinity, 2
    anti-affinity, 3 existing pods' anti-affinity) with ``taken[off + j]``
    pods of condition j off the row (``AffinityProbe.code``)."""
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


def _misfit(fixed, fit, free, wants, reason, i, valid, counted, base, bound, other, here,
            taken, out_bits, ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first):
    """0 fits; 1 built-in bits (out_bits[0]); 2 missing key; 3 skew; 4
    affinity, 5 anti-affinity, 6 existing pods' anti-affinity (row i).
    ``ia_first``: InterPodAffinity comes before PodTopologySpread in the
    profile."""
    bits = fixed
    if fit:
        for k in range(free.shape[0]):
            if wants[k] > free[k]:
                bits |= reason[k]
    if bits != 0:
        out_bits[0] = bits
        return 1
    n_cons = valid.shape[1]
    if ia_first:
        r = _ipa_code(i, n_cons, ia_code, ia_valid, ia_base, ia_pos, ia_self, taken)
        if r != 0:
            return 3 + r
    for c in range(n_cons):
        if not valid[i, c]:
            return 2
        s = base[i, c] - taken[c] if counted[i, c] else base[i, c]
        g = other[i, c]
        if here[i, c] and s < g:
            g = s
        if s - g > bound[i, c]:
            return 3
    if not ia_first:
        r = _ipa_code(i, n_cons, ia_code, ia_valid, ia_base, ia_pos, ia_self, taken)
        if r != 0:
            return 3 + r
    return 0


def _select_spread(rows, prio_self, pod_count, pod_prio, pod_start, pod_req, pod_ports,
                   pod_pdb, pdb_allowed, check_ports, fixed, fit, cols, wants, reason, free0,
                   match, sp_valid, sp_counted, sp_base, sp_bound, sp_other, sp_here,
                   ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first,
                   kind, bits_out, stats, victims):
    m = rows.shape[0]
    c_max = pod_prio.shape[1]
    n_cols = cols.shape[0]
    n_cons = match.shape[2]
    order = np.empty(c_max, np.int64)
    viol = np.zeros(c_max, np.bool_)
    is_victim = np.zeros(c_max, np.bool_)
    free = np.empty(n_cols, np.int64)
    taken = np.zeros(n_cons, np.int64)
    left = np.empty(pdb_allowed.shape[0], np.int64)
    one = np.zeros(1, np.int64)
    for i in range(m):
        row = rows[i]
        for t in range(stats.shape[1]):
            stats[i, t] = 0
        bits_out[i] = 0
        # Lower-priority slots, most important first (priority desc, start
        # asc, slot asc): insertion sort.
        n = 0
        ports_seen = False
        for s in range(pod_count[row]):
            if pod_prio[row, s] >= prio_self:
                continue
            if check_ports:
                for w in range(pod_ports.shape[2]):
                    if pod_ports[row, s, w] != 0:
                        ports_seen = True
            j = n
            while j > 0:
                o = order[j - 1]
                if pod_prio[row, o] > pod_prio[row, s] or (
                        pod_prio[row, o] == pod_prio[row, s] and (
                            pod_start[row, o] < pod_start[row, s] or (
                                pod_start[row, o] == pod_start[row, s] and o < s))):
                    break
                order[j] = o
                j -= 1
            order[j] = s
            n += 1
        if n == 0:
            kind[i] = KIND_NO_VICTIMS
            continue
        if ports_seen:
            kind[i] = KIND_ON_STATE
            continue
        # Everything lower taken off.
        for k in range(n_cols):
            free[k] = free0[i, k]
        for c in range(n_cons):
            taken[c] = 0
        for t in range(n):
            s = order[t]
            for k in range(n_cols):
                if cols[k] < pod_req.shape[2]:
                    free[k] += pod_req[row, s, cols[k]]
            for c in range(n_cons):
                taken[c] += match[i, s, c]
        calls = 1
        r = _misfit(fixed[i], fit, free, wants, reason, i, sp_valid, sp_counted,
                    sp_base, sp_bound, sp_other, sp_here, taken, one,
                    ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first)
        if r != 0:
            stats[i, 3] = calls
            if r == 1:
                kind[i] = KIND_BITS
                bits_out[i] = one[0]
                stats[i, 0] = one[0]
            else:
                kind[i] = r if r <= 3 else r + 3
            continue
        # filterPodsWithPDBViolation on a running copy of disruptionsAllowed.
        for p in range(left.shape[0]):
            left[p] = pdb_allowed[p]
        for t in range(n):
            s = order[t]
            hit = False
            for w in range(pod_pdb.shape[2]):
                word = pod_pdb[row, s, w]
                if word == 0:
                    continue
                for b in range(64):
                    if (word >> b) & 1:
                        p = w * 64 + b
                        left[p] -= 1
                        if left[p] < 0:
                            hit = True
            viol[t] = hit
        n_victims = 0
        n_viol = 0
        for t in range(n):
            is_victim[t] = False
        for g in range(2):
            want = g == 0
            for t in range(n):
                if viol[t] != want:
                    continue
                s = order[t]
                for k in range(n_cols):
                    if cols[k] < pod_req.shape[2]:
                        free[k] -= pod_req[row, s, cols[k]]
                for c in range(n_cons):
                    taken[c] -= match[i, s, c]
                calls += 1
                if _misfit(fixed[i], fit, free, wants, reason, i, sp_valid, sp_counted,
                           sp_base, sp_bound, sp_other, sp_here, taken, one,
                    ia_code, ia_valid, ia_base, ia_pos, ia_self, ia_first) != 0:
                    for k in range(n_cols):
                        if cols[k] < pod_req.shape[2]:
                            free[k] += pod_req[row, s, cols[k]]
                    for c in range(n_cons):
                        taken[c] += match[i, s, c]
                    is_victim[t] = True
                    n_victims += 1
                    if viol[t]:
                        n_viol += 1
        stats[i, 3] = calls
        if n_victims == 0:
            kind[i] = KIND_NONE_LEFT
            stats[i, 0] = CODE_NONE_LEFT
            continue
        kind[i] = KIND_OK
        q = 0
        top = 0
        total = 0
        earliest = START_NOW
        for t in range(n):
            if not is_victim[t]:
                continue
            s = order[t]
            victims[i, q] = s
            pr = pod_prio[row, s]
            if q == 0:
                top = pr
            total += pr + PRIORITY_OFFSET
            if pr == top and pod_start[row, s] < earliest:
                earliest = pod_start[row, s]
            q += 1
        stats[i, 1] = n_victims
        stats[i, 2] = n_viol
        stats[i, 4] = top
        stats[i, 5] = total
        stats[i, 6] = earliest


_compiled = None


def select_spread(*args) -> None:
    """``_select_spread`` compiled by Numba on first use (host code: the
    plugins run on the host whatever the backend)."""
    global _compiled, _misfit, _ipa_code
    if _compiled is None:
        from numba import njit
        # Numba resolves the globals at compilation: make them the compiled ones.
        _ipa_code = njit(cache=True, nogil=True)(_ipa_code)
        _misfit = njit(cache=True, nogil=True)(_misfit)
        _compiled = njit(cache=True, nogil=True)(_select_spread)
    _compiled(*args)
