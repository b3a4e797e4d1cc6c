"""kernels/fused/scores.py on its own: every raw score with hand-checked
arithmetic (Go integer semantics), finalize (normalization, totals, ties,
percentageOfNodesToScore), the NumPy twin against the Numba-compiled scalar
core, and the raw scores against the scalar oracle on random clusters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from reference import oracle as O
from support import strategies as ST
from support.kernel_inputs import (
    ALL_SCORES,
    DEFAULT_NORM,
    DEFAULT_WEIGHTS,
    cols,
    compiled,
    node_rows,
    program,
    query,
    req,
    state_of,
)

from tensorsched.kernels import layout as L
from tensorsched.kernels.fused import _numba as FN
from tensorsched.kernels.fused import scores as SC
from tensorsched.kernels.fused.backends import _pad_bitsets, kernel_args

SETTINGS = {"max_examples": 25, "deadline": None, "derandomize": True,
                "suppress_health_check": list(HealthCheck)}
MB = 1024 * 1024
SIGN = np.int64(-(1 << 63))
R1 = np.array([0], np.int64)


def a(*x):
    return np.array(x, np.int64)


def core_fused(c, rows, q, n_slots=5):
    """(reasons, raw) from the Numba fused pass (the scalar core) on ``rows``."""
    reasons = np.zeros(rows.shape[0], np.int64)
    raw = np.zeros((rows.shape[0], n_slots), np.int64)
    FN.fused_pass(rows, *kernel_args(c, _pad_bitsets(c, q)), reasons, raw)
    return reasons, raw


# ---------------------------------------------------------------------------
# helpers: tdiv, resource_pair, broken_linear
# ---------------------------------------------------------------------------

def test_tdiv_truncates_toward_zero():
    np.testing.assert_array_equal(SC.tdiv(a(7, -7, 7, -7, 0, -1), a(2, 2, -2, -2, 5, 3), xp=np),
                                  [3, -3, -3, 3, 0, 0])        # Python's // gives -4 and -1
    assert [FN.core["tdiv"](x, y) for x, y in ((7, 2), (-7, 2), (7, -2), (-1, 3))] == \
        [3, -3, -3, 0]


def test_resource_pair_kinds():
    # cpu, memory, ephemeral, pods, gpu
    c = cols(1, alloc=[[4000, 8000, 900, 110, 4]], req=[[1000, 3000, 100, 2, 1]],
             nonzero=[[1100, 3200]], n_res=5)
    q = query(n_res=5, request=[500, 0, 50, 0, 0], nonzero=[500, 200])
    pair = lambda r, kind, use: tuple(int(v[0]) for v in SC.resource_pair(
        c, R1, q, r, kind, use, xp=np))
    # Fit (use_requested False): cpu/memory read the non-zero columns.
    assert pair(0, L.RK_NONZERO, False) == (4000, 1100 + 500)
    assert pair(1, L.RK_NONZERO, False) == (8000, 3200 + 200)
    # BalancedAllocation (use_requested True): actual requests.
    assert pair(0, L.RK_NONZERO, True) == (4000, 1000 + 500)
    assert pair(1, L.RK_NONZERO, True) == (8000, 3000 + 0)
    assert pair(2, L.RK_NATIVE, False) == (900, 100 + 50)
    # A scalar the pod does not request is skipped; pods is never scored.
    assert pair(4, L.RK_SCALAR, False) == (0, 0)
    assert pair(4, L.RK_SCALAR, False) == pair(3, L.RK_SKIP, False)
    q2 = q._replace(request=a(500, 0, 50, 0, 2))
    assert tuple(int(v[0]) for v in SC.resource_pair(c, R1, q2, 4, L.RK_SCALAR, False,
                                                     xp=np)) == (4, 1 + 2)


def test_broken_linear_shape():
    util, score = a(10, 40), a(100, 0)
    p = a(0, 10, 20, 25, 40, 41, 100)
    # p <= 10 -> 100; p = 20 -> 100 + tdiv(-100 * 10, 30) = 100 - 33 = 67 (floor would be 66);
    # p = 25 -> 100 + tdiv(-1500, 30) = 50; p = 40 -> 0; above the last point -> 0.
    want = [100, 100, 67, 50, 0, 0, 0]
    np.testing.assert_array_equal(SC.broken_linear(p, util, score, xp=np), want)
    assert [FN.core["broken_linear"](int(x), util, score) for x in p] == want
    # Rising shape, last score held past the last point.
    np.testing.assert_array_equal(SC.broken_linear(a(0, 50, 99), a(0, 50), a(0, 30), xp=np),
                                  [0, 30, 30])


# ---------------------------------------------------------------------------
# fit_score
# ---------------------------------------------------------------------------

# Row 0: cpu 4000 (1000 non-zero requested), memory 8000 (1000).
# Row 1: the pod does not fit (cpu 1000 < 1000 + 1000 requested).
# Row 2: memory allocatable 0 (not counted).
FIT_COLS = cols(3, alloc=[[4000, 8000, 0, 110], [1000, 8000, 0, 110], [4000, 0, 0, 110]],
                nonzero=[[1000, 1000], [1000, 1000], [1000, 1000]])
FIT_Q = {"request": [1000, 2000, 0, 0], "nonzero": [1000, 2000]}
ROWS3 = np.arange(3, dtype=np.int64)


def fit(q, c=FIT_COLS, rows=ROWS3):
    got = SC.fit_score(c, rows, q, xp=np)
    _, raw = core_fused(c, rows, q._replace(score_flags=1))
    np.testing.assert_array_equal(got, raw[:, 0])
    return list(got)


def test_least_allocated():
    # row 0: cpu (4000-2000)*100//4000 = 50, memory (8000-3000)*100//8000 = 62 -> (50+62)//2 = 56
    # row 1: cpu 2000 > 1000 -> 0; memory 62 -> 31
    # row 2: cpu 50, memory not counted -> 50
    assert fit(query(**FIT_Q)) == [56, 31, 50]
    # weights 3:1 -> (150 + 62) // 4 = 53; row 1 (0 + 62) // 4 = 15; row 2 150 // 3 = 50
    assert fit(query(**FIT_Q, fit_weights=(3, 1))) == [53, 15, 50]


def test_most_allocated():
    # row 0: cpu 2000*100//4000 = 50, memory 3000*100//8000 = 37 -> 43
    # row 1: cpu min(2000, 1000) -> 100, memory 37 -> 68; row 2: cpu 50 alone
    assert fit(query(**FIT_Q, strategy=L.STRATEGY_MOST)) == [43, 68, 50]


def test_requested_to_capacity_ratio():
    # Shape (10%, 100), (40%, 0) (scores already scaled x10).
    shape = ((10, 100), (40, 0))
    c = cols(3, alloc=[[1000, 1000, 0, 110]] * 3, nonzero=[[0, 0], [0, 0], [0, 900]])
    q = query(request=[200, 50, 0, 0], strategy=L.STRATEGY_RATIO, shape=shape)
    # row 0: cpu 20% -> 67, memory 5% -> 100: (67 + 100) / 2 = 83.5 -> rounds half up to 84
    # row 1: same as row 0
    # row 2: memory (900+50)*100//1000 = 95% -> 0, not counted: cpu 67 alone
    assert fit(q, c) == [84, 84, 67]
    # Weighted: (67*1 + 100*2) / 3 = 89
    assert fit(q._replace(fit_weights=a(1, 2)), c) == [89, 89, 67]
    # Over capacity reads utilization 100: cpu 200 > 100 -> shape at 100 =
    # 100 + tdiv((30-100) * (100-10), 90) = 30; memory 5% -> 100; (30 + 100) / 2 = 65.
    c = cols(1, alloc=[[100, 1000, 0, 110]], nonzero=[[0, 0]])
    assert fit(query(request=[200, 50, 0, 0], strategy=L.STRATEGY_RATIO,
                     shape=((10, 100), (100, 30))), c, R1) == [65]


def test_fit_without_counted_resources_is_zero():
    c = cols(1, alloc=[[0, 0, 0, 110]])
    assert fit(query(**FIT_Q), c, R1) == [0]
    assert fit(query(**FIT_Q, fit_res=(), fit_kind=(), fit_weights=()), FIT_COLS) == [0, 0, 0]


# ---------------------------------------------------------------------------
# balanced_score
# ---------------------------------------------------------------------------

def balanced(c, q, rows):
    got = SC.balanced_score(c, rows, q, xp=np)
    _, raw = core_fused(c, rows, q._replace(score_flags=2))
    np.testing.assert_array_equal(got, raw[:, 1])
    return list(got)


def test_balanced_allocation():
    # cpu 4000 with 1000 requested, memory 8000, ephemeral 1000 with 1000 requested.
    c = cols(4, alloc=[[4000, 8000, 1000, 110], [4000, 8000, 1000, 110],
                       [2000, 8000, 0, 110], [4000, 0, 0, 110]],
             req=[[1000, 0, 1000, 0], [1000, 0, 1000, 0], [2000, 0, 0, 0], [0, 0, 0, 0]],
             nonzero=[[9999, 9999]] * 4)          # not read: balanced uses actual requests
    q = query(request=[1000, 2000, 0, 0], nonzero=[7777, 7777])
    # row 0: cpu 2000/4000 = .5, memory 2000/8000 = .25: std |.5-.25|/2 = .125 -> 87.5 -> 87
    # row 2: cpu 3000/2000 capped at 1, memory .25: std .375 -> 62.5 -> 62
    # row 3: memory allocatable 0: one fraction, std 0 -> 100
    rows = np.array([0, 2, 3], np.int64)
    assert balanced(c, q, rows) == [87, 62, 100]
    # Three resources (ephemeral 1000/1000 = 1.0): fractions .5, .25, 1; mean 7/12;
    # variance ((1/12)^2 + (4/12)^2 + (5/12)^2) / 3 = 42/432; std .3118 -> 68.8 -> 68
    q3 = q._replace(bal_res=a(0, 1, 2), bal_kind=a(L.RK_NONZERO, L.RK_NONZERO, L.RK_NATIVE))
    assert balanced(c, q3, np.array([1], np.int64)) == [68]


# ---------------------------------------------------------------------------
# taint_count, affinity_weight, image_score
# ---------------------------------------------------------------------------

def test_taint_count_popcount_across_words():
    c = cols(3, taints=[[0b111, SIGN], [0b010, 0], [0, 0]])
    q = query(taint_prefer=[0b101, SIGN])
    # row 0: bits 0, 2 of word 0 and bit 63 of word 1 -> 3
    np.testing.assert_array_equal(SC.taint_count(c, ROWS3, q, xp=np), [3, 0, 0])
    _, raw = core_fused(c, ROWS3, q._replace(score_flags=4))
    np.testing.assert_array_equal(raw[:, 2], [3, 0, 0])
    # Nothing preferred-against: all zero.
    np.testing.assert_array_equal(SC.taint_count(c, ROWS3, query(), xp=np), [0, 0, 0])


def test_affinity_weight_sums_matching_terms():
    c = cols(3, labels=[[0, 0], [1, 0], [-1, -1]])
    progs = program(required=[[req(0, L.OP_IN, [1])]],            # not a preferred term
                    preferred=[(5, [req(0, L.OP_IN, [0])]),
                               (7, [req(1, L.OP_EXISTS)]),
                               (11, [])])                          # empty: never matches
    q = query(programs=progs)
    # row 0: 5 + 7; row 1: 7; row 2: none
    np.testing.assert_array_equal(SC.affinity_weight(c, ROWS3, q, xp=np), [12, 7, 0])
    _, raw = core_fused(c, ROWS3, q._replace(score_flags=8))
    np.testing.assert_array_equal(raw[:, 3], [12, 7, 0])


def test_image_score():
    # Entries 0 (word 0 bit 0) and 65 (word 1 bit 1); two containers -> max 2000MB.
    c = cols(4, images=[[1, 2], [1, 0], [0, 0], [1, 2]])
    q = query(image_entries=[0, 65], image_scaled=[100 * MB, 500 * MB], image_max=2000 * MB)
    # row 0: 600MB -> 100 * (600-23) / (2000-23) = 57700 / 1977 = 29
    # row 1: 100MB -> 7700 / 1977 = 3; row 2: below 23MB -> 0
    rows = np.arange(3, dtype=np.int64)
    np.testing.assert_array_equal(SC.image_score(c, rows, q, xp=np), [29, 3, 0])
    # Above the maximum: clamped -> 100.
    q2 = q._replace(image_scaled=a(1500 * MB, 1500 * MB))
    np.testing.assert_array_equal(SC.image_score(c, np.array([3], np.int64), q2, xp=np), [100])
    _, raw = core_fused(c, np.arange(4, dtype=np.int64), q._replace(score_flags=16))
    np.testing.assert_array_equal(raw[:, 4], [29, 3, 0, 29])


def test_raw_scores_only_feasible_rows_and_enabled_slots():
    c = cols(2, taints=[[1], [1]])
    q = query(score_flags=(1 << L.S_TAINT) | (1 << L.S_FIT), taint_prefer=[1],
              request=[1000, 0, 0, 0], nonzero=[1000, 0])
    raw = np.full((2, 6), -7, np.int64)
    SC.raw_scores(c, np.arange(2, dtype=np.int64), q, raw, np.array([True, False]), xp=np)
    # row 0: fit (4000-1000)*100//4000 = 75 and memory 100 -> 87; taint 1; others untouched.
    assert raw.tolist() == [[87, -7, 1, -7, -7, -7], [-7] * 6]


# ---------------------------------------------------------------------------
# finalize
# ---------------------------------------------------------------------------

def finalize_both(reasons, raw, num_to_find, active, norm, weights):
    """scores.finalize, asserted equal to the Numba core's finalize_scores."""
    reasons, raw = a(*reasons), np.array(raw, np.int64)
    active, norm, weights = np.array(active, bool), a(*norm), a(*weights)
    sc, total, ties, processed, found = SC.finalize(reasons, raw.copy(), num_to_find, active,
                                                    norm, weights, xp=np)
    m = reasons.shape[0]
    raw2, total2, ties2 = raw.copy(), np.zeros(m, np.int64), np.zeros(m, np.int64)
    n, p2, f2 = FN.finalize(reasons, raw2, total2, num_to_find, active, norm, weights, ties2)
    np.testing.assert_array_equal(sc, raw2)
    np.testing.assert_array_equal(total, total2)
    np.testing.assert_array_equal(ties, ties2[:n])
    assert (processed, found) == (p2, f2)
    return sc.tolist(), total.tolist(), ties.tolist(), processed, found


