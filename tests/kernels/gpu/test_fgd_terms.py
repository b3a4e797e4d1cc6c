"""FGD's scores from kept terms equal ``share.score_nodes`` recomputing
every node, on random nodes, typical tables in any column order, and rows
changed between calls; numpy = numba."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.kernels.gpu import fgd_terms as KFT
from tensorsched.kernels.gpu import share as K

G = 4
MILLIS = [0, 100, 250, 500, 999, 1000]


def nodes(draw, n):
    count = np.array(draw(st.lists(st.integers(0, G), min_size=n, max_size=n)), np.int64)
    model = np.where(count > 0, np.array(draw(st.lists(st.integers(0, 1), min_size=n,
                                                       max_size=n)), np.int64), -1)
    left = np.array(draw(st.lists(st.lists(st.sampled_from([0, 100, 250, 600, 750, 1000]),
                                           min_size=G, max_size=G), min_size=n, max_size=n)),
                    np.int64)
    left[np.arange(G)[None, :] >= count[:, None]] = 0
    cpu = np.array(draw(st.lists(st.sampled_from([0, 1000, 4000, 16000]), min_size=n,
                                 max_size=n)), np.int64)
    return count, model, left, cpu


@st.composite
def cases(draw):
    n = draw(st.integers(1, 8))
    cols = draw(st.integers(1, 6))
    tp = tuple(np.array(draw(st.lists(st.sampled_from(v), min_size=cols, max_size=cols)),
                        np.int64)
               for v in ([0, 2000, 8000], [1, 2, 4], MILLIS, [0, 1, 2, 3]))
    # one pod shape mostly (its terms kept from step to step), sometimes two
    shapes = [(draw(st.sampled_from([100, 2000])), draw(st.sampled_from([0, 1, 2])),
               draw(st.sampled_from(MILLIS)), draw(st.sampled_from([0, 1, 2, 3])))
              for _ in range(2)]
    steps = []
    # columns known at each step, growing: a shape new to the table
    known = sorted(draw(st.lists(st.integers(1, cols), min_size=1, max_size=4)))
    for c in known:
        p = draw(st.integers(1, c))
        order = np.array(draw(st.permutations(range(c)))[:p], np.int64)
        freq = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=p, max_size=p)))
        shape = shapes[draw(st.sampled_from([0, 0, 0, 1]))]
        steps.append((nodes(draw, n), c, order, freq / freq.sum(), shape,
                      draw(st.lists(st.integers(0, n - 1), max_size=n, unique=True))))
    return n, tp, steps


def full(node, tp, order, freq, shape):
    count, model, left, cpu = node
    n = count.shape[0]
    cpu_nz, num, milli, mask = shape
    ts = tuple(a[order] for a in tp)
    out = K.score_nodes(K.P_FGD, count, model, left, cpu, np.zeros(n, np.int64),
                        np.zeros((n, 2), np.int64), 0, cpu_nz, 0, num, milli, mask, *ts, freq,
                        np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64),
                        np.zeros(n, np.int64), np.empty(n, np.int64))
    return out


@settings(max_examples=60, deadline=None)
@given(case=cases())
def test_kept_terms_equal_the_full_recompute(case):
    n, tp, steps = case
    kept = {}
    ver = np.zeros(n, np.int64)
    prev = None
    for node, n_cols, order, freq, shape, changed in steps:
        if prev is not None:
            # rows not listed keep their previous state (and version)
            keep = np.setdiff1d(np.arange(n), changed)
            for a, b in zip(node, prev):
                a[keep] = b[keep]
            ver[changed] += 1
        prev = node
        count, model, left, cpu = node
        alloc = np.stack([cpu, np.zeros(n, np.int64)], axis=1)
        req = np.zeros_like(alloc)
        want = full(node, tp, order, freq, shape)
        for backend, kernel in (("numpy", KFT.score_rows_np), ("numba", KFT.score_rows)):
            got = kept.get((backend, shape))
            if got is None:
                got = kept[(backend, shape)] = (
                    np.zeros((n, KFT.width(G), tp[0].shape[0]), np.int32),
                    np.full(n, -1, np.int64), np.zeros(n, np.int64))
            rows = np.arange(n, dtype=np.int64)
            s = kernel(rows, count, model, left, alloc, req, ver, *shape, *tp, n_cols,
                       order, freq, *got)
            np.testing.assert_array_equal(s, want, err_msg=backend)
            sub = rows[::2].copy()
            np.testing.assert_array_equal(
                kernel(sub, count, model, left, alloc, req, ver, *shape, *tp, n_cols,
                       order, freq, *got), want[sub], err_msg=backend)
