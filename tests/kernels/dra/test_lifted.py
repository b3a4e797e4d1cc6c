"""kernels.dra.lifted: exempt cells lifted, the rest of allocatable as it was."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.kernels.dra.lifted import LIFTED, lifted_allocatable

SHIFT = 24


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.data())
def test_only_the_exempt_cells_of_the_rows_are_lifted(n, r, data):
    alloc = np.arange(n * r, dtype=np.int64).reshape(n, r)
    rows = np.array(data.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n)), np.int64)
    masks = [data.draw(st.integers(0, (1 << r) - 1)) for _ in rows]
    exempt = np.array([m << SHIFT for m in masks], np.int64)
    got = lifted_allocatable(alloc, rows, exempt, SHIFT)
    want = alloc.copy()
    for row, m in zip(rows.tolist(), masks):
        for k in range(r):
            if m >> k & 1:
                want[row, k] = LIFTED
    if not any(masks):
        assert got is None
    else:
        assert np.array_equal(got, want)
    assert np.array_equal(alloc, np.arange(n * r, dtype=np.int64).reshape(n, r))


def test_bits_outside_the_resource_mask_lift_nothing():
    alloc = np.ones((2, 3), np.int64)
    # reason bits below the shift (other filters' reasons) are not resources
    assert lifted_allocatable(alloc, np.array([0, 1]), np.array([0b1011, 1 << 3]), SHIFT) is None
