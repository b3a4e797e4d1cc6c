"""``generators.gpu_clusters``: DGX-like nodes with their GPU annotations,
a GPU-sharing workload that repeats with its seed, and the profile that
schedules it."""

from __future__ import annotations

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.plugins import default_registry
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators import gpu_clusters as GG
from tensorsched.topology.gpu import ANNO_GPU_COUNT


def test_gpu_workload_builds_under_its_profile_and_repeats():
    nodes, pods = GG.gpu(3, 10, seed=5)
    assert len(nodes) == 3 and len(pods) == 10
    assert all(n["metadata"]["annotations"] for n in nodes)
    assert any(ANNO_GPU_COUNT in (p["metadata"].get("annotations") or {}) for p in pods)
    config = GG.gpu_config(policy="BestFit")
    load_config(config, default_registry().plugin_points())
    build_cluster(nodes + pods, config)
    assert GG.gpu(3, 10, seed=5) == (nodes, pods)
