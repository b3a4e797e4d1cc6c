"""``simulate_replay``'s curves come from each pod's outcome after the run
(``_curves_from_outcomes``, the Simulation without samples); they equal,
bit for bit, the ones the Simulation's per-second GPU samples
(``GpuTracker``) gave."""

import numpy as np
import pytest
from support.openb import NODES, read_openb_slice

from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T


@pytest.mark.parametrize("trace, policy, seed", [("default", "FGD", 42),
                                                 ("multigpu20", "BestFit", 3),
                                                 ("gpuspec10", "DotProd", 11),
                                                 ("default", "Random", 7)])
def test_curves_from_outcomes_equal_the_sampled_ones(tmp_path, trace, policy, seed):
    nodes, pods = read_openb_slice(tmp_path, trace, 120, 600)
    sampled, s_sched = T._experiment(nodes, pods, policy, seed, 1.3, "numba", sampled=True)
    rebuilt, r_sched = T._experiment(nodes, pods, policy, seed, 1.3, "numba")
    assert s_sched == r_sched
    n = len(rebuilt[0])
    assert r_sched < n                  # some pods fail: the curves hold across them
    assert len(sampled[0]) == n
    for name, a, b in zip(("arrived", "used", "frag", "idle"), sampled, rebuilt):
        np.testing.assert_array_equal(a, b, err_msg=name)
    res = T.simulate_replay(nodes, pods, policy, seed=seed)
    assert (res.pods, res.scheduled) == (n, r_sched)
    tg = nodes.total_gpus
    for name, want in zip(("alloc", "frag_amount", "frag_ratio"), R._curves(sampled, tg)):
        np.testing.assert_array_equal(getattr(res, name), want, err_msg=name)


def test_curves_from_outcomes_by_hand():
    """Two nodes, a failed pod between two placements, a CPU-only pod:
    used/idle follow the placed GPU milli, the fragmentation is the sum of
    the per-node measure after each pod (unchanged by a failure)."""
    inv = R.read_openb_nodes(NODES)
    keep = [0, 1]
    inv = type(inv)([inv.names[i] for i in keep], list(inv.models), inv.gpu_count[keep],
                    inv.model[keep], inv.gpu_left[keep], inv.gpu_mem[keep], inv.cpu_left[keep],
                    inv.mem_left[keep], inv.cpu_cap[keep], inv.mem_cap[keep])
    typical = [{"cpu": 1000, "gpuCount": 1, "gpuMilli": 500, "models": "", "weight": 0.5},
               {"cpu": 1000, "gpuCount": 1, "gpuMilli": 1000, "models": "", "weight": 0.5}]
    tp = T._tracker_typical(typical, inv)

    class Pods:
        cpu = np.array([1000, 2000, 4000, 500], np.int64)

    seq = np.arange(4)
    where = np.array([0, -1, 1, 0])
    gpu_idx = [(0,), (), (0, 1), ()]
    milli = np.array([500, 0, 1000, 0])
    used, frag, idle = T._curves_from_outcomes(inv.copy(), tp, seq, Pods, where, gpu_idx, milli)
    idle0 = int(inv.gpu_count.sum()) * 1000
    np.testing.assert_array_equal(used, [500, 500, 2500, 2500])
    np.testing.assert_array_equal(idle, idle0 - used)
    # by hand: replay the same placements on a copy, whole-cluster measure each time
    ref = inv.copy()
    want = []
    for t in range(4):
        i = where[t]
        if i >= 0:
            for g in gpu_idx[t]:
                ref.gpu_left[i, g] -= milli[t]
            ref.cpu_left[i] -= Pods.cpu[t]
        want.append(float(np.sum([R.K.node_frag(int(ref.gpu_count[k]), int(ref.model[k]),
                                                ref.gpu_left[k], int(ref.cpu_left[k]), *tp)
                                  for k in range(2)])))
    np.testing.assert_allclose(frag, want, rtol=0, atol=1e-9)
    assert frag[1] == frag[0]