RAW = [[10, 3], [99, 99], [20, 0], [5, 1]]


def test_finalize_normalizes_weighs_and_ties():
    # Rows 0, 2, 3 feasible.  Slot 0 DefaultNormalize (max 20): 50, 100, 25.
    # Slot 1 reversed (max 3): 100 - 100 = 0, 100 - 0 = 100, 100 - 33 = 67.
    # Totals (weights 1, 2): 50, 300, 25 + 134 = 159; row 1 untouched, -1.
    sc, total, ties, processed, found = finalize_both([0, 5, 0, 0], RAW, 10, [1, 1], [1, 2],
                                                      [1, 2])
    assert sc == [[50, 0], [99, 99], [100, 100], [25, 67]]
    assert total == [50, -1, 300, 159]
    assert (ties, processed, found) == ([2], 4, 3)


def test_finalize_stops_at_num_to_find():
    # The 2nd feasible row is position 2: rows 0..2 processed, row 3 keeps its raw scores.
    sc, total, ties, processed, found = finalize_both([0, 5, 0, 0], RAW, 2, [1, 1], [1, 2],
                                                      [1, 2])
    assert sc == [[50, 0], [99, 99], [100, 100], [5, 1]]
    assert total == [50, -1, 300, -1]
    assert (ties, processed, found) == ([2], 3, 2)
    # num_to_find 1: only row 0, whose raw scores are then the maxima:
    # slot 0 -> 100, slot 1 reversed -> 0; total 100.
    _, total, ties, processed, found = finalize_both([0, 5, 0, 0], RAW, 1, [1, 1], [1, 2],
                                                     [1, 2])
    assert (total, ties, processed, found) == ([100, -1, -1, -1], [0], 1, 1)


