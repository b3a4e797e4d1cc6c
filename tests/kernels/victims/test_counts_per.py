"""kernels/victims/_counts_cuda.pack_per under the CUDA simulator: the
per-preemptor buffer the search on counts reads through its header, packed
from the scalars and parts as one byte join with the header kept by the
parts' shapes, equal to the buffer laid out by hand (the header a part at
a time, then each part flat)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda

from tensorsched.kernels.victims import _counts_cuda as VCC

pytestmark = [pytest.mark.cudasim, needs_cuda]


def _by_hand(VCC, scalars, parts) -> list:
    """The buffer as the module doc lays it out, one value at a time."""
    out = [int(v) for v in scalars]
    at = len(VCC.PER_SCALARS) + 3 * len(VCC.PER_PARTS)
    flat = []
    for a in parts:
        a = np.asarray(a)
        rows, cols = (1, a.shape[0]) if a.ndim == 1 else a.shape
        out += [at, rows, cols]
        at += rows * cols
        flat += [int(v) for v in a.reshape(-1)]
    return out + flat


_SHAPES = st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(0, 3), st.integers(1, 9))


@settings(max_examples=60, deadline=None)
@given(_SHAPES, st.data())
def test_pack_per_lays_out_the_buffer_as_by_hand(dims, data):
    k, n_spread, n_ia, n_cls = dims
    ints = st.integers(-2**40, 2**40)

    def arr(*shape, dtype=np.int64):
        size = int(np.prod(shape))
        vals = data.draw(st.lists(ints, min_size=size, max_size=size))
        return np.array(vals, np.int64).reshape(shape).astype(dtype)
    parts = (arr(k), arr(k), arr(n_ia), arr(n_ia), arr(n_spread + n_ia, n_cls),
             arr(n_spread, 5))
    if data.draw(st.booleans()):         # a transposed (not C-contiguous) 2-D part
        parts = parts[:4] + (np.ascontiguousarray(parts[4].T).T, parts[5])
    if data.draw(st.booleans()):         # bools and int32 among the parts
        parts = (parts[0].astype(np.int32),) + parts[1:4] + (parts[4] != 0, parts[5])
    scalars = (n_spread, data.draw(st.booleans()), np.bool_(data.draw(st.booleans())),
               False, True, np.int64(data.draw(st.integers(0, 10**6))))
    got = VCC.pack_per(scalars, parts)
    assert got.dtype == np.int64 and got.flags.writeable
    assert got.tolist() == _by_hand(VCC, scalars, parts)


def test_the_header_is_kept_by_the_parts_shapes():
    parts = (np.array([0, 1]), np.array([5, 6]), np.zeros(0, np.int64), np.zeros(0, np.int64),
             np.ones((1, 7), np.int64), np.arange(5, dtype=np.int64).reshape(1, 5))
    VCC.pack_per((1, 0, 0, 0, 1, 3), parts)
    built = VCC.COUNTERS["per_layouts"]
    other = (parts[0], parts[1] + 1) + parts[2:4] + (parts[4] * 0, parts[5] + 2)
    got = VCC.pack_per((1, 0, 0, 1, 0, 9), other)
    assert VCC.COUNTERS["per_layouts"] == built          # the same shapes: kept
    assert got.tolist() == _by_hand(VCC, (1, 0, 0, 1, 0, 9), other)
    VCC.pack_per((1, 0, 0, 0, 1, 3), parts[:4] + (np.ones((1, 8), np.int64), parts[5]))
    assert VCC.COUNTERS["per_layouts"] == built + 1


def test_bad_parts_name_the_part():
    parts = [np.zeros(1, np.int64)] * 4 + [np.zeros((1, 1), np.int64)] * 2
    with pytest.raises(ValueError, match="part class_match: 1 dimensions, want 2"):
        VCC.pack_per((0,) * 6, parts[:4] + [np.zeros(3, np.int64), parts[5]])
    with pytest.raises(ValueError, match="part fit_want: dtype float64"):
        VCC.pack_per((0,) * 6, [parts[0], np.zeros(1)] + parts[2:])
    with pytest.raises(ValueError, match="6 scalars and 5 parts"):
        VCC.pack_per((0,) * 6, parts[:5])
