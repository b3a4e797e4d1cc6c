"""Uninitialized device memory made visible under Numba's CUDA simulator.

``cuda.device_array``, ``cuda.pinned_array`` and ``cuda.local.array`` give
uninitialized memory on a device: whatever an earlier allocation left.
The simulator allocates them with ``np.empty``, whose large blocks come
zeroed from the operating system, so code that reads before it writes
(a scratch buffer taken as zeros, a counter never reset) passes there and
fails on a GPU.  ``poison()`` makes the simulator's allocations hold
``BYTE`` in every byte instead (int64 0xA5A5...: a large negative number,
an index out of any array; a bool True; a float a small negative one).

As a pytest plugin (``PYTHONPATH=tests pytest -p support.poison_memory -m
cudasim ...``) every test runs with the allocations poisoned; a test that
then fails read memory it had not written.
"""
from __future__ import annotations

import ctypes

import numpy as np

BYTE = 0xA5


def _poisoned(a: np.ndarray) -> np.ndarray:
    """``a`` (a fresh, contiguous allocation) with ``BYTE`` in every byte."""
    if a.nbytes:
        ctypes.memset(a.ctypes.data, BYTE, a.nbytes)
    return a


def _targets():
    """(owner, attribute, wrapper maker) of each allocation patched."""
    from numba import cuda
    from numba.cuda.simulator import kernelapi
    from numba.cuda.simulator.cudadrv import devicearray as sim

    def device(make):
        def poisoned_device_array(*args, **kwargs):
            out = make(*args, **kwargs)
            _poisoned(out._ary)
            return out
        return poisoned_device_array

    def host(make):
        def poisoned_array(*args, **kwargs):
            return _poisoned(make(*args, **kwargs))
        return poisoned_array

    def local(make):
        def poisoned_local_array(self, shape, dtype, alignment=None):
            return _poisoned(make(self, shape, dtype, alignment))
        return poisoned_local_array

    # device_array_like calls the module's device_array
    return ((sim, "device_array", device), (cuda, "device_array", device),
            (sim, "pinned_array", host), (cuda, "pinned_array", host),
            (kernelapi.FakeCUDALocal, "array", local))


def poison():
    """Patch the simulator's allocations; returns the function that puts
    them back (None where the simulator is not on: nothing patched; a
    no-op where they were poisoned already)."""
    from tensorsched.kernels._deps import CUDA_SIMULATOR
    if not CUDA_SIMULATOR:
        return None
    saved = []
    for owner, name, wrap in _targets():
        old = getattr(owner, name)
        if getattr(old, "poisoned", False):
            continue
        new = wrap(old)
        new.poisoned = True
        saved.append((owner, name, old))
        setattr(owner, name, new)

    def undo():
        for owner, name, old in saved:
            setattr(owner, name, old)
    return undo


def pytest_configure(config):
    """The plugin's hook: poison before any test module imports a kernel."""
    poison()