def test_finalize_inactive_slots_zero_maxima_and_ties():
    # Slot 0 inactive: neither normalized nor summed.  Slot 1 reversed with
    # every raw 0: all 100; slot 2 plain with max 0: all 0.  All tie.
    sc, total, ties, _, _ = finalize_both([0, 0, 0], [[7, 0, 0]] * 3, 3, [0, 1, 1], [1, 2, 1],
                                          [5, 1, 1])
    assert sc == [[7, 100, 0]] * 3
    assert (total, ties) == ([100, 100, 100], [0, 1, 2])
    # Mode 0 (ImageLocality-like) leaves the raw value and weighs it.
    _, total, ties, _, _ = finalize_both([0, 0], [[40], [60]], 2, [1], [0], [3])
    assert (total, ties) == ([120, 180], [1])


def test_finalize_nothing_feasible():
    sc, total, ties, processed, found = finalize_both([1, 2], [[3], [4]], 1, [1], [1], [1])
    assert (sc, total, ties, processed, found) == ([[3], [4]], [-1, -1], [], 2, 0)


@settings(**SETTINGS)
@given(st.integers(1, 12).flatmap(lambda m: st.tuples(
    st.lists(st.sampled_from([0, 0, 1, 4]), min_size=m, max_size=m),
    st.lists(st.lists(st.integers(0, 150), min_size=4, max_size=4), min_size=m, max_size=m),
    st.integers(0, m + 1),
    st.lists(st.booleans(), min_size=4, max_size=4),
    st.lists(st.integers(0, 2), min_size=4, max_size=4),
    st.lists(st.integers(0, 5), min_size=4, max_size=4))))
