"""The cuda backend: identical to numpy on small clusters (Numba's CUDA
simulator in CI, the device on a GPU machine), and a clear refusal when
neither is available."""

import os
import subprocess
import sys

import numpy as np
import pytest
from support.backends import needs_cuda

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict, sample
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels.fused import run_sort


@pytest.mark.cudasim
@needs_cuda
def test_cuda_explain_matches_numpy():
    nodes, pods = sample(seed=3, nodes=6, pods=8)
    cluster = build_cluster(nodes)
    for pod in pods:
        assert explain_pod(cluster, pod, backend="cuda") == {
            **explain_pod(cluster, pod, backend="numpy"), "backend": "cuda"}


@pytest.mark.cudasim
@needs_cuda
def test_cuda_schedule_matches_numpy_and_uploads_only_changed_rows():
    nodes, pods = sample(seed=5, nodes=6, pods=10)
    placements = {}
    for backend in ("numpy", "cuda"):
        cluster = build_cluster(nodes + pods)
        sched = Scheduler(cluster, backend, seed=1)
        placements[backend] = [(b.pod, b.node) for b in sched.run(cluster.pending)]
        if backend == "cuda":
            be = cluster.framework_for(cluster.pending[0], "cuda").backend
            # one full upload, then at most one copy per pack (three: the
            # node columns by dtype) per placed pod
            placed = sum(1 for _, n in placements["cuda"] if n is not None)
            assert 3 <= be.copies <= 3 * (1 + placed)
            # a sync brings the mirror to the host columns (the last binding's
            # row); the next one has nothing to send
            be._sync_columns(cluster.state)
            copies = be.copies
            be._sync_columns(cluster.state)
            assert be.copies == copies
            for f, host in zip(cluster.state.columns()._fields, cluster.state.columns()):
                assert (be.device_column(f) == host).all(), f
    assert placements["numpy"] == placements["cuda"]


