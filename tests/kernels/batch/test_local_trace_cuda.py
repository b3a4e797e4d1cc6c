"""The node-local engine's trace form as a CUDA kernel
(``kernels/batch/local_trace_cuda.py``, shuffles emulated under the
simulator) gives the CPU twin's answers: random clusters and traces
(arrivals, departures at a time or after a duration, retries, pods of
unequal priorities and creation times), several configurations in one call
(each run with its own profile), more nodes than threads with the
percentage of nodes to score's scan window, bound pods' InterPodAffinity
terms."""

from pathlib import Path

import numpy as np
import pytest
import yaml
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep_local as SL
from tensorsched.generators.clusters import node_dict
from tensorsched.kernels.batch.local_cpu import run_local_trace

from support.local_traces import write_inputs as _write

pytestmark = [pytest.mark.cudasim, needs_cuda,
              pytest.mark.filterwarnings("error::RuntimeWarning")]


def _same(t):
    from tensorsched.kernels.batch.local_trace_cuda import run_local_trace_cuda
    twin = run_local_trace(t)
    dev = run_local_trace_cuda(t)
    for a, b in zip(twin, dev):
        np.testing.assert_array_equal(a, b)
    return twin


def _trace_of(cluster, trace, configs, seeds, monkeypatch):
    """The LocalTrace ``sweep_local.run_setups`` hands the CPU twin for the
    configurations' jobs under ``seeds`` (one list per configuration)."""
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    tr = run.read_trace_file(trace)
    setups = [SL.trace_setup(objs, yaml.safe_load(Path(c).read_text()), tr) for c in configs]
    calls = []
    monkeypatch.setattr(SL, "run_local_trace", lambda t, threads=None: calls.append(t) or
                        run_local_trace(t, threads))
    SL.run_setups(setups, seeds)
    return calls[0]


# durations=True leaves some pods at a departure time, others a duration
# after binding (both departure forms): first-in first-out, then a heap of
# ranks (a case without durations ran a subset of the first one's paths);
# then bound pods with InterPodAffinity terms (static columns)
@pytest.mark.parametrize("seed,durations,priorities,affinity", [
    (3, True, False, False), (2, True, True, False), (5, False, False, True)])
def test_cuda_trace_equals_the_twin(tmp_path, seed, durations, priorities, affinity,
                                    monkeypatch):
    cluster, trace, configs = _write(tmp_path, seed, 4, 10, 3 if affinity else 1, durations,
                                     priorities, affinity)
    t = _trace_of(cluster, trace, configs, [[0, 1], [2], [3]], monkeypatch)
    got = _same(t)
    assert (got.node >= 0).any()
    # with affinity, InterPodAffinity scores the pending web pod
    assert not affinity or t.batch.c_active[:, 5].any()
    # with durations, some bound pod leaves a duration after its binding
    assert not durations or (np.isfinite(t.durations()) & (got.node >= 0)).any()
    # with priorities (or the manifests' pending pods, created before the
    # trace's), activeQ is a heap of ranks
    assert not priorities or t.rank is not None


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


def test_chunks_to_a_budget_equal_one_launch_and_the_twin(tmp_path, monkeypatch):
    """A budget that holds two clusters at most: 2+ chunks, one launch
    each, results stitched in cluster order equal to one launch and to the
    twin; the bytes each launch allocates are ``chunk_bytes``'s, and the
    inputs all chunks share are uploaded once."""
    from numba import cuda

    from tensorsched.kernels.batch import local_trace_cuda as LTC
    # three clusters (one per configuration), 6 pods each: a budget of the
    # two largest makes two chunks or more, one launch each
    cluster, trace, configs = _write(tmp_path, 2, 4, 6, 1, True, True)
    t = _trace_of(cluster, trace, configs, [[0], [1], [2]], monkeypatch)
    assert t.batch.n_clusters == 3 and t.rank is not None
    per = LTC.trace_cluster_bytes(t)
    assert per.tolist() == [LTC.chunk_bytes(t, b, b + 1) for b in range(3)]
    sizes, marks, chunks = [], [], []
    real_da, real_td, real_chunks, real_kernel = (cuda.device_array, cuda.to_device,
                                                  LTC.trace_chunks, LTC._kernel)

    def device_array(shape, dtype):
        sizes.append(int(np.prod(shape)) * np.dtype(dtype).itemsize)
        return real_da(shape, dtype)

    def to_device(x):
        sizes.append(int(np.asarray(x).nbytes))
        return real_td(x)

    def trace_chunks(t_, room):
        marks.append((len(sizes), room))
        chunks.extend(real_chunks(t_, room))
        return chunks

    class Kernel:
        def __getitem__(self, grid):
            marks.append((len(sizes), grid[0]))
            return real_kernel[grid]

    monkeypatch.setattr(cuda, "device_array", device_array)
    monkeypatch.setattr(cuda, "to_device", to_device)
    monkeypatch.setattr(LTC, "trace_chunks", trace_chunks)
    monkeypatch.setattr(LTC, "_kernel", Kernel())
    big = 1 << 40
    one = LTC.run_local_trace_cuda(t, budget=big)
    assert chunks == [(0, 3)]                           # unchunked: one launch
    shared = big - marks[0][1]
    del sizes[:], marks[:], chunks[:]
    budget = shared + int(np.sort(per)[-2:].sum())
    got = LTC.run_local_trace_cuda(t, budget=budget)
    (start, room), launches = marks[0], marks[1:]
    assert sum(sizes[:start]) == shared and room == budget - shared   # shared inputs, once
    assert len(chunks) >= 2 and chunks[0][0] == 0 and chunks[-1][1] == 3
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    assert [n for _at, n in launches] == [hi - lo for lo, hi in chunks]
    ends = [at for at, _n in launches] + [len(sizes)]
    for k, (lo, hi) in enumerate(chunks):
        # this chunk's inputs, outputs and scratch, up to its launch
        assert sum(sizes[(start if k == 0 else ends[k - 1]):ends[k]]) == LTC.chunk_bytes(
            t, lo, hi), (lo, hi)
        assert hi - lo == 1 or LTC.chunk_bytes(t, lo, hi) <= room
    assert sum(sizes[ends[-2]:]) == 0                   # nothing after the last launch
    twin = run_local_trace(t)
    for x, y, z in zip(got, one, twin):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, z)
    # a budget below every cluster: one launch per cluster, the same answers
    del chunks[:]
    alone = LTC.run_local_trace_cuda(t, budget=0)
    assert chunks == [(b, b + 1) for b in range(3)]
    for x, z in zip(alone, twin):
        np.testing.assert_array_equal(x, z)
