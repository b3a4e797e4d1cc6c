"""How many bytes of device memory a batched launch may take: the budget
the cuda engines (``cuda``, ``local_cuda``, ``local_trace_cuda``) cut their
clusters or runs into chunks by."""

from __future__ import annotations

from numba import cuda

from tensorsched.kernels._deps import CUDA_SIMULATOR

SIMULATOR_BUDGET = 1 << 30      # bytes: the simulator has no free memory to ask


def device_budget(memory_fraction: float) -> int:
    """``memory_fraction`` of the device's free memory, in bytes
    (``SIMULATOR_BUDGET`` under Numba's CUDA simulator)."""
    if CUDA_SIMULATOR:
        return SIMULATOR_BUDGET
    free, _total = cuda.current_context().get_memory_info()
    return int(free * memory_fraction)
