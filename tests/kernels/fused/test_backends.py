"""kernels/fused/backends.py: the backends' ``evaluate`` (filter + score + finalize)
give identical reasons, scores, totals and ties on the same inputs, with
percentageOfNodesToScore (``num_to_find``) and the rotated start index; the
numba backend's per-row cache and segment tree stay right while the state
changes; the cuda backend (simulator or device) matches numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from support.kernel_inputs import (
    ALL_FILTERS,
    ALL_SCORES,
    DEFAULT_NORM,
    DEFAULT_WEIGHTS,
    Source,
    cols,
    compiled,
    query,
    stage_case,
    state_of,
)

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels import layout as L
from tensorsched.kernels.fused import backends as fused

SETTINGS = {"max_examples": 25, "deadline": None, "derandomize": True,
                "suppress_health_check": list(HealthCheck)}
INS_CPU = 1 << (L.INSUFFICIENT_SHIFT + L.RES_CPU)


def snapshot(res):
    """A StageResult as plain lists (the numba arrays are reused buffers)."""
    ties = [int(res.ties[k]) for k in range(len(res.ties))]
    arr = lambda x: None if x is None else np.asarray(x).tolist()
    return {"reasons": arr(res.reasons), "scores": arr(res.scores), "total": arr(res.total),
                "ties": ties, "processed": res.processed, "found": res.found}


def run(backend, source, rows, start, q, to_find, active, norm, weights, want_scores=True):
    be = fused.make_backend(backend) if isinstance(backend, str) else backend
    return snapshot(be.evaluate(source, np.asarray(rows, np.int64), start, q, to_find,
                                np.asarray(active, bool), np.asarray(norm, np.int64),
                                np.asarray(weights, np.int64), len(active),
                                want_scores=want_scores))


def test_rotated():
    rows = np.array([10, 11, 12, 13, 14], np.int64)
    assert fused.rotated(rows, 0) is rows
    assert fused.rotated(rows, 2).tolist() == [12, 13, 14, 10, 11]
    assert fused.rotated(rows, 4).tolist() == [14, 10, 11, 12, 13]


def test_make_backend_unknown_name():
    from tensorsched.kernels._errors import BackendUnavailable
    with pytest.raises(BackendUnavailable, match="unknown backend"):
        fused.make_backend("tpu")


# ---------------------------------------------------------------------------
# A hand-checked cluster
# ---------------------------------------------------------------------------
# 4 nodes of 4000m cpu; requested cpu 0, 2000, 3500, 1000.  The pod asks for
# 1000m: row 2 does not fit (3500 + 1000 > 4000).  PreferNoSchedule taints the
# pod does not tolerate: row 0 two, row 3 one.  Slots: Fit (LeastAllocated
# on cpu, plain, weight 1) and TaintToleration (reversed, weight 3).
#   fit:   row 0 (4000-1000)*100//4000 = 75; row 1 (4000-3000)*100//4000 = 25;
#          row 3 (4000-2000)*100//4000 = 50
#   taint: raw 2, 0, -, 1; max 2 -> reversed 100 - 100 = 0, 100, -, 100 - 50 = 50
#   total: 75 + 0 = 75; 25 + 300 = 325; -1; 50 + 150 = 200

HAND_REQ = [[0, 0, 0, 0], [2000, 0, 0, 1], [3500, 0, 0, 1], [1000, 0, 0, 1]]
HAND = cols(4, req=HAND_REQ, taints=[[0b11], [0], [0], [0b01]])
HAND_Q = query(filter_flags=L.F_FIT, score_flags=(1 << L.S_FIT) | (1 << L.S_TAINT),
               request=[1000, 0, 0, 0], taint_prefer=[0b11], fit_res=(0,),
               fit_kind=(L.RK_NONZERO,), fit_weights=(1,))
ACTIVE = [True, False, True, False, False]
NORM = [0, 0, 2, 0, 0]
WEIGHTS = [1, 1, 3, 1, 1]
ROWS = [0, 1, 2, 3]


def hand(backend, start, to_find, want_scores=True):
    return run(backend, Source(HAND), ROWS, start, HAND_Q, to_find, ACTIVE, NORM, WEIGHTS,
               want_scores)


# ``backend``: the conftest fixture (numpy, numba, and cuda where it can run).
def test_hand_cluster_every_node_scored(backend):
    got = hand(backend, 0, 4)
    assert got["reasons"] == [0, 0, INS_CPU, 0]
    assert got["total"] == [75, 325, -1, 200]
    assert [r[0] for r in got["scores"]] == [75, 25, 0, 50]
    assert [r[2] for r in got["scores"]] == [0, 100, 0, 50]
    assert (got["ties"], got["processed"], got["found"]) == ([1], 4, 3)


# ``backend``: the conftest fixture (numpy, numba, and cuda where it can run).
def test_hand_cluster_rotated_start(backend):
    # start 2: evaluation order rows 2, 3, 0, 1; positions refer to that order.
    got = hand(backend, 2, 4)
    assert got["reasons"] == [INS_CPU, 0, 0, 0]
    assert got["total"] == [-1, 200, 75, 325]
    assert (got["ties"], got["processed"], got["found"]) == ([3], 4, 3)


# ``backend``: the conftest fixture (numpy, numba, and cuda where it can run).
def test_hand_cluster_num_to_find(backend):
    # start 0, find 2: rows 0 and 1 are the first two feasible ones; scanning
    # stops there.  Taint max over the scored rows is still 2: totals 75, 325.
    got = hand(backend, 0, 2)
    assert got["total"] == [75, 325, -1, -1]
    assert (got["ties"], got["processed"], got["found"]) == ([1], 2, 2)
    # Row 3 is feasible but not scanned: its raw scores are left as they are.
    assert got["scores"][3][0] == 50 and got["scores"][3][2] == 1
    # start 2, find 2: order 2, 3, 0, 1 -> rows 3 and 0 scored (3 positions scanned).
    got = hand(backend, 2, 2)
    assert got["total"] == [-1, 200, 75, -1]
    assert (got["ties"], got["processed"], got["found"]) == ([1], 3, 2)
    # start 3, find 1: order 3, 0, 1, 2 -> row 3 alone; its taint raw 1 is the
    # max -> reversed 0; total 50 + 0.
    got = hand(backend, 3, 1)
    assert got["total"] == [50, -1, -1, -1]
    assert (got["ties"], got["processed"], got["found"]) == ([0], 1, 1)


@pytest.mark.parametrize("start", [0, 1, 3])
def test_hand_cluster_placement_path(start):
    # want_scores=False and every node scored: numba answers from its segment
    # tree (no per-node reasons); the ties are the same positions as numpy's.
    want = hand("numpy", start, 4)
    got = hand("numba", start, 4, want_scores=False)
    assert got["ties"] == want["ties"] and got["found"] == want["found"] == 3
    assert got["reasons"] is None and got["scores"] is None


def test_ties_in_evaluation_order():
    # Identical nodes: every feasible one ties; positions follow the rotation.
    c = cols(5, valid=[True, True, False, True, True])
    q = query(filter_flags=L.F_FIT, score_flags=1, request=[100, 0, 0, 0])
    for start in range(5):
        for backend in ("numpy", "numba"):
            got = run(backend, Source(c), range(5), start, q, 5, ACTIVE, NORM, WEIGHTS)
            order = [(start + j) % 5 for j in range(5)]
            assert got["ties"] == [j for j, r in enumerate(order) if r != 2], (backend, start)
            assert got["reasons"][order.index(2)] == L.R_INVALID_ROW


# ---------------------------------------------------------------------------
# Random clusters: numpy == numba, every start and num_to_find
# ---------------------------------------------------------------------------

def _stage_inputs(case):
    objs, pod, filters, scores, strategy, _start, _to_find = case
    state = state_of(objs)
    q = compiled(state, pod, filter_flags=filters, score_flags=scores, fit_strategy=strategy,
                 shape=((0, 10), (50, 3), (100, 0)))
    active = np.array([bool(scores >> s & 1) for s in range(L.N_BUILTIN_SCORES)])
    return state, q, active


@settings(**SETTINGS)
@given(stage_case())
def test_random_numpy_equals_numba(case):
    start, to_find = case[5], case[6]
    state, q, active = _stage_inputs(case)
    rows = state.valid_rows()
    args = (state, rows, start, q, to_find, active, DEFAULT_NORM, DEFAULT_WEIGHTS)
    want = run("numpy", *args)
    assert run("numba", *args) == want
    # Placements (no per-node scores wanted): same ties, scan and totals.
    got = run("numba", *args, want_scores=False)
    assert (got["ties"], got["processed"], got["found"]) == \
        (want["ties"], want["processed"], want["found"])
    if got["total"] is not None:
        assert got["total"] == want["total"]
    # Independent checks of the scan: processed / found / scored rows.
    feasible = [j for j, r in enumerate(want["reasons"]) if r == 0]
    if to_find <= len(feasible):
        assert (want["processed"], want["found"]) == (feasible[to_find - 1] + 1, to_find)
    else:
        assert (want["processed"], want["found"]) == (len(rows), len(feasible))
    assert [j for j, t in enumerate(want["total"]) if t >= 0] == \
        [j for j in feasible if j < want["processed"]]


@settings(**SETTINGS)
@given(stage_case(), st.lists(st.tuples(st.integers(0, 9), st.sampled_from(
    ["10m", "500m", "1", "2"]), st.booleans()), min_size=1, max_size=6))
def test_numba_cache_follows_state_changes(case, changes):
    """One numba backend across pod adds/removes: each cycle recomputes only
    the rows written since, and still equals a fresh numpy evaluation
    (positional path and the segment-tree placement path)."""
    start = case[5]
    state, q, active = _stage_inputs(case)
    be = fused.make_backend("numba")
    names = list(state.node_rows)
    rows = state.valid_rows()
    n = rows.shape[0]
    added = []
    for step, (which, cpu, remove) in enumerate(changes):
        if remove and added:
            state.remove_pod(added.pop(0))
        else:
            rec = parse_pod(pod_dict(f"extra-{step}", cpu=cpu, memory=None,
                                     spec={"nodeName": names[which % len(names)]}))
            state.add_pod(rec)
            added.append(rec.key)
        args = (state, rows, start, q, n, active, DEFAULT_NORM, DEFAULT_WEIGHTS)
        want = run("numpy", *args)
        got = run(be, *args, want_scores=False)
        assert (got["ties"], got["found"]) == (want["ties"], want["found"]), step
        assert run(be, *args) == want, step


# ---------------------------------------------------------------------------
# cuda (Numba's CUDA simulator, or a device)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("start, to_find", [(0, 4), (2, 4), (0, 2), (2, 2), (3, 1), (1, 3)])
def test_hand_cluster_backends_identical(backend, start, to_find):
    assert hand(backend, start, to_find) == hand("numpy", start, to_find)


@pytest.mark.cudasim
@needs_cuda
def test_cuda_small_cluster_equals_numpy():
    objs = [node_dict("a", cpu="2", labels={"zone": "z1"},
                      taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
            node_dict("b", cpu="4", labels={"zone": "z2"}),
            node_dict("c", cpu="1", unschedulable=True),
            pod_dict("x", cpu="1", spec={"nodeName": "a"})]
    state = state_of(objs)
    pod = pod_dict("p", cpu="500m", spec={"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["z1"]}]}}]}}})
    q = compiled(state, pod, filter_flags=ALL_FILTERS, score_flags=ALL_SCORES)
    active = np.ones(L.N_BUILTIN_SCORES, bool)
    for start in range(3):
        args = (state, state.valid_rows(), start, q, 3, active, DEFAULT_NORM, DEFAULT_WEIGHTS)
        want = run("numpy", *args)
        assert want["reasons"].count(0) == 2
        assert run("cuda", *args) == want


@pytest.mark.cudasim
@needs_cuda
def test_cuda_kernels_named_for_ahead_compiling():
    kernels = fused.cuda_kernels()
    assert set(kernels) == {"fused pass", "run kernel", "cycle pick"}
    assert all(callable(k.py_func) for k in kernels.values())
