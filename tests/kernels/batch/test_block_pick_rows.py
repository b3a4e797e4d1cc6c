"""``local_cuda.block_pick_rows`` (the node-event CUDA form's pick over the
live rows, every thread of the block together) answers what the CPU
twin's ``_local_trace.pick_live`` answers (under the simulator): random
answers on more rows than the block has threads, a live subset of them,
a start position anywhere among the live ones, fewer nodes to find than
live ones (the scan window stops at the last one found) or more, every
normalization (none, normalize, reverse, the min-max slot) and the
seeded tie rule among equal totals."""

import numpy as np
import pytest
from numba import cuda, int64
from support.backends import needs_cuda

from tensorsched.kernels.batch.local_cpu import TRACE_NAMESPACE, N_SLOTS, seed_mix

pytestmark = [pytest.mark.cudasim, needs_cuda]


def _case(rng) -> dict:
    n = int(rng.integers(20, 41))          # above the simulator's 16 threads
    live = np.flatnonzero(rng.random(n) < 0.7)
    if live.size == 0:
        live = np.array([0])
    norm = np.concatenate([rng.integers(0, 3, N_SLOTS - 1), [rng.choice([0, 3])]])
    return {
        "n": n, "rows": live.astype(np.int64), "nv": int(live.size),
        "start": int(rng.integers(0, live.size)),
        "to_find": int(rng.integers(1, live.size + 3)),
        "reasons": (rng.random((1, n)) < 0.3).astype(np.int64) * 4,
        # few distinct values: equal totals, the tie rule decides
        "raw": rng.integers(-3, 4, (1, n, N_SLOTS)).astype(np.int64) * 25
        + np.where(norm == 3, 0, 75)[None, None, :],
        "active": rng.random((1, N_SLOTS)) < 0.7, "norm": norm[None, :].astype(np.int64),
        "weights": rng.integers(1, 4, (1, N_SLOTS)).astype(np.int64),
        "used": rng.integers(0, 6, (n, 4)).astype(np.int64),
        "mix": seed_mix(int(rng.integers(0, 2 ** 31))),
    }


def _twin(k: dict) -> tuple:
    n = k["n"]
    positions = np.zeros(n, np.int64)
    positions[:k["nv"]] = k["rows"]
    return TRACE_NAMESPACE["pick_live"](
        0, k["nv"], k["start"], k["reasons"], k["raw"], k["active"], k["norm"], k["weights"],
        k["to_find"], k["mix"], k["used"], positions, np.zeros(n, np.int64),
        np.zeros(n, np.int64), np.zeros(2 * N_SLOTS, np.int64))


def test_block_pick_rows_equals_pick_live():
    # (the kernel modules import only where a device or the simulator is)
    from tensorsched.kernels.batch.local_cuda import THREADS, block_pick_rows
    from tensorsched.kernels.batch.warp import WARPS

    @cuda.jit
    def pick(nv, start, rows, to_find, mix, used, reasons, raw, active, norm, weights, flags,
             out):
        buf = cuda.shared.array((3, THREADS), int64)
        sh = cuda.shared.array((WARPS, 3), int64)
        hi = cuda.shared.array(2 * N_SLOTS, int64)
        i, processed = block_pick_rows(0, nv, start, rows, to_find, mix[0], used, reasons, raw,
                                       active, norm, weights, flags, hi, buf, sh)
        if cuda.threadIdx.x == 0:
            out[0] = i
            out[1] = processed

    rng = np.random.default_rng(7)
    windows = 0
    for _ in range(8):
        k = _case(rng)
        out = np.zeros(2, np.int64)
        pick[1, THREADS](k["nv"], k["start"], k["rows"], k["to_find"],
                         np.array([k["mix"]], np.uint64), k["used"], k["reasons"], k["raw"],
                         k["active"], k["norm"], k["weights"], np.zeros(k["n"], np.int64), out)
        want = _twin(k)
        assert (int(out[0]), int(out[1])) == (int(want[0]), int(want[1])), k
        windows += want[1] < k["nv"]
    assert windows > 0          # some scans stopped at the nodes to find
