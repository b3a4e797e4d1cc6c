"""kernels/fused/run_sort.py: the compiled key kernel equals its NumPy twin
on random clusters and queries; the heap merge orders as the stable sort;
the order of running-minimum keys is the one-pod-after-another greedy over
the same keys; the conditions refuse what the sort cannot place and the
run stops before a normalization maximum would move."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.kernel_inputs import DEFAULT_NORM, compiled, stage_case, state_of

from tensorsched.kernels import layout as L
from tensorsched.kernels.fused import filters, run_sort, scores
from tensorsched.kernels.fused.backends import kernel_args
from tensorsched.kernels.fused.ties import seed_mix, tie_ranks

SETTINGS = {"max_examples": 25, "deadline": None, "suppress_health_check": list(HealthCheck)}


def setup(case, weights, norm):
    """(cols, q, rows, base reasons [N], raw [N, S], active, norm, weights)
    of a random stage case, every built-in slot active."""
    objs, pod, filter_flags, score_flags, strategy, _, _ = case
    state = state_of(objs)
    q = compiled(state, pod, filter_flags=filter_flags, score_flags=score_flags,
                 fit_strategy=strategy, shape=((0, 10), (50, 3), (100, 0)))
    cols = state.columns()
    rows = state.valid_rows()
    n = cols.allocatable.shape[0]
    reasons = np.full(n, L.R_INVALID_ROW, np.int64)
    reasons[rows] = filters.node_reasons(cols, rows, q, xp=np)
    raw = np.zeros((n, L.N_BUILTIN_SCORES), np.int64)
    part = np.zeros((rows.shape[0], L.N_BUILTIN_SCORES), np.int64)
    scores.raw_scores(cols, rows, q, part, reasons[rows] == 0, xp=np)
    raw[rows] = part
    active = np.ones(L.N_BUILTIN_SCORES, bool)
    return cols, q, rows, reasons, raw, active, np.asarray(norm, np.int64), \
        np.asarray(weights, np.int64)


@settings(**SETTINGS)
@given(stage_case(), st.lists(st.integers(0, 5), min_size=5, max_size=5),
       st.integers(0, 2**64 - 1), st.integers(1, 40))
def test_compiled_keys_equal_the_numpy_twin(case, weights, seed, count):
    cols, q, rows, reasons, raw, active, norm, weights = setup(case, weights, DEFAULT_NORM)
    hi = run_sort.run_maxima(reasons, raw, rows, active, norm)
    width = run_sort.key_width(cols, rows, q, count)
    got_keys, got_lens = run_sort.keys_numba(kernel_args(cols, q), rows, width, seed, reasons,
                                             raw, active, norm, weights, hi)
    want_keys, want_lens = run_sort.keys_numpy(cols, q, rows, width, seed, active, norm,
                                               weights, hi)
    assert np.array_equal(got_lens, want_lens)
    assert np.array_equal(got_keys, want_keys)
    # the first key of a feasible node is its cycle's order key now
    feasible = reasons[rows] == 0
    assert np.array_equal(got_lens > 0, feasible)


def greedy(keys, lens, count):
    """The one-pod-after-another choice over raw (not running-minimum)
    keys: each pod to the node with the largest next key, the lower
    position on an equal key."""
    head = np.zeros(keys.shape[0], np.int64)
    out = []
    for _ in range(count):
        best = -1
        for j in range(keys.shape[0]):
            if head[j] < lens[j] and (best < 0 or keys[j, head[j]] > keys[best, head[best]]):
                best = j
        if best < 0:
            break
        out.append(best)
        head[best] += 1
    return out


@st.composite
def key_sequences(draw):
    """(raw keys [M, W] with -1 after each node's length, lens): small key
    values so that equal keys across and within nodes are common."""
    m = draw(st.integers(1, 8))
    w = draw(st.integers(1, 6))
    lens = np.array([draw(st.integers(0, w)) for _ in range(m)], np.int64)
    keys = np.full((m, w), -1, np.int64)
    for j in range(m):
        for k in range(int(lens[j])):
            keys[j, k] = draw(st.integers(0, 6))
    return keys, lens


@settings(**SETTINGS)
@given(key_sequences(), st.integers(1, 50))
def test_sorting_running_minima_is_the_greedy(seqs, count):
    raw_keys, lens = seqs
    running = np.where(raw_keys >= 0, np.minimum.accumulate(
        np.where(raw_keys >= 0, raw_keys, np.iinfo(np.int64).max), axis=1), -1)
    running = np.where(np.arange(raw_keys.shape[1])[None, :] < lens[:, None], running, -1)
    want = greedy(raw_keys, lens, count)
    assert run_sort.order_by_sort(running, lens, count).tolist() == want
    assert run_sort.order_by_merge(running, lens, count).tolist() == want


def test_the_merge_takes_at_most_count_and_stops_where_keys_run_out():
    keys = np.array([[9, 4, -1], [7, 7, 7]], np.int64)
    lens = np.array([2, 3], np.int64)
    assert run_sort.order_by_merge(keys, lens, 3).tolist() == [0, 1, 1]
    assert run_sort.order_by_merge(keys, lens, 10).tolist() == [0, 1, 1, 1, 0]
    assert run_sort.order_by_sort(keys, lens, 10).tolist() == [0, 1, 1, 1, 0]


def test_keys_fold_the_tie_rank_of_the_pods_on_the_node():
    """Two equal empty nodes: each key is the total << 31 | the rank of the
    node with k run pods on it (``ties.tie_ranks``)."""
    objs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
             "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "3"}}}
            for i in range(2)]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
           "spec": {"containers": [{"name": "c", "image": "i", "resources": {
               "requests": {"cpu": "400m"}}}]}}
    state = state_of(objs)
    q = compiled(state, pod, filter_flags=L.F_FIT, score_flags=1 << L.S_FIT,
                 fit_resources=(("cpu", 1),))
    cols, rows = state.columns(), state.valid_rows()
    active = np.array([True, False, False, False, False])
    zero = np.zeros(5, np.int64)
    one = np.ones(5, np.int64)
    mix = seed_mix(3)
    keys, lens = run_sort.keys_numba(kernel_args(cols, q), rows, 3, mix, np.zeros(2, np.int64),
                                     np.zeros((2, 5), np.int64), active, zero, one, zero)
    assert lens.tolist() == [2, 2]       # 400m twice in 1 cpu
    fit = np.array([60, 20])             # (1000 - 400 (k + 1)) * 100 // 1000, k = 0, 1
    for j, row in enumerate(rows):
        raw = (fit << 31) | tie_ranks(mix, np.array([row, row]), np.array([0, 1]))
        assert keys[j, :2].tolist() == np.minimum.accumulate(raw).tolist()
        assert keys[j, 2] == -1


def test_sortable_refuses_partial_scoring_forms_user_slots_and_moving_normalizations(
        monkeypatch):
    monkeypatch.setattr(run_sort, "ENABLED", True)
    active = np.array([True, True, True, True, True, False])
    norm = np.array([0, 0, 2, 1, 0, 0])
    assert run_sort.sortable(10, 10, active, norm, 6)
    assert not run_sort.sortable(10, 9, active, norm, 6)          # a percentage
    assert not run_sort.sortable(0, 0, active, norm, 6)
    user = active.copy()
    user[5] = True
    assert not run_sort.sortable(10, 10, user, norm, 6)           # a user score slot
    minmax = norm.copy()
    minmax[3] = L.NORM_MINMAX
    assert not run_sort.sortable(10, 10, active, minmax, 6)
    moving = norm.copy()
    moving[0] = 1
    assert not run_sort.sortable(10, 10, active, moving, 6)       # Fit normalized

    class Form:
        params = np.zeros((1, 3))
    assert not run_sort.sortable(10, 10, active, norm, 6, (Form(), None, None))
    Form.params = np.zeros((0, 3))
    assert run_sort.sortable(10, 10, active, norm, 6, (None, Form(), None))
    monkeypatch.setattr(run_sort, "ENABLED", False)                # the switch
    assert not run_sort.sortable(10, 10, active, norm, 6)


def test_the_run_stops_before_the_first_pod_that_would_see_a_maximum_move():
    """Slot 3 normalized, its maximum 5 on row 1 only, which holds one pod
    of the run: the pod after the one that fills it would see a new
    maximum, so the exact prefix ends there."""
    rows = np.array([0, 1, 2], np.int64)
    reasons = np.zeros(3, np.int64)
    raw = np.zeros((3, 5), np.int64)
    raw[:, 3] = [2, 5, 0]
    active = np.ones(5, bool)
    norm = np.array([0, 0, 0, 1, 0])
    hi = run_sort.run_maxima(reasons, raw, rows, active, norm)
    assert hi.tolist() == [0, 0, 0, 5, 0]
    lens = np.array([3, 1, 3], np.int64)

    def exact(order, raw=raw, hi=hi):
        return run_sort.exact_prefix(np.array(order, np.int64), lens, rows, reasons, raw,
                                     active, norm, hi)
    assert exact([1]) == 1
    assert exact([0, 2, 1]) == 3
    assert exact([1, 0, 0]) == 1
    assert exact([0, 1, 2, 2]) == 2
    raw2 = raw.copy()
    raw2[2, 3] = 5                                  # a second row at the maximum
    assert exact([1, 0, 2, 0], raw2) == 4
    assert exact([1, 2, 2, 2, 0], raw2) == 4        # row 2 full after its third pod
    zero = np.zeros(5, np.int64)                    # a maximum of 0 never moves
    assert exact([1, 0, 0], np.zeros((3, 5), np.int64), zero) == 3
    reasons2 = np.array([0, 0, 4], np.int64)        # row 2 infeasible: not a maximum
    assert run_sort.exact_prefix(np.array([1, 0]), lens, rows, reasons2, raw2, active, norm,
                                 hi) == 1


def test_key_width_bounds_what_a_node_can_take_or_refuses_too_many_keys(monkeypatch):
    """Nodes of 4 cpu and 5, 6, 7 pod slots: a 1-cpu pod fits 4 times on
    each, a 500m pod 8 times by cpu but 7 by pods on the largest."""
    objs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
             "status": {"allocatable": {"cpu": "4", "memory": "1Gi", "pods": str(5 + i)}}}
            for i in range(3)]

    def pod(cpu):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
                "spec": {"containers": [{"name": "c", "image": "i", "resources": {
                    "requests": {"cpu": cpu}}}]}}
    state = state_of(objs)
    cols, rows = state.columns(), state.valid_rows()
    whole = compiled(state, pod("1"), filter_flags=L.F_FIT)
    half = compiled(state, pod("500m"), filter_flags=L.F_FIT)
    assert run_sort.key_width(cols, rows, whole, 100) == 4
    assert run_sort.key_width(cols, rows, half, 100) == 7
    assert run_sort.key_width(cols, rows, half, 3) == 3
    assert run_sort.key_width(cols, rows, compiled(state, pod("1")), 100) == 100   # no Fit
    monkeypatch.setattr(run_sort, "MAX_KEYS", 20)
    assert run_sort.key_width(cols, rows, half, 100) == 0
    assert run_sort.ascending(np.array([3, 1, 2])).tolist() == [1, 2, 3]


def test_add_requests_adds_one_request_per_pod_placed():
    state = state_of([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                       "status": {"allocatable": {"cpu": "4", "pods": "9"}}} for i in range(3)])
    cols = state.columns()
    before = cols.requested.copy()
    request = np.zeros(cols.requested.shape[1], np.int64)
    request[[L.RES_CPU, L.RES_PODS]] = [300, 1]
    run_sort.add_requests(cols, np.array([2, 0, 2, 2]), request, np.array([300, 7]))
    assert (cols.requested - before)[:, L.RES_CPU].tolist() == [300, 0, 900]
    assert (cols.requested - before)[:, L.RES_PODS].tolist() == [1, 0, 3]
    assert cols.nonzero_requested[2].tolist() == [900, 21]


def test_short_runs_are_left_to_the_compiled_run_below_the_share():
    """3 nodes x 4 keys: a run of 5 pods uses under half of them."""
    objs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
             "status": {"allocatable": {"cpu": "4", "memory": "1Gi", "pods": "9"}}}
            for i in range(3)]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
           "spec": {"containers": [{"name": "c", "image": "i", "resources": {
               "requests": {"cpu": "1"}}}]}}
    state = state_of(objs)
    cols, rows = state.columns(), state.valid_rows()
    q = compiled(state, pod, filter_flags=L.F_FIT, score_flags=1 << L.S_FIT)
    active = np.array([True, False, False, False, False])
    zeros, raw = np.zeros(3, np.int64), np.zeros((3, 5), np.int64)
    norm, weights = np.zeros(5, np.int64), np.ones(5, np.int64)

    def place(count, share):
        return run_sort.sorted_positions(
            rows, count, zeros, raw, active, norm, cols, q,
            lambda w, hi: run_sort.keys_numba(kernel_args(cols, q), rows, w, 1, zeros, raw,
                                              active, norm, weights, hi), min_share=share)
    assert place(5, 0.5) is None
    assert place(6, 0.5).shape == (6,)
    assert sorted(np.bincount(place(12, 0.0)).tolist()) == [4, 4, 4]
