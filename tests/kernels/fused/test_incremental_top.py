"""The numba backend's incremental selection (a segment tree of tie keys
over node rows) gives the same top-total ties as the full serial finalize,
and the tie rule's row at its top, under random
updates that move and keep the normalization maxima (and a min-max slot's
minimum: InterPodAffinity's normalization, ``NORM_MINMAX``, whose scores
are those of the plugin's own ``minmax_normalize``)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.kernels import domains as D
from tensorsched.kernels.fused import _numba as FN
from tensorsched.kernels.fused._core import NORM_MINMAX, RES_PODS
from tensorsched.kernels.fused.ties import TIE_RANK_BITS, pick_tied, seed_mix


def _full(reasons, raw, active, norm, weights, start):
    m = reasons.shape[0]
    rows = np.arange(m, dtype=np.int64)
    scores = np.zeros_like(raw)
    total = np.zeros(m, np.int64)
    ties = np.zeros(m, np.int64)
    hi = np.zeros(2 * raw.shape[1], np.int64)
    n, processed, found = FN.finalize_rows(rows, start, reasons, raw, m, active, norm, weights,
                                          False, scores, total, ties, hi)
    return [int(rows[(start + int(j)) % m]) for j in ties[:n]], found


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 40), st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=12))
def test_key_tree_matches_full_finalize_and_the_tie_rule(m, seed, steps):
    """The key tree's top rows are the full finalize's ties, and its top row
    is the one the tie rule takes among them (``ties.pick_tied``), as rows'
    scores and pod counts move."""
    rng = np.random.default_rng(seed)
    slots = 4
    active = rng.integers(0, 2, slots).astype(np.bool_)
    norm = rng.integers(0, 4, slots).astype(np.int64)       # 3: min-max
    weights = rng.integers(1, 4, slots).astype(np.int64)
    reasons = np.where(rng.random(m) < 0.3, 1, 0).astype(np.int64)
    requested = np.zeros((m, 4), np.int64)
    requested[:, RES_PODS] = rng.integers(0, 3, m)
    mix = np.uint64(seed_mix(seed))

    def draw_raw(g, shape):
        # a min-max slot's raw scores may be negative (anti-affinity weights)
        return (g.integers(0, 4, shape) - np.where(norm == NORM_MINMAX, 2, 0)).astype(np.int64)
    raw = draw_raw(rng, (m, slots))
    size = 1
    while size < m:
        size *= 2
    total = np.zeros(m, np.int64)
    hi = np.zeros(2 * slots, np.int64)
    hi_cnt = np.zeros(2 * slots, np.int64)
    tkey = np.zeros(2 * size, np.int64)
    feasible = FN.rebuild_keys(m, reasons, raw, active, norm, weights, hi, hi_cnt, total,
                               mix, requested, tkey, size)
    for step in [None] + steps:
        if step is not None:
            srng = np.random.default_rng(step)
            k = int(srng.integers(1, m + 1))
            dirty = np.sort(srng.choice(m, size=k, replace=False)).astype(np.int64)
            old_r = np.empty(k, np.int64)
            old_raw = np.empty((k, slots), np.int64)
            FN.snapshot_rows(dirty, k, reasons, raw, old_r, old_raw)
            reasons[dirty] = np.where(srng.random(k) < 0.3, 1, 0)
            raw[dirty] = draw_raw(srng, (k, slots))
            requested[dirty, RES_PODS] += srng.integers(0, 2, k)
            delta = FN.update_keys(dirty, k, old_r, old_raw, reasons, raw, active, norm,
                                   weights, hi, hi_cnt, total, mix, requested, tkey, size)
            if delta == -1000000000:
                feasible = FN.rebuild_keys(m, reasons, raw, active, norm, weights, hi, hi_cnt,
                                           total, mix, requested, tkey, size)
            else:
                feasible += delta
        start = int(rng.integers(0, m))
        want, found = _full(reasons, raw, active, norm, weights, start)
        assert feasible == found
        if not want:
            assert tkey[1] == -1
            continue
        top = int(tkey[1])
        assert sorted(want) == np.flatnonzero(total == top >> TIE_RANK_BITS).tolist()
        rows = np.array(want, np.int64)
        pick = int(rows[pick_tied(int(mix), rows, requested[rows, RES_PODS])])
        assert FN.key_top_row(tkey, size) == pick


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(1, 30), st.integers(0, 10_000), st.integers(0, 31))
def test_finalize_rows_writes_every_score_as_the_positional_finalize(m, seed, to_find):
    """``finalize_rows`` over the per-row cache leaves out_scores exactly as
    ``gather_rows`` + ``finalize_scores`` do (inactive slots, unscored and
    infeasible rows included), whatever the reused buffer held before."""
    rng = np.random.default_rng(seed)
    slots = 4
    active = rng.integers(0, 2, slots).astype(np.bool_)
    norm = rng.integers(0, 3, slots).astype(np.int64)
    weights = rng.integers(1, 4, slots).astype(np.int64)
    reasons = np.where(rng.random(m) < 0.3, 1, 0).astype(np.int64)
    raw = rng.integers(0, 4, (m, slots)).astype(np.int64)
    rows = np.sort(rng.choice(m, size=m, replace=False)).astype(np.int64)
    start = int(rng.integers(0, m))
    want_r = np.empty(m, np.int64)
    want_s = np.empty((m, slots), np.int64)
    FN.gather_rows(rows, start, reasons, raw, want_r, want_s)
    want_t = np.zeros(m, np.int64)
    ties = np.zeros(m, np.int64)
    want_n, want_p, want_f = FN.finalize(want_r, want_s, want_t, to_find, active, norm,
                                        weights, ties)
    want_ties = ties[:want_n].copy()
    got_s = np.full((m, slots), 12345, np.int64)        # an earlier cycle's leftovers
    got_t = np.full(m, 777, np.int64)
    hi = np.zeros(slots, np.int64)
    n, processed, found = FN.finalize_rows(rows, start, reasons, raw, to_find, active, norm,
                                          weights, True, got_s, got_t, ties, hi)
    assert (n, processed, found) == (want_n, want_p, want_f)
    assert np.array_equal(ties[:n], want_ties)
    assert np.array_equal(got_t, want_t)
    assert np.array_equal(got_s, want_s)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(1, 30), st.integers(0, 10_000), st.integers(1, 31))
def test_a_minmax_slot_scores_as_the_plugins_normalize(m, seed, to_find):
    """A slot in NORM_MINMAX: over the rows the scan scores (feasible, up
    to the ``to_find``-th), the scores InterPodAffinity's own
    ``minmax_normalize`` gives (float64 ratio, truncated), weighted."""
    rng = np.random.default_rng(seed)
    active = np.array([True, True])
    norm = np.array([1, NORM_MINMAX], np.int64)
    weights = np.array([1, int(rng.integers(1, 5))], np.int64)
    reasons = np.where(rng.random(m) < 0.3, 1, 0).astype(np.int64)
    raw = np.stack([rng.integers(0, 50, m), rng.integers(-700, 700, m)], axis=1)
    raw = raw.astype(np.int64)
    rows = np.arange(m, dtype=np.int64)
    start = int(rng.integers(0, m))
    out_s = np.zeros((m, 2), np.int64)
    out_t = np.zeros(m, np.int64)
    ties = np.zeros(m, np.int64)
    hi = np.zeros(4, np.int64)
    n, processed, found = FN.finalize_rows(rows, start, reasons, raw, to_find, active, norm,
                                          weights, True, out_s, out_t, ties, hi)
    order = (start + np.arange(m)) % m
    scored = np.zeros(m, np.bool_)
    D.host.scored_rows(reasons[order], to_find, scored)
    want = D.minmax_normalize_host(raw[order, 1], scored)
    assert np.array_equal(np.where(scored, out_s[:, 1], 0), want)
    base = np.where(scored, out_s[:, 0], 0)
    assert np.array_equal(np.where(scored, out_t, -1), np.where(scored, base + want * weights[1],
                                                                -1))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(values=st.lists(st.integers(-1, 3), min_size=1, max_size=40),
       sets=st.lists(st.tuples(st.integers(0, 39), st.integers(-1, 3)), max_size=10))
def test_key_tree_top_is_the_lowest_row_of_the_largest_key(values, sets):
    """``key_set`` keeps every inner node the max of its leaves (its early
    stop included) and ``key_top_row`` is the lowest row at the max."""
    n = len(values)
    size = 1 << max(n - 1, 1).bit_length()
    vals = np.array(values, np.int64)
    tkey = np.full(2 * size, -1, np.int64)
    tkey[size:size + n] = vals
    FN.core["key_pull_all"](tkey, size)
    for i, v in sets:
        if i < n:
            vals[i] = v
            FN.core["key_set"](tkey, size, i, v)
    for p in range(1, size):
        assert tkey[p] == max(tkey[2 * p], tkey[2 * p + 1])
    assert tkey[1] == vals.max()
    assert FN.key_top_row(tkey, size) == int(np.flatnonzero(vals == vals.max())[0])