def test_finalize_numpy_equals_numba_random(args):
    reasons, raw, num_to_find, active, norm, weights = args
    _, total, ties, processed, found = finalize_both(reasons, raw, num_to_find, active, norm,
                                                     weights)
    feasible = [j for j, r in enumerate(reasons) if r == 0]
    if 0 < num_to_find <= len(feasible):
        assert (processed, found) == (feasible[num_to_find - 1] + 1, num_to_find)
    else:
        assert (processed, found) == (len(reasons), len(feasible))
    scored = [j for j in feasible if j < processed]
    assert [j for j, t in enumerate(total) if t >= 0] == scored
    if scored:
        assert ties == [j for j in scored if total[j] == max(total)]


# ---------------------------------------------------------------------------
# Random clusters: NumPy raw scores == Numba core == the oracle's Score
# ---------------------------------------------------------------------------

RESOURCES = ("cpu", "memory", "ephemeral-storage", ST.GPU)


@st.composite
def score_case(draw):
    objs = draw(ST.clusters(2, 8))
    names = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    pod = draw(ST.pods(names))
    fit_args = draw(ST.fit_args())
    bal = draw(st.none() | st.lists(st.sampled_from(RESOURCES), min_size=1, max_size=4,
                                    unique=True))
    return objs, pod, fit_args, bal


