"""The device finalize of a one-at-a-time cycle (``_cuda_cycle``, Numba's
CUDA simulator in CI, the device on a GPU machine) answers what the numba
backend's ``finalize_rows`` and the tie rule answer, on random row caches."""

import numpy as np
import pytest
from cycle_cases import cycles, numba_answer
from hypothesis import given, settings
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)

from tensorsched.kernels.fused import cycle
from tensorsched.kernels.fused._core import RES_PODS

pytestmark = [pytest.mark.cudasim, needs_cuda]


@settings(max_examples=25, deadline=None)
@given(cycles(max_rows=24))
def test_device_pick_equals_finalize_rows_and_the_tie_rule(case):
    from numba import cuda

    from tensorsched.kernels.fused import _cuda_cycle as DCY
    rows, start, reasons, raw, to_find, active, norm, weights, mix, requested = case
    sp = cycle.slot_params(active, norm, weights, raw.shape[1])
    out = cuda.to_device(np.full(4, -7, np.int64))
    n = requested.shape[0]
    # no staged rows (k = 0): the packs are read for the pods column only
    packs = (cuda.to_device(requested), cuda.to_device(np.zeros((n, 1), np.int8)),
             cuda.to_device(np.zeros((n, 1), np.int32)))
    none = cuda.to_device(np.zeros(1, np.int64))
    DCY.launch_cycle_pick(rows.shape[0], none, 0, packs, none, cuda.to_device(rows),
                          cuda.to_device(reasons), cuda.to_device(raw), cuda.to_device(sp),
                          start, to_find, mix, RES_PODS, out)
    assert tuple(int(v) for v in out.copy_to_host()) == numba_answer(*case)
