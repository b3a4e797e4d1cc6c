"""Numba's CUDA simulator allocates a block's shared array when the first of
its threads reaches ``cuda.shared.array`` (one array per source line), with
a look-up then an insert and no lock: two threads switched between the two
each get an array of their own, and the block's "shared" memory is no longer
shared (reductions read other threads' stale or uninitialized slots).  The
switch interval the suite sets under the simulator (``conftest``) makes that
window likely enough to fail a test now and then.  ``atomic_shared_arrays``
makes the look-up and the insert one step; the allocation is otherwise the
simulator's (keyed by the calling file and line)."""
from __future__ import annotations

import sys
import threading
import traceback

import numpy as np

_LOCK = threading.Lock()


def atomic_shared_arrays() -> None:
    """Patch the simulator's ``FakeCUDAShared.array`` (idempotent)."""
    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    shared = kernelapi.FakeCUDAShared
    if getattr(shared.array, "atomic", False):
        return
    dynamic = shared.array

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:
            return dynamic(self, shape, dtype, alignment)     # no per-line table there
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = traceback.extract_stack(sys._getframe())[-2][0:2]
        with _LOCK:
            res = self._allocations.get(caller)
            if res is None:
                res = np.empty(shape, dtype)
                self._allocations[caller] = res
        return res

    array.atomic = True
    shared.array = array
