"""The vector environment's CUDA step refusing device actions that are not
int64 node rows (under ``NUMBA_ENABLE_CUDASIM`` here; without the module
of ``test_batch_fuzz``'s warnings-as-errors: the simulator runs the
kernels' uint64 hashes in NumPy scalars, which warn as they wrap)."""

from __future__ import annotations

import tempfile
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from support.backends import cuda_available
from support.openb import openb_slice

from tensorsched.framework.errors import ArgumentError
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.vector_env import OpenbVectorEnv

NODES, PODS = openb_slice(Path(tempfile.mkdtemp(prefix="fuzz-device-")), "default", 4, 12,
                          leave_every=2)
INV = read_openb_nodes(NODES)


@pytest.mark.cudasim
@pytest.mark.skipif(find_spec("gymnasium") is None, reason="the gym extra")
def test_a_refused_device_action_changes_nothing():
    """``backend='cuda'``: device actions that are not int64 node rows (a
    float or int32 device array, a wrong shape) are ``ArgumentError``s
    naming ``actions`` (the engine's own ValueError before), the device
    state untouched; the next step equals the twin's."""
    if not cuda_available():
        pytest.skip("no CUDA device and no simulator")
    from numba import cuda

    pods = R.read_openb_pods(PODS)
    jobs = [(0, "FGD", 1), (0, "BestFit", 2)]
    dev = OpenbVectorEnv(INV, [pods], jobs, backend="cuda")
    twin = OpenbVectorEnv(INV, [pods], jobs)
    _, info = dev.reset()
    twin.reset()
    before = (dev.engine.ist.copy(), dev.engine.fst.copy())
    for bad in (cuda.to_device(np.array([0.0, 1.0])), cuda.to_device(np.array([0, 1], np.int32)),
                cuda.to_device(np.array([0, 1, 2], np.int64)), np.array([0.5, 1.0])):
        with pytest.raises(ArgumentError, match=r"^OpenbVectorEnv\.step: actions: "):
            dev.step(bad)
    np.testing.assert_array_equal(before[0], dev.engine.ist)
    np.testing.assert_array_equal(before[1], dev.engine.fst)
    act = np.ascontiguousarray(info["default_action"], np.int64)
    got, want = dev.step(cuda.to_device(act)), twin.step(act)
    for k in want[0]:
        np.testing.assert_array_equal(np.asarray(got[0][k]), want[0][k])
    np.testing.assert_array_equal(got[1], want[1])
