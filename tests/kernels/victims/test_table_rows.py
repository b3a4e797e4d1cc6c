"""kernels/victims/table_rows.py: the packing passes of the device tables'
row uploads give, row after row, the node row then its values, as the
NumPy concatenation of the same rows does (the scatter kernels unpack
that layout)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.kernels.victims import table_rows as TR


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans())
def test_flat_and_index_rows_pack_as_concatenated(n, w, seed, strided):
    """``pack_flat_rows`` over a 2-D table (C-contiguous or a strided
    view) and ``pack_index_rows`` over the index table's four arrays:
    the packed prefix equals [row, its values...] per row, the returned
    width is the row's, the rest of the buffer untouched."""
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
    table = rng.integers(-5, 50, (n, 2 * w if strided else w)).astype(np.int64)
    if strided:
        table = table[:, ::2]
    out = np.full(rows.shape[0] * (1 + w) + 3, -7, np.int64)
    width = TR.host.pack_flat_rows(rows, table, out)
    want = np.concatenate([rows[:, None], table[rows]], axis=1).reshape(-1)
    assert width == 1 + w and out[:want.shape[0]].tolist() == want.tolist()
    assert (out[want.shape[0]:] == -7).all()
    c = w
    order = rng.integers(0, c, (n, c)).astype(np.int64)
    cls = rng.integers(-1, 9, (n, c)).astype(np.int64)
    dying = rng.random((n, c)) < 0.3
    alike = rng.integers(0, c + 1, n).astype(np.int64)
    out = np.full(rows.shape[0] * (2 + 3 * c) + 3, -7, np.int64)
    width = TR.host.pack_index_rows(rows, order, cls, dying, alike, out)
    want = np.concatenate([rows[:, None], order[rows], cls[rows], dying[rows].astype(np.int64),
                           alike[rows][:, None]], axis=1).reshape(-1)
    assert width == 2 + 3 * c and out[:want.shape[0]].tolist() == want.tolist()
    assert (out[want.shape[0]:] == -7).all()
