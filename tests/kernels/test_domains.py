"""kernels/domains.py: per-domain counting (domain_sums, at_domain, value_in),
PodTopologySpread's minimum and skew test, the normalizations (spread,
InterPodAffinity min-max, Go rounding), and the njit-compiled host kernels
(``domains.host``) against their array forms and hand-checked answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.kernels import domains as D
from tensorsched.kernels import layout as L
from tensorsched.kernels.fused import scores as SC

SETTINGS = {"max_examples": 25, "deadline": None, "derandomize": True,
                "suppress_health_check": list(HealthCheck)}


def a(*x, dt=np.int64):
    return np.array(x, dt)


def b(*x):
    return np.array(x, np.bool_)


# ---------------------------------------------------------------------------
# counting
# ---------------------------------------------------------------------------

def test_domain_sums():
    dom = a(0, 1, -1, 0, 2)
    weights = a(3, 4, 5, 6, 0)
    include = b(True, True, True, False, True)
    sums, present = D.domain_sums(dom, weights, include, 4, xp=np)
    # row 2 lacks the key, row 3 is excluded; domain 2 is present with weight 0.
    assert sums.dtype == np.int64
    assert sums.tolist() == [3, 4, 0, 0]
    assert present.tolist() == [True, True, True, False]
    sums, present = D.domain_sums(dom, weights, np.ones(5, bool), 3, xp=np)
    assert sums.tolist() == [3 + 6, 4, 0] and present.tolist() == [True, True, True]


def test_domain_sums_nothing_included():
    sums, present = D.domain_sums(a(0, 1), a(5, 5), b(False, False), 3, xp=np)
    assert sums.tolist() == [0, 0, 0] and present.tolist() == [False] * 3
    # Zero domains still gives a one-slot table.
    sums, present = D.domain_sums(a(-1), a(5), b(True), 0, xp=np)
    assert sums.tolist() == [0] and present.tolist() == [False]


@settings(**SETTINGS)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(-1, 4), min_size=n, max_size=n),
    st.lists(st.integers(0, 10 ** 6), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n))))
def test_domain_sums_random(case):
    dom, weights, include = case
    sums, present = D.domain_sums(a(*dom), a(*weights), b(*include), 5, xp=np)
    for d in range(5):
        members = [w for x, w, inc in zip(dom, weights, include, strict=True) if inc and x == d]
        assert sums[d] == sum(members)
        assert present[d] == bool(members)


def test_at_domain_and_value_in():
    table = a(10, 20, 30)
    assert D.at_domain(table, a(2, -1, 0), xp=np).tolist() == [30, 0, 10]
    dom = a(0, -1, 2, 1)
    assert D.value_in(dom, a(2, 0), xp=np).tolist() == [True, False, True, False]
    assert D.value_in(dom, a(), xp=np).tolist() == [False] * 4
    # A node lacking the key is in no domain, even when -1 is listed.
    assert D.value_in(dom, a(-1), xp=np).tolist() == [False] * 4


# ---------------------------------------------------------------------------
# PodTopologySpread: minimum and skew
# ---------------------------------------------------------------------------

def test_min_match():
    sums, present = a(3, 4, 0, 0), b(True, True, True, False)
    assert D.min_match(sums, present, 1) == 0          # domain 2 is present with 0
    assert D.min_match(a(3, 4, 7, 9), b(True, True, False, False), 1) == 3
    assert D.min_match(a(3, 4, 7, 9), b(True, True, False, False), 2) == 3
    # Fewer present domains than minDomains: the global minimum is 0.
    assert D.min_match(a(3, 4, 7, 9), b(True, True, False, False), 3) == 0
    assert D.min_match(a(3), b(False), 0) == 0


def test_spread_skew_fails():
    # matching pods in the node's domain + self - global minimum > maxSkew
    dom, sums = a(0, 1, -1), a(3, 1)
    # row 0: 3 + 1 - 1 = 3 > 2; row 1: 1 + 1 - 1 = 1; row 2 (no key) reads 0: 0.
    assert D.spread_skew_fails(dom, sums, 1, 1, 2, xp=np).tolist() == [True, False, False]
    # self_match 0 and maxSkew 1: 3 - 1 = 2 > 1 still fails; 1 - 1 = 0 does not.
    assert D.spread_skew_fails(dom, sums, 0, 1, 1, xp=np).tolist() == [True, False, False]
    # Exactly maxSkew passes.
    assert D.spread_skew_fails(dom, sums, 1, 1, 3, xp=np).tolist() == [False] * 3


def test_topology_weight():
    assert D.topology_weight(0) == math.log(2)
    assert D.topology_weight(3) == math.log(5)


# ---------------------------------------------------------------------------
# normalizations
# ---------------------------------------------------------------------------

def test_go_round_half_away_from_zero():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, -2.6, 0.0, 7.0], np.float64)
    # Python's round() would give 0, 2, 2, 0, -2 for the first five.
    assert D.go_round(x, xp=np).tolist() == [1, 2, 3, -1, -2, 2, -3, 0, 7]
    assert D.go_round(x, xp=np).dtype == np.int64


def test_spread_normalize():
    raw, counted = a(2, 5, 3, 9), b(True, True, True, False)
    # min 2, max 5: 100 * (5 + 2 - s) // 5 -> 100, 40, 80; not counted -> 0.
    assert D.spread_normalize(raw, counted, xp=np).tolist() == [100, 40, 80, 0]
    # max 0: counted rows 100.
    assert D.spread_normalize(a(0, 0, 4), b(True, True, False), xp=np).tolist() == [100, 100, 0]
    assert D.spread_normalize(a(1, 2), b(False, False), xp=np).tolist() == [0, 0]
    # 100 * (7 + 1 - 2) / 7 = 85.7 -> 85 (integer division)
    assert D.spread_normalize(a(1, 2, 7), b(True, True, True), xp=np).tolist() == \
        [100, 85, 14]


def test_minmax_normalize():
    raw, scored = a(10, 20, 15, 100), b(True, True, True, False)
    # min 10, max 20 over scored rows: 0, 100, 50; unscored 0.
    assert D.minmax_normalize(raw, scored, xp=np).tolist() == [0, 100, 50, 0]
    # 100 * (1/3) = 33.3 -> 33 (truncated); negative raw scores shift.
    assert D.minmax_normalize(a(0, 3, 1), b(True, True, True), xp=np).tolist() == [0, 100, 33]
    assert D.minmax_normalize(a(-5, 5, 0), b(True, True, True), xp=np).tolist() == [0, 100, 50]
    # max == min, or nothing scored: all zero.
    assert D.minmax_normalize(a(4, 4, 9), b(True, True, False), xp=np).tolist() == [0, 0, 0]
    assert D.minmax_normalize(a(4, 5), b(False, False), xp=np).tolist() == [0, 0]


@settings(**SETTINGS)
@given(st.integers(1, 10).flatmap(lambda n: st.tuples(
    st.lists(st.integers(-1000, 1000), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n))))
def test_minmax_normalize_host_equals_array(case):
    raw, scored = a(*case[0]), b(*case[1])
    want = D.minmax_normalize(raw, scored, xp=np)
    assert D.minmax_normalize_host(raw, scored).tolist() == want.tolist()
    assert (want[~scored] == 0).all()
    if scored.any() and raw[scored].max() > raw[scored].min():
        lo, hi = raw[scored].min(), raw[scored].max()
        assert (want[scored & (raw == lo)] == 0).all()
        assert (want[scored & (raw == hi)] == 100).all()
        assert ((want[scored] >= 0) & (want[scored] <= 100)).all()


# ---------------------------------------------------------------------------
# compiled host kernels
# ---------------------------------------------------------------------------

def test_host_domain_rule():
    codes = a(0, 0, 0, 7)
    D.host.domain_rule(codes, a(0, 1, 2, 1), a(5, 1), 2, 1, 2, 3)
    # row 0 lacks the key -> 1; domain 0 holds 5 > 2 -> 2; domain 1 holds 1 -> 3;
    # row 3 already had a code and keeps it.
    assert codes.tolist() == [1, 2, 3, 7]


def test_host_domain_rule_read_only_domains():
    domp1 = a(2, 0)
    domp1.flags.writeable = False
    codes = a(0, 0)
    D.host.domain_rule(codes, domp1, a(0, 9), 8, 5, 6, 4)
    assert codes.tolist() == [6, 5]


def test_host_add_domain_scores():
    out = a(1, 1, 1)
    D.host.add_domain_scores(out, a(0, 1, 2), a(5, 7), 2)
    # row 0 lacks the key; 1 + 2*5; 1 + 2*7
    assert out.tolist() == [1, 11, 15]


def test_host_or_filter_bits():
    inv = int(L.R_INVALID_ROW)
    reasons = a(0, 4, inv, 0)
    D.host.or_filter_bits(reasons, b(False, False, False, True), 1 << 16, inv)
    # The rejected rows gain the bit, except the invalid row; the accepted one is untouched.
    assert reasons.tolist() == [1 << 16, 4 | 1 << 16, inv, 0]


def test_host_put_slot():
    raw = np.full((3, 2), -1, np.int64)
    D.host.put_slot(raw, 1, a(5, 6, 7), a(0, 1, 0))
    assert raw.tolist() == [[-1, 5], [-1, 0], [-1, 7]]


@pytest.mark.parametrize("num_to_find, want", [
    (2, [False, True, True, False, False]),
    (1, [False, True, False, False, False]),
    (3, [False, True, True, False, True]),
    (10, [False, True, True, False, True]),
    (0, [False, True, True, False, True]),           # 0: no limit
])
def test_host_scored_rows(num_to_find, want):
    out = np.zeros(5, np.bool_)
    D.host.scored_rows(a(1, 0, 0, 1, 0), num_to_find, out)
    assert out.tolist() == want


@settings(**SETTINGS)
@given(st.integers(1, 12).flatmap(lambda m: st.tuples(
    st.lists(st.sampled_from([0, 0, 3]), min_size=m, max_size=m), st.integers(1, m + 1))))
def test_host_scored_rows_equals_finalize_scan(case):
    """The host plugins' 'scored' rows are the rows finalize gives a total."""
    reasons, num_to_find = a(*case[0]), case[1]
    out = np.zeros(reasons.shape[0], np.bool_)
    D.host.scored_rows(reasons, num_to_find, out)
    raw = np.zeros((reasons.shape[0], 1), np.int64)
    _, total, _, _, _ = SC.finalize(reasons, raw, num_to_find, b(True), a(0), a(1), xp=np)
    assert out.tolist() == (total >= 0).tolist()


def test_host_unknown_kernel():
    with pytest.raises(AttributeError):
        D.host.no_such_kernel  # noqa: B018
