"""Random cycles over a row cache and what the numba backend's finalize
answers for them (``finalize_rows``, then the tie rule among its ties): the
reference the cycle pick (host twin and device kernel) is held to."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tensorsched.kernels.fused import _numba as FN
from tensorsched.kernels.fused._core import NORM_MINMAX, RES_PODS
from tensorsched.kernels.fused.ties import pick_tied, seed_mix


@st.composite
def cycles(draw, max_rows=40):
    """(rows, start, reasons_by_row, raw_by_row, num_to_find, active, norm,
    weights, mix, requested): a cache of n rows, the evaluated rows a
    sorted subset, infeasible rows, every normalization mode (min-max
    slots with negative raw scores), few distinct scores and pod counts
    (ties), num_to_find below, at and above the rows."""
    n = draw(st.integers(1, max_rows))
    g = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows = np.arange(n, dtype=np.int64)
    if draw(st.booleans()):
        keep = g.random(n) < 0.8
        keep[g.integers(0, n)] = True
        rows = rows[keep]
    m = rows.shape[0]
    start = draw(st.integers(0, m - 1))
    num_to_find = draw(st.sampled_from([1, max(1, m // 3), max(1, m // 2), m, m + 3]))
    s = draw(st.integers(1, 6))
    active = g.random(s) < 0.8
    norm = g.integers(0, 4, s).astype(np.int64)
    weights = g.integers(0, 4, s).astype(np.int64)
    reasons = np.where(g.random(n) < draw(st.sampled_from([0.0, 0.3, 0.9, 1.0])),
                       g.integers(1, 1 << 20, n), 0).astype(np.int64)
    spread = draw(st.sampled_from([2, 5, 1000]))
    raw = g.integers(0, spread, (n, s)).astype(np.int64)
    raw -= np.where(norm == NORM_MINMAX, spread // 2, 0)   # min-max raw may be negative
    requested = np.zeros((n, 4), np.int64)
    requested[:, RES_PODS] = np.where(g.random(n) < 0.1, 2047 + g.integers(0, 3, n),
                                      g.integers(0, 3, n))
    mix = seed_mix(draw(st.integers(0, 2**31)))
    return rows, start, reasons, raw, num_to_find, active, norm, weights, mix, requested


def numba_answer(rows, start, reasons, raw, num_to_find, active, norm, weights, mix,
                 requested):
    """(picked row or -1, processed, found, its position or -1) from the
    numba backend's ``finalize_rows`` and the tie rule among its ties."""
    m = rows.shape[0]
    s = raw.shape[1]
    total = np.zeros(m, np.int64)
    ties = np.zeros(m, np.int64)
    n_ties, processed, found = FN.finalize_rows(
        rows, start, reasons, raw, num_to_find, active, norm, weights, False,
        np.zeros((m, s), np.int64), total, ties, np.zeros(2 * s, np.int64))
    if n_ties == 0:
        return -1, processed, found, -1
    pos = ties[:n_ties]
    tied = np.concatenate((rows[start:], rows[:start]))[pos]
    k = pick_tied(mix, tied, requested[tied, RES_PODS])
    return int(tied[k]), processed, found, int(pos[k])