STRATEGY = {"LeastAllocated": L.STRATEGY_LEAST, "MostAllocated": L.STRATEGY_MOST,
            "RequestedToCapacityRatio": L.STRATEGY_RATIO}


def _options(fit_args, bal):
    ss = fit_args.get("scoringStrategy") or {}
    opts = {"filter_flags": 0, "score_flags": ALL_SCORES,
                "fit_strategy": STRATEGY[ss.get("type", "LeastAllocated")]}
    if ss.get("resources"):
        opts["fit_resources"] = tuple((r["name"], r["weight"]) for r in ss["resources"])
    shape = (ss.get("requestedToCapacityRatio") or {}).get("shape")
    if shape:
        opts["shape"] = tuple((p["utilization"], p["score"]) for p in shape)
    if bal:
        opts["balanced_resources"] = tuple((r, 1) for r in bal)
    return opts


@settings(**SETTINGS)
@given(score_case())
def test_random_raw_scores_numpy_numba_oracle(case):
    objs, pod, fit_args, bal = case
    try:
        O.plugin_args("NodeResourcesFit", fit_args)
    except O.OracleConfigError:
        assume(False)
    state = state_of(objs)
    q = compiled(state, pod, **_options(fit_args, bal))
    c = state.columns()
    rows = np.arange(c.allocatable.shape[0], dtype=np.int64)
    raw = np.zeros((rows.shape[0], 5), np.int64)
    SC.raw_scores(c, rows, q, raw, c.valid[rows], xp=np)
    reasons, core_raw = core_fused(c, rows, q)
    assert not reasons.any()                  # no filter enabled: every node is scored
    np.testing.assert_array_equal(raw, core_raw)

    nodes, bound = O.split_objects(objs)
    args = {"NodeResourcesFit": O.plugin_args("NodeResourcesFit", fit_args),
            "NodeResourcesBalancedAllocation": O.plugin_args(
                "NodeResourcesBalancedAllocation",
                {"resources": [{"name": r, "weight": 1} for r in bal]} if bal else None)}
    rows_by_name = node_rows(state, objs)
    for plugin, slot in (("NodeResourcesFit", L.S_FIT),
                         ("NodeResourcesBalancedAllocation", L.S_BALANCED),
                         ("TaintToleration", L.S_TAINT), ("NodeAffinity", L.S_NODE_AFFINITY),
                         ("ImageLocality", L.S_IMAGE)):
        for node in nodes:
            name = node["metadata"]["name"]
            ctx = {"pods_on_node": bound[name], "all_nodes": nodes,
                   "args": args.get(plugin, {})}
            want = O.SCORES[plugin](pod, node, ctx)
            assert raw[rows_by_name[name], slot] == want, (plugin, name)


def test_default_weights_and_norm_modes_match_the_oracle_profile():
    # The kernel-side slot setup used by the fused tests mirrors the default
    # profile: TaintToleration reversed, NodeAffinity plain, weights 3/2/1.
    w = ST.DEFAULT_PROFILE["scores"]
    assert list(DEFAULT_WEIGHTS) == [w["NodeResourcesFit"], w["NodeResourcesBalancedAllocation"],
                                     w["TaintToleration"], w["NodeAffinity"], w["ImageLocality"]]
    assert O.NORMALIZE_REVERSE == {"TaintToleration": True, "NodeAffinity": False}
    assert list(DEFAULT_NORM) == [0, 0, 2, 1, 0]


@pytest.mark.parametrize("n", [1, 3])
def test_finalize_all_rows_equal(n):
    _, total, ties, processed, found = finalize_both([0] * n, [[5, 5]] * n, n, [1, 1], [1, 2],
                                                     [1, 1])
    # Each slot's maximum is 5: plain 100, reversed 0.
    assert total == [100] * n and ties == list(range(n)) and (processed, found) == (n, n)
