"""The cuda backend: identical to numpy on small clusters (Numba's CUDA
simulator in CI, the device on a GPU machine), and a clear refusal when
neither is available."""

import os
import subprocess
import sys

import pytest
from support.backends import needs_cuda

from tensorsched.framework.objects.synthetic import sample
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.scheduler import Scheduler


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
            # the mirror holds the host columns (the next sync has nothing to send)
            copies = be.copies
            be._sync_columns(cluster.state)
            assert be.copies == copies
            for f, host in zip(cluster.state.columns()._fields, cluster.state.columns()):
                assert (be.device_column(f) == host).all(), f
    assert placements["numpy"] == placements["cuda"]


def test_cuda_without_device_fails_clearly():
    code = ("from tensorsched.framework import explain\n"
            "from tensorsched.framework.objects.synthetic import sample\n"
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
