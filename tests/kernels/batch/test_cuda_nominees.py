"""The batched engine's CUDA kernel with many nominations outstanding
(thread 0 walking ``_gpu_preempt``'s list of nominated pods each cycle,
ending lower nominations on a node from its last nominated pod back, and
reading the terminating victims for the terminating rule) gives the CPU
twin's answers bit for bit under ``NUMBA_ENABLE_CUDASIM``: three nodes
filled by low-priority pods, a burst of preemptors of rising tiers (later
ones replacing earlier nominations), two of them deleted while pending
and a filler leaving (room elsewhere), with and without a termination
grace (with 3 s, the Simulation's nominator sees up to five nominations
outstanding, several replaced, nominated pods binding elsewhere and
deleted while pending; the twin is its Simulation's:
``tests/topology/openb/test_batch_preempt_nominees.py``)."""
import numpy as np
import pytest
from support.backends import needs_cuda

from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R

pytestmark = [pytest.mark.cudasim, needs_cuda]


def _burst():
    inv = build_inventory(["n0", "n1", "n2"], [32000] * 3, [65536] * 3, [1, 2, 1], ["T4"] * 3)
    fill, burst = 4, 8
    p = fill + burst
    gpus = [(1, 1000)] * fill + [(1, 1000), (1, 500), (1, 1000), (2, 1000), (1, 1000),
                                 (1, 500), (1, 1000), (1, 1000)]
    prio = np.array([0] * fill + [10, 10, 20, 20, 30, 30, 100, 100])
    arrival = np.array([0.0] * fill + [1, 1, 2, 2, 2, 3, 3, 4], np.float64)
    departure = np.full(p, np.inf)
    departure[2] = 6.0                  # a filler leaves: room off the nominated nodes
    departure[fill + 1] = 2.0           # preemptors deleted while pending
    departure[fill + 4] = 4.0
    names = [f"pod-{(11 * j) % 37:02d}-{j}" for j in range(p)]
    pods = R.TracePods(names, np.full(p, 1000), np.full(p, 1024),
                       np.array([g[0] for g in gpus]), np.array([g[1] for g in gpus]),
                       [""] * p)
    tw = B.TraceWorkload(pods, arrival, departure,
                         rank=np.unique(-prio, return_inverse=True)[1], priority=prio)
    return inv, tw


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("grace", [0.0, 3.0])
def test_cuda_runs_with_many_nominations_equal_the_twin(grace):
    inv, tw = _burst()
    jobs = [(0, 0, "FGD", 3), (0, 0, "BestFit", 5)]
    pre = [(10, 100), (0, 1)]
    twin = B.trace_batch([inv], [tw], jobs, workers=1, preempt=pre,
                         termination_grace_seconds=grace)
    dev = B.trace_batch([inv], [tw], jobs, backend="cuda", preempt=pre,
                        termination_grace_seconds=grace)
    assert all(int(r.preempted.sum()) >= 3 for r in twin)
    for x, y in zip(twin, dev):
        assert x.node.tolist() == y.node.tolist() and x.gpus == y.gpus
        assert x.preempted.tolist() == y.preempted.tolist()
        for name in ("log_t", "log_pod", "log_frag", "tries", "bind"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name), err_msg=name)
