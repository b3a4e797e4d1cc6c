"""kernels/victims/search.py: DefaultPreemption's SelectVictimsOnNode on every
candidate node at once.  Hand-checked nodes (codes, reprieve order, PDB
violations, host ports, ranking statistics), numpy == numba (== cuda under
the simulator), and both against a small plain-Python restatement of the
upstream algorithm written here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from support.kernel_inputs import cols, query
from support.victim_tables import NOW, node_cols, pod_table, victim_case

from tensorsched.kernels import layout as L
from tensorsched.kernels.victims import search as V

SETTINGS = {"max_examples": 25, "deadline": None, "derandomize": True,
                "suppress_health_check": list(HealthCheck)}
OFF = 2 ** 31
INS_CPU = 1 << (L.INSUFFICIENT_SHIFT + L.RES_CPU)


def select(backend, c, q, rows, prio, pods):
    res = V.select_victims(backend, c, q, np.asarray(rows, np.int64), prio, pods)
    return res.stats.tolist(), res.victims.tolist()


# ---------------------------------------------------------------------------
# Hand-checked nodes (preemptor priority 3)
# ---------------------------------------------------------------------------

HAND_PODS = pod_table([
    # 0: lower pods 0 (prio 0, 1000m) and 1 (prio 1, 1500m); pod 2 (prio 5) stays.
    [{"prio": 0, "start": 10, "cpu": 1000}, {"prio": 1, "start": 5, "cpu": 1500},
     {"prio": 5, "start": 1, "cpu": 1000}],
    # 1: nothing of lower priority.
    [{"prio": 3, "cpu": 3000}, {"prio": 9, "cpu": 500}],
    # 2: tainted against the preemptor: unfit whatever is removed.
    [{"prio": 0, "cpu": 100}],
    # 3: room for the preemptor without evicting anyone.
    [{"prio": 0, "cpu": 100}, {"prio": 1, "cpu": 100}],
    # 4: two pods in PDB 0 (1 disruption allowed), room for only one of them.
    [{"prio": 0, "start": 0, "cpu": 1000, "pdb": 1},
     {"prio": 0, "start": 1, "cpu": 1000, "pdb": 1}],
    # 5: a lower pod holding the preemptor's host port.
    [{"prio": 0, "cpu": 100, "ports": 1}, {"prio": 0, "cpu": 100}],
    # 6: two pods in PDB 1 (0 allowed), no room for either.
    [{"prio": 2, "start": 7, "cpu": 1000, "pdb": 2},
     {"prio": 2, "start": 3, "cpu": 1000, "pdb": 2}],
], n_pdb=2)
HAND_PODS.pdb_allowed[:] = [1, 0]
HAND_ALLOC = [[4000, 0, 0, 110], [4000, 0, 0, 110], [4000, 0, 0, 110], [4000, 0, 0, 110],
              [2000, 0, 0, 110], [4000, 0, 0, 110], [1000, 0, 0, 110]]
HAND = node_cols(HAND_PODS, HAND_ALLOC, taints=[[0], [0], [1], [0], [0], [0], [0]])
HAND_Q = query(filter_flags=L.F_FIT | L.F_PORTS | L.F_TAINT, request=[2000, 0, 0, 0],
               taint_reject=[1], port_conflicts=[1])
HAND_Q4 = HAND_Q._replace(request=np.array([1000, 0, 0, 0], np.int64))
S_CODE, S_NV, S_VIOL, S_CALLS, S_TOP, S_SUM, S_EARLY = range(7)


# ``backend``: the conftest fixture (numpy, numba, and cuda where it can run).
def test_hand_nodes(backend):
    stats, victims = select(backend, HAND, HAND_Q, range(4), 3, HAND_PODS)
    # Node 0: without pods 0, 1: 3500 - 2500 = 1000 used, + 2000 fits (call 1).
    # Importance order: pod 1 (prio 1), pod 0 (prio 0).  Reprieve pod 1:
    # 2500 + 2000 > 4000 -> victim (call 2); pod 0: 2000 + 2000 = 4000 fits (call 3).
    assert stats[0] == [0, 1, 0, 3, 1, 1 + OFF, 5]
    assert victims[0][:1] == [1]
    # Node 1: no lower-priority pod, no filter call.
    assert stats[1] == [V.CODE_NO_VICTIMS, 0, 0, 0, 0, 0, 0]
    # Node 2: still unfit (the taint) with every lower pod removed: the reasons.
    assert stats[2] == [int(L.R_TAINT), 0, 0, 1, 0, 0, 0]
    # Node 3: both pods reprieved: upstream's "no victims" error (1 + 2 calls).
    assert stats[3] == [V.CODE_NONE_LEFT, 0, 0, 3, 0, 0, 0]
    assert victims[1:] == [[0, 0, 0]] * 3


# ``backend``: the conftest fixture (numpy, numba, and cuda where it can run).
def test_hand_pdb_and_ports(backend):
    stats, victims = select(backend, HAND, HAND_Q4, [4, 5, 6], 3, HAND_PODS)
    # Node 4: importance order pod 0 (start 0), pod 1 (start 1).  PDB 0 allows
    # 1: pod 0 takes it, pod 1 would violate -> reprieved first, and fits
    # (1000 + 1000 <= 2000); pod 0 then does not (3000 > 2000): the victim.
    assert stats[0] == [0, 1, 0, 3, 0, OFF, 0]
    assert victims[0][0] == 0
    # Node 5: pod 0 holds the host port -> victim; pod 1 reprieved.
    assert stats[1] == [0, 1, 0, 3, 0, OFF, NOW]
    assert victims[1][0] == 0
    # Node 6: both violate PDB 1 and neither fits back: two violating victims
    # in importance order (pod 1 started first); earliest start among the
    # top-priority victims is 3; sum of (2 + 2^31) twice.
    assert stats[2] == [0, 2, 2, 3, 2, 2 * (2 + OFF), 3]
    assert victims[2][:2] == [1, 0]


def test_hand_without_the_pdb_reprieves_in_importance_order():
    pods = HAND_PODS._replace(pod_pdb=np.zeros_like(HAND_PODS.pod_pdb))
    for backend in ("numpy", "numba"):
        stats, victims = select(backend, HAND, HAND_Q4, [4], 3, pods)
        # Pod 0 (more important) is reprieved first now; pod 1 is the victim.
        assert stats[0] == [0, 1, 0, 3, 0, OFF, 1] and victims[0][0] == 1


def test_no_pods_at_all():
    pods = pod_table([[], []])
    c = node_cols(pods, [[1000, 0, 0, 110]] * 2)
    for backend in ("numpy", "numba"):
        stats, _victims = select(backend, c, HAND_Q, [1, 0], 3, pods)
        assert [s[0] for s in stats] == [V.CODE_NO_VICTIMS] * 2


@pytest.mark.cudasim
@needs_cuda
def test_cuda_hand_nodes_equal_numpy():
    for q, rows in ((HAND_Q, [0, 1, 2, 3]), (HAND_Q4, [6, 4, 5])):
        assert select("cuda", HAND, q, rows, 3, HAND_PODS) == \
            select("numpy", HAND, q, rows, 3, HAND_PODS)


# ---------------------------------------------------------------------------
# A plain restatement of SelectVictimsOnNode (filters: unschedulable, taint,
# ports, fit), independent of the kernels
# ---------------------------------------------------------------------------

def test_pad_query_is_the_query_itself_when_its_bitsets_fit():
    """A query whose bitsets are already as wide as the node columns' comes
    back as it is (no copy of its fields: a preemptor's retry asks); a
    narrower one comes back widened with zeros, the query unchanged."""
    words_t, words_p = HAND.taint_bits.shape[1], HAND.port_bits.shape[1]
    fit = HAND_Q._replace(taint_reject=np.zeros(words_t, np.int64) | 1,
                          port_conflicts=np.zeros(words_p, np.int64) | 1)
    assert V.pad_query(HAND, fit) is fit
    wide = HAND._replace(taint_bits=np.zeros((HAND.taint_bits.shape[0], words_t + 2), np.int64))
    got = V.pad_query(wide, fit)
    assert got is not fit and got.taint_reject.tolist() == [1] * words_t + [0, 0]
    assert fit.taint_reject.tolist() == [1] * words_t
    assert got.port_conflicts is fit.port_conflicts


def brute_reasons(c, q, i, used, ports):
    bits = 0
    if q.filter_flags & L.F_UNSCHEDULABLE and c.unschedulable[i] and \
            not q.tolerates_unschedulable:
        bits |= int(L.R_UNSCHEDULABLE)
    if q.filter_flags & L.F_TAINT and int(c.taint_bits[i, 0]) & int(q.taint_reject[0]):
        bits |= int(L.R_TAINT)
    if q.filter_flags & L.F_PORTS and ports & int(q.port_conflicts[0]):
        bits |= int(L.R_PORTS)
    if q.filter_flags & L.F_FIT:
        alloc = [int(x) for x in c.allocatable[i]]
        if used[L.RES_PODS] + 1 > alloc[L.RES_PODS]:
            bits |= int(L.R_TOO_MANY_PODS)
        for r, want in enumerate(int(x) for x in q.request):
            if r != L.RES_PODS and want > 0 and want > alloc[r] - used[r]:
                bits |= 1 << (L.INSUFFICIENT_SHIFT + r)
    return bits


def brute_node(c, q, i, prio, t):
    """(stats row, victims) for node row i."""
    slots = list(range(int(t.pod_count[i])))
    lower = [s for s in slots if t.pod_prio[i, s] < prio]
    if not lower:
        return [V.CODE_NO_VICTIMS, 0, 0, 0, 0, 0, 0], []
    kept = [s for s in slots if s not in lower]

    def state():
        used = [sum(int(t.pod_req[i, s, r]) for s in kept) for r in range(4)]
        ports = 0
        for s in kept:
            ports |= int(t.pod_ports[i, s, 0])
        return used, ports

    calls = 1
    bits = brute_reasons(c, q, i, *state())
    if bits:
        return [bits, 0, 0, calls, 0, 0, 0], []
    order = sorted(lower, key=lambda s: (-int(t.pod_prio[i, s]), int(t.pod_start[i, s]), s))
    left = [int(x) for x in t.pdb_allowed]
    violating = {}
    for s in order:
        v = False
        for p in range(len(left)):
            if int(t.pod_pdb[i, s, 0]) >> p & 1:
                left[p] -= 1
                v = v or left[p] < 0
        violating[s] = v
    victims, n_viol = [], 0
    for want in (True, False):
        for s in order:
            if violating[s] != want:
                continue
            kept.append(s)
            calls += 1
            if brute_reasons(c, q, i, *state()):
                kept.remove(s)
                victims.append(s)
                n_viol += want
    if not victims:
        return [V.CODE_NONE_LEFT, 0, 0, calls, 0, 0, 0], []
    victims.sort(key=order.index)
    top = int(t.pod_prio[i, victims[0]])
    return [0, len(victims), n_viol, calls, top,
            sum(int(t.pod_prio[i, s]) + OFF for s in victims),
            min(int(t.pod_start[i, s]) for s in victims if t.pod_prio[i, s] == top)], victims


@settings(**{**SETTINGS, "max_examples": 60})
@given(victim_case())
def test_random_numpy_numba_and_brute_force(case):
    c, q, rows, prio, pods = case
    want_stats, want_victims = select("numpy", c, q, rows, prio, pods)
    assert select("numba", c, q, rows, prio, pods) == (want_stats, want_victims)
    for j, i in enumerate(rows):
        stats, victims = brute_node(c, q, i, prio, pods)
        assert want_stats[j] == stats, (j, i)
        assert want_victims[j][:len(victims)] == victims
        assert not any(want_victims[j][len(victims):])


@pytest.mark.cudasim
@needs_cuda
@settings(**{**SETTINGS, "max_examples": 5})
@given(victim_case())
def test_random_cuda_equals_numpy(case):
    c, q, rows, prio, pods = case
    assert select("cuda", c, q, rows, prio, pods) == select("numpy", c, q, rows, prio, pods)
