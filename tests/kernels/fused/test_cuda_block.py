"""The run kernel's block reductions (warp shuffles, then one value per
warp, then every warp): under Numba's CUDA simulator (4-thread warps there)
against NumPy, on blocks of several warps and values of both signs."""

import numpy as np
import pytest
from numba import cuda, int32, int64
from support.backends import cudasim_enabled, needs_cuda

from tensorsched.kernels.fused import _cuda_block as CB

pytestmark = [pytest.mark.cudasim, needs_cuda]


@cuda.jit
def reduce_kernel(vals, slot_vals, out, slots_out, before_out):
    t = cuda.threadIdx.x
    n_warps = cuda.blockDim.x // CB.WARP
    wbuf = cuda.shared.array(CB.MAX_WARPS, int64)
    wbuf2 = cuda.shared.array((2, CB.MAX_WARPS), int64)
    wcount = cuda.shared.array(CB.MAX_WARPS, int32)
    wslots = cuda.shared.array((4, CB.MAX_WARPS), int64)
    local = cuda.local.array(4, int64)
    v = vals[t]
    top = CB.block_max(v, wbuf, n_warps)
    lo, hi = CB.block_min_max(v, v, wbuf2, n_warps)
    before, total = CB.block_scan32(abs(v) % 5, wcount, n_warps)
    for s in range(4):
        local[s] = slot_vals[t, s]
    CB.block_max_slots(local, 3, wslots, n_warps)     # the first three slots only
    wm = CB.warp_max_shfl(v)
    wn = CB.warp_min_shfl(v)
    ws = CB.warp_inclusive_sum32_shfl(abs(v) % 5)
    out[t, 0] = top
    out[t, 1] = lo
    out[t, 2] = hi
    out[t, 3] = total
    out[t, 4] = wm
    out[t, 5] = wn
    out[t, 6] = ws
    before_out[t] = before
    for s in range(4):
        slots_out[t, s] = local[s]


@pytest.mark.parametrize("seed", [0, 1])
def test_block_reductions_equal_numpy(seed):
    kernel = reduce_kernel
    threads = 4 * CB.WARP if cudasim_enabled() else 256
    rng = np.random.default_rng(seed)
    vals = rng.integers(-10**12, 10**12, threads).astype(np.int64)
    slot_vals = rng.integers(0, 1000, (threads, 4)).astype(np.int64)
    out = np.zeros((threads, 7), np.int64)
    slots_out = np.zeros((threads, 4), np.int64)
    before = np.zeros(threads, np.int64)
    kernel[1, threads](vals, slot_vals, out, slots_out, before)
    counts = np.abs(vals) % 5
    assert (out[:, 0] == vals.max()).all()
    assert (out[:, 1] == vals.min()).all() and (out[:, 2] == vals.max()).all()
    assert (out[:, 3] == counts.sum()).all()
    assert np.array_equal(before, np.cumsum(counts) - counts)      # exclusive, thread order
    warps = vals.reshape(-1, CB.WARP)
    assert np.array_equal(out[:, 4], np.repeat(warps.max(axis=1), CB.WARP))
    assert np.array_equal(out[:, 5], np.repeat(warps.min(axis=1), CB.WARP))
    assert np.array_equal(out[:, 6], np.cumsum(counts.reshape(-1, CB.WARP), axis=1).ravel())
    assert (slots_out[:, :3] == slot_vals[:, :3].max(axis=0)).all()
    assert np.array_equal(slots_out[:, 3], slot_vals[:, 3])          # slot 3 left alone


@cuda.jit
def argmax_kernel(keys, rows, out):
    n_warps = cuda.blockDim.x // CB.WARP
    wbuf2 = cuda.shared.array((2, CB.MAX_WARPS), int64)
    t = cuda.threadIdx.x
    key, row = CB.block_argmax(keys[t], rows[t], wbuf2, n_warps)
    out[t, 0] = key
    out[t, 1] = row


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_block_argmax_is_the_largest_key_then_its_lowest_row(seed):
    """The pair reduction answers what a block maximum and then a block
    minimum over the threads holding it would: few distinct keys (so the
    top is shared by several threads, in several warps), rows shuffled,
    -1 keys (no feasible row) among them."""
    threads = 4 * CB.WARP if cudasim_enabled() else 256
    rng = np.random.default_rng(seed)
    keys = rng.integers(-1, 3, threads).astype(np.int64)
    rows = rng.permutation(threads * 3)[:threads].astype(np.int64)
    out = np.zeros((threads, 2), np.int64)
    argmax_kernel[1, threads](keys, rows, out)
    top = keys.max()
    assert (out[:, 0] == top).all()
    assert (out[:, 1] == rows[keys == top].min()).all()