def test_cuda_without_device_fails_clearly():
    code = ("from tensorsched.framework import explain\n"
            "from tensorsched.generators.clusters import sample\n"
            "n, p = sample(nodes=3, pods=1)\n"
            "try:\n    explain(n, p[0], backend='cuda')\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    if "Error" not in out.stdout:
        pytest.skip("a CUDA device is present")
    assert "BackendError" in out.stdout
    assert "NUMBA_ENABLE_CUDASIM" in out.stdout


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.parametrize("batch", [False, True])
def test_cuda_cycle_launches_two_kernels_and_a_run_two(batch, monkeypatch):
    """A cycle is at most two launches (the row cache over the rows written
    since, the device pick), a run two (that pass and the run block); after
    the first pass only written rows are recomputed.  (Runs by the device run kernel: the sort
    path's are tests/kernels/fused/test_run_sort_cuda.py's.)"""
    monkeypatch.setattr(run_sort, "ENABLED", False)
    nodes = [node_dict(f"n{i}", cpu=str(2 + i % 3)) for i in range(6)]
    pods = [pod_dict(f"p{i}", cpu="300m", created=i) for i in range(12)]
    cluster = build_cluster(nodes)
    be = cluster.framework_for(parse_pod(pods[0]), "cuda").backend
    calls = []
    for name in ("evaluate", "place_run"):
        def counted(*a, _orig=getattr(be, name), _name=name, **k):
            before = be.launches
            out = _orig(*a, **k)
            calls.append((_name, be.launches - before))
            return out
        setattr(be, name, counted)
    sched = Scheduler(cluster, "cuda", seed=1, batch=batch)
    bound = [o for o in sched.schedule_pending(pods)[0] if o.node is not None]
    assert bound and calls
    assert all(n <= 2 for name, n in calls), calls
    assert any(name == "place_run" for name, _ in calls) == batch
    # one pass over every row, then the rows the placements wrote
    n = cluster.state.columns().allocatable.shape[0]
    assert be.rows_recomputed <= n + len(bound)


@pytest.mark.cudasim
@needs_cuda
def test_cuda_cycles_copy_back_no_rows(monkeypatch):
    """One-by-one cycles are decided on the device: nothing of the row
    cache comes back (the picked row and three counts a cycle), across a
    deleted pod and an added node, and the bindings are the numpy
    backend's.  (Host-ranked cycles' copies of the rows written since:
    tests/kernels/fused/test_cycle_backend.py.)"""
    from tensorsched.kernels.fused.cycle import OUT_LEN
    from numba import cuda
    nodes = [node_dict(f"n{i}", cpu=str(2 + i % 3)) for i in range(7)]
    first = [pod_dict(f"p{i}", cpu="300m", created=i) for i in range(10)]
    later = [pod_dict(f"q{i}", cpu="300m", created=20 + i) for i in range(6)]
    copied = []
    device_type = type(cuda.device_array(1))
    real_copy = device_type.copy_to_host

    def copy_to_host(self, *a, **k):
        copied.append(self.shape[0])
        return real_copy(self, *a, **k)

    def play(backend):
        cluster = build_cluster(nodes)
        sched = Scheduler(cluster, backend, seed=3, batch=False)
        out = sched.schedule_pending(first)[0]
        sched.delete_pod(out[2].pod)
        sched.add_node(node_dict("extra", cpu="4"))
        out += sched.schedule_pending(later)[0]
        (fw,) = cluster.frameworks.values()
        return [(b.pod, b.node) for b in out], fw.backend, cluster

    monkeypatch.setattr(device_type, "copy_to_host", copy_to_host)
    got, be, cluster = play("cuda")
    monkeypatch.setattr(device_type, "copy_to_host", real_copy)
    assert got == play("numpy")[0]
    assert be.rows_downloaded == 0
    assert copied == [OUT_LEN] * (len(first) + len(later))


@pytest.mark.cudasim
@needs_cuda
def test_a_device_run_is_one_copy_up_and_one_back(monkeypatch):
    """A device run sends its parameters, rows and rule / spread / affinity
    arrays up in one copy (``_cuda_run.pack_run``) into buffers kept
    between runs, the rows written since its query's last pass in one more
    (staged: its one launch writes and recomputes them first), and copies
    its placements back once."""
    from numba import cuda

    from tensorsched.kernels.fused import _cuda_run as cuda_run
    monkeypatch.setattr(run_sort, "ENABLED", False)
    nodes = [node_dict(f"n{i}", cpu=str(2 + i % 3), labels={"zone": f"z{i % 2}"})
             for i in range(6)]
    spec = {"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}}}]}
    pods = [pod_dict(f"p{i}", cpu="300m", labels={"app": "web"}, created=i, spec=spec)
            for i in range(10)]
    device_type = type(cuda.device_array(1))
    seen = {"up": 0, "back": 0, "alloc": 0}
    real = (device_type.copy_to_device, device_type.copy_to_host, cuda.to_device,
            cuda.device_array)
    in_run = []

    def count(key, fn):
        def wrapped(*a, **k):
            if in_run:
                seen[key] += 1
            return fn(*a, **k)
        return wrapped
    monkeypatch.setattr(device_type, "copy_to_device", count("up", real[0]))
    monkeypatch.setattr(device_type, "copy_to_host", count("back", real[1]))
    monkeypatch.setattr(cuda, "to_device", count("up", real[2]))
    monkeypatch.setattr(cuda, "device_array", count("alloc", real[3]))
    from numba.cuda.cudadrv import driver       # a staged prefix's one copy
    monkeypatch.setattr(driver, "host_to_device", count("up", driver.host_to_device))
    cluster = build_cluster(nodes)
    be = cluster.framework_for(parse_pod(pods[0]), "cuda").backend
    runs = []

    def place_run(*a, _orig=be.place_run, **k):
        in_run.append(1)
        before = dict(seen, launches=be.launches)
        try:
            return _orig(*a, **k)
        finally:
            in_run.pop()
            runs.append({key: (be.launches if key == "launches" else seen[key]) - before[key]
                         for key in before})
    be.place_run = place_run
    sched = Scheduler(cluster, "cuda", seed=1, batch=True)
    one = Scheduler(build_cluster(nodes), "numba", seed=1, batch=False)
    for part in (pods[:5], pods[5:]):
        got = [(o.pod, o.node) for o in sched.schedule_pending(part)[0]]
        assert got == [(o.pod, o.node) for o in one.schedule_pending(part)[0]]
    assert len(runs) >= 2 and max(sched.run_lengths) > 3
    # the first run also uploads the packs, the query and the row cache; a
    # later one stages the rows written since (one copy) for its one launch
    for r in runs[1:]:
        assert r["back"] == 1 and r["up"] <= 2 and r["alloc"] == 0, runs
        assert r["launches"] == 1, runs
    host = cuda_run.pack_run(cuda_run.pack_run_params(3, 1, 4, np.arange(2), np.arange(2), np.ones(2, bool),
                                        np.zeros(2, np.int64), np.ones(2, np.int64)),
                      np.arange(5, dtype=np.int64), *_forms(5))
    parts = cuda_run.unpack_run(host)
    assert [p.ndim for p in parts] == [d for _, d in cuda_run.RUN_PARTS]
    assert np.array_equal(parts[1], np.arange(5))


def _forms(n):
    from tensorsched.kernels import domain_rules as DR
    from tensorsched.kernels.fused.backends import _never_fails
    return _never_fails(n), DR.stack_spread(None, n), DR.stack_affinity(None, n)
