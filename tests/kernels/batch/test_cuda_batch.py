"""The batched engine's CUDA kernel (a block per cluster, shuffles
emulated under the simulator) gives the CPU twin's answers, bit for bit,
and so each run's Simulation: tiny clusters under ``NUMBA_ENABLE_CUDASIM``,
all six policies, more nodes than threads (several rounds of the tie
scan), runs split into chunks by a small memory budget."""
import numpy as np
import pytest
from support.backends import needs_cuda
from support.openb import read_openb_slice

from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import trace as T

pytestmark = [pytest.mark.cudasim, needs_cuda]


def _arrays(tmp_path, n_nodes, n_pods, seeds):
    inv, pods = read_openb_slice(tmp_path, "gpuspec10", n_nodes, 60)
    wl = [B.workload_of(inv, pods)]
    runs = []
    for pol, seed in zip(POLICIES, seeds):
        seq, tie = B.arrival_and_ties(inv, pods, seed, 1.3)
        runs.append(B.Run(0, pol, seed, seq[:n_pods], tie))
    return inv, pods, wl, runs, B.batch_arrays(inv, wl, runs)


def test_cuda_equals_the_twin_and_the_simulation(tmp_path):
    from tensorsched.kernels.batch import cpu
    from tensorsched.kernels.batch import cuda as KC
    inv, pods, wl, runs, a = _arrays(tmp_path, 20, 6, range(5, 11))
    assert a.gpu_count.shape[1] > KC.THREADS
    twin = cpu.run_batch(a)
    budget = int(KC.cluster_bytes(a)[:2].sum())      # chunks of about two runs
    dev = KC.run_batch(a, budget=budget)
    for name, x, y in zip(("node", "gpus", "frag"), twin, dev):
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert (twin[0] >= 0).any() and len(set(twin[0].tolist())) > 2
    # the twin's runs are their Simulations' (as far as these pods go)
    for k, res in enumerate(B.results_of(inv, wl, runs, twin, 1.3, 0.0, True)):
        _rec, _sched, seq, (where, _gpus, _m) = T._experiment(
            inv, pods, res.policy, res.seed, 1.3, "numba", outcomes=True)
        assert [p[1] for p in res.placements] == where[:6].tolist(), res.policy
