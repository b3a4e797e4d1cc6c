"""``support.poison_memory``: under the simulator a device array, a pinned
host array and a kernel's local array hold the poison byte, as a GPU's
uninitialized memory holds what was there before (not zeros); undone,
the simulator's own allocations come back."""

import numpy as np
import pytest
from numba import cuda
from support import poison_memory as PM
from support.backends import cudasim_enabled

pytestmark = [pytest.mark.cudasim,
              pytest.mark.skipif(not cudasim_enabled(), reason="patches the CUDA simulator")]

_POISON_I64 = int(np.frombuffer(bytes([PM.BYTE]) * 8, np.int64)[0])


@cuda.jit
def read_local(out):
    scratch = cuda.local.array(2, np.int64)
    out[0] = scratch[1]


def test_allocations_hold_the_poison_until_undone():
    undo = PM.poison()
    try:
        assert cuda.device_array(3, np.int64).copy_to_host().tolist() == [_POISON_I64] * 3
        assert cuda.device_array_like(np.zeros((2, 2), np.int8)).copy_to_host().tolist() \
            == [[-0x5B, -0x5B], [-0x5B, -0x5B]]
        assert cuda.pinned_array(2, np.int64).tolist() == [_POISON_I64] * 2
        out = cuda.to_device(np.zeros(1, np.int64))
        read_local[1, 1](out)
        assert out.copy_to_host()[0] == _POISON_I64
        assert PM.poison() is not None          # twice: nothing patched twice
    finally:
        undo()
    assert not getattr(cuda.device_array, "poisoned", False)
    assert not getattr(cuda.pinned_array, "poisoned", False)
