"""The batched kernels total a vector as ``numpy.sum`` does, bit for bit:
the summation tree walked in full and refreshed after one element
changes."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.kernels.batch.cpu import rules
from tensorsched.kernels.batch.pairwise import BLOCK, pairwise_tree

refresh = rules["tree_refresh"]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 1300), seed=st.integers(0, 2**32 - 1), changes=st.integers(0, 5))
def test_tree_sum_equals_numpy_sum(n, seed, changes):
    rng = np.random.default_rng(seed)
    a = rng.random(n) * 10.0 ** rng.integers(-3, 9, n)
    lo, ln, left, right, leaf_of = pairwise_tree(n)
    vals = np.zeros(lo.shape[0])
    assert refresh(a, -1, lo, ln, left, right, vals) == np.sum(a)
    for _ in range(changes if n else 0):
        i = int(rng.integers(n))
        a[i] = rng.random() * 1e6
        assert refresh(a, leaf_of[i], lo, ln, left, right, vals) == np.sum(a)


def test_tree_shape():
    """Leaves of at most 128 elements covering the vector in order, the
    root last, splits at multiples of eight."""
    for n in (0, 1, 7, 8, 128, 129, 1213, 5000):
        lo, ln, left, right, leaf_of = pairwise_tree(n)
        leaves = left < 0
        assert (ln[leaves] <= BLOCK).all()
        assert ln[-1] == n and lo[-1] == 0
        assert np.array_equal(np.concatenate([np.arange(a, a + m) for a, m in
                                              zip(lo[leaves], ln[leaves])] or [[]]),
                              np.arange(n))
        inner = np.flatnonzero(~leaves)
        assert ((ln[left[inner]] % 8) == 0).all()
        assert (left[inner] < inner).all() and (right[inner] < inner).all()
        assert all(lo[leaf_of[i]] <= i < lo[leaf_of[i]] + ln[leaf_of[i]] for i in range(n))
