"""``kernels.batch.device_memory``: the byte budget the cuda engines chunk
by (under the simulator a fixed budget; on a device a fraction of the
free memory)."""

from __future__ import annotations

import pytest
from numba import cuda

from tensorsched.kernels._deps import CUDA_SIMULATOR
from tensorsched.kernels.batch import device_memory as DM

from support.backends import needs_cuda

pytestmark = [pytest.mark.cudasim, needs_cuda]


def test_budget_is_the_simulators_or_a_fraction_of_free_memory():
    if CUDA_SIMULATOR:
        assert DM.device_budget(0.5) == DM.SIMULATOR_BUDGET == 1 << 30
    else:
        free, _total = cuda.current_context().get_memory_info()
        half = DM.device_budget(0.5)
        assert 0 < half <= free and DM.device_budget(0.25) <= half
