"""The node-local engine's trace form as a CUDA kernel
(``kernels/batch/local_trace_cuda.py``, shuffles emulated under the
simulator) gives the CPU twin's answers: random clusters and traces
(arrivals, departures at a time or after a duration, retries, pods of
unequal priorities and creation times), several configurations in one call
(each run with its own profile), more nodes than threads with the
percentage of nodes to score's scan window."""

import numpy as np
import pytest
import yaml
from support.backends import needs_cuda

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep_local as SL
from tensorsched.generators.clusters import node_dict
from tensorsched.kernels.batch.local_cpu import run_local_trace

from support.local_traces import write_inputs as _write

pytestmark = [pytest.mark.cudasim, needs_cuda,
              pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")]


def _same(t):
    from tensorsched.kernels.batch.local_trace_cuda import run_local_trace_cuda
    twin = run_local_trace(t)
    dev = run_local_trace_cuda(t)
    for a, b in zip(twin, dev):
        np.testing.assert_array_equal(a, b)
    return twin


# durations=True leaves some pods at a departure time, others a duration
# after binding (both departure forms): first-in first-out, then a heap of
# ranks (the case without durations ran a subset of the first one's paths)
@pytest.mark.parametrize("seed,durations,priorities", [(3, True, False), (2, True, True)])
def test_cuda_trace_equals_the_twin(tmp_path, seed, durations, priorities, monkeypatch):
    cluster, trace, configs = _write(tmp_path, seed, 4, 10, 1, durations, priorities)
    objs = list(yaml.safe_load_all(open(cluster)))
    tr = run.read_trace_file(trace)
    setups = [SL.trace_setup(objs, yaml.safe_load(open(c)), tr) for c in configs]
    calls = []
    monkeypatch.setattr(SL, "run_local_trace", lambda t, threads=None: calls.append(t) or
                        run_local_trace(t, threads))
    SL.run_setups(setups, [[0, 1], [2], [3]])
    got = _same(calls[0])
    assert (got.node >= 0).any()
    # with durations, some bound pod leaves a duration after its binding
    assert not durations or (np.isfinite(calls[0].durations()) & (got.node >= 0)).any()
    # with priorities (or the manifests' pending pods, created before the
    # trace's), activeQ is a heap of ranks
    assert not priorities or calls[0].rank is not None


def test_cuda_trace_scan_window_more_nodes_than_threads(tmp_path, monkeypatch):
    # 104 nodes: 100 to find at 50% (kube-scheduler's minimum), 7 rounds of
    # the simulator's 16 threads; 12 pods in one run (several runs in one
    # call: test_cuda_trace_equals_the_twin)
    objs = [node_dict(f"n{i:03d}", cpu="12"[i % 2]) for i in range(104)]
    lines = ["name,arrival,departure,cpu"] + [
        f"p{j},{j // 3},{'' if j % 4 else j + 7},{('300m', '900m')[j % 2]}" for j in range(12)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    tr = run.read_trace_file(str(path))
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "percentageOfNodesToScore": 50}
    s = SL.trace_setup(objs, cfg, tr)
    calls = []
    monkeypatch.setattr(SL, "run_local_trace", lambda t, threads=None: calls.append(t) or
                        run_local_trace(t, threads))
    SL.run_setups([s], [[0]])
    got = _same(calls[0])
    assert len(set(got.node.tolist())) > 10


def test_simulate_batch_on_cuda_equals_numba(tmp_path):
    cluster, trace, configs = _write(tmp_path, 4, 2, 6, 0)
    runs = [ts.simulate_batch(cluster, [trace], configs[:2], seeds=[1], backend=b)
            for b in ("numba", "cuda")]
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a.node, b.node)
        np.testing.assert_array_equal(a.bind, b.bind)
        np.testing.assert_array_equal(a.tries, b.tries)
