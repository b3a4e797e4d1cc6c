"""The summation tree of ``numpy.sum`` over a float64 vector of ``n``
elements (its pairwise summation: blocks of at most 128 summed with eight
interleaved accumulators, halves split at a multiple of eight), as flat
arrays a kernel walks without recursion.

A kernel keeps one value per tree node: after element i changes, the leaf
``leaf_of[i]`` is summed again and every inner node after it in post order
is re-added, giving the bits ``numpy.sum`` gives for the whole vector.
"""

from __future__ import annotations

import numpy as np

BLOCK = 128     # numpy's PW_BLOCKSIZE
LANES = 8       # its unrolled accumulators


def pairwise_tree(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lo, length, left, right, leaf_of) for a vector of ``n`` >= 0
    elements: tree nodes [T] int64 in post order (the root last; a leaf
    has left = right = -1 and covers ``lo .. lo + length``; an inner node
    sums its two children, left first), ``leaf_of`` [n] the leaf holding
    each element.  ``n`` = 0: one empty leaf."""
    if n < 0:
        raise ValueError(f"a vector of {n} elements")
    lo, length, left, right = [], [], [], []
    leaf_of = np.zeros(n, np.int64)

    def build(a: int, m: int) -> int:
        if m <= BLOCK:
            lo.append(a)
            length.append(m)
            left.append(-1)
            right.append(-1)
            leaf_of[a:a + m] = len(lo) - 1
            return len(lo) - 1
        h = m // 2
        h -= h % LANES
        lft = build(a, h)
        rgt = build(a + h, m - h)
        lo.append(a)
        length.append(m)
        left.append(lft)
        right.append(rgt)
        return len(lo) - 1

    build(0, n)
    as64 = lambda v: np.asarray(v, np.int64)  # noqa: E731
    return as64(lo), as64(length), as64(left), as64(right), leaf_of
