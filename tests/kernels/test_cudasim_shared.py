"""Under Numba's CUDA simulator every thread of a block gets the same
shared array from a ``cuda.shared.array`` line, however the threads are
switched (``support.cudasim_shared``; the simulator's own look-up and
insert race at the suite's switch interval)."""
import sys

import numpy as np
import pytest
from numba import cuda, int64
from support.backends import cudasim_enabled, needs_cuda

pytestmark = [pytest.mark.cudasim, needs_cuda]

SEEN = []       # the arrays' ids (the simulator runs the kernel as Python)


@cuda.jit
def _fill(out):
    buf = cuda.shared.array(16, int64)
    SEEN.append(id(buf))
    buf[cuda.threadIdx.x] = cuda.threadIdx.x + 1
    cuda.syncthreads()
    total = 0
    for k in range(16):
        total += buf[k]
    out[cuda.blockIdx.x, cuda.threadIdx.x] = total


def test_every_thread_of_a_block_shares_the_array():
    if not cudasim_enabled():
        pytest.skip("the simulator's allocation only")
    SEEN.clear()
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)         # a switch between almost every bytecode
    try:
        out = np.zeros((8, 16), np.int64)
        _fill[8, 16](out)
    finally:
        sys.setswitchinterval(old)
    assert (out == 136).all()
    assert len(set(SEEN)) <= 8          # one array per block at most
