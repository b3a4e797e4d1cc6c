"""The batched CUDA kernels' block reductions (``kernels/batch/warp``):
top with its count and lowest index, and sum/min/max over a block, equal
NumPy's answers on random values (shuffles emulated under the simulator),
ties and the padding of warps past the block's values included."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda, int64
from support.backends import needs_cuda

pytestmark = [pytest.mark.cudasim, needs_cuda]


def _kernels():
    # the simulator swaps a kernel's global ``cuda``: it is imported above
    from tensorsched.kernels.batch import warp as KW

    @cuda.jit
    def reduce(vals, out):
        buf = cuda.shared.array((3, KW.THREADS), int64)
        sh = cuda.shared.array((KW.WARPS, 3), int64)
        tid = cuda.threadIdx.x
        v = vals[tid]
        t, c, r = KW.block_top(v, int64(1), int64(tid), buf, sh)
        s, lo, hi = KW.block_sum_min_max(v, v, v, buf, sh)
        if tid == 0:
            out[0], out[1], out[2] = t, c, r
            out[3], out[4], out[5] = s, lo, hi
    return KW, reduce


@settings(max_examples=8, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=64), st.integers(0, 2**32 - 1))
def test_block_reductions_equal_numpy(values, seed):
    KW, reduce = _kernels()
    rng = np.random.default_rng(seed)
    vals = rng.choice(np.array(values, np.int64), KW.THREADS)
    out = np.zeros(6, np.int64)
    reduce[1, KW.THREADS](vals, out)
    top = vals.max()
    assert list(out) == [top, int((vals == top).sum()), int(np.flatnonzero(vals == top)[0]),
                         vals.sum(), vals.min(), vals.max()]
