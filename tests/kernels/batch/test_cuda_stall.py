"""The batched engine's CUDA kernel stops a stalled run where its CPU twin
(and so the Simulation: ``tests/topology/openb/test_batch_stall.py``)
does: pods that never fit keep retrying each other under ``max_unsched``
below the longest backoff; the device gives the twin's bindings,
attempts, change log and end, with and without DefaultPreemption."""
import numpy as np
import pytest
from support.backends import needs_cuda

from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R

pytestmark = [pytest.mark.cudasim, needs_cuda]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("preempt", [None, [(10, 100)]])
def test_cuda_stall_stop_equals_the_twin(preempt):
    inv = build_inventory(["n0"], [16000], [65536], [1], ["T4"])
    pods = R.TracePods([f"p{j}" for j in range(6)], np.full(6, 1000), np.full(6, 1024),
                       np.ones(6, np.int64), np.full(6, 1000), [""] * 6)
    tw = B.TraceWorkload(pods, np.array([2.0, 7.0, 9.0, 11.0, 14.0, 17.0]),
                         np.array([np.inf, np.inf, 29.0, np.inf, np.inf, 25.0]),
                         priority=np.zeros(6, np.int64))
    jobs = [(0, 0, "FGD", 0)]
    (twin,) = B.trace_batch([inv], [tw], jobs, workers=1, max_unsched=4.0, preempt=preempt)
    (dev,) = B.trace_batch([inv], [tw], jobs, backend="cuda", max_unsched=4.0,
                           preempt=preempt, chunk=1)
    assert twin.end == dev.end == 57.0
    assert twin.node.tolist() == dev.node.tolist() and twin.gpus == dev.gpus
    for name in ("log_t", "log_pod", "log_frag", "tries", "bind"):
        np.testing.assert_array_equal(getattr(twin, name), getattr(dev, name), err_msg=name)
