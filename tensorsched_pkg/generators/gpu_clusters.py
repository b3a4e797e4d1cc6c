"""The GPU benchmark workload: DGX-like nodes (8 GPUs in two NVLink islands
of 4, two NUMA nodes of 64 cpu / 512Gi, GPUs 0-3 on NUMA 0 and 4-7 on NUMA
1) and a seeded mix of GPU-sharing pods (openb annotations) and whole-GPU
pods (``nvidia.com/gpu``), some asking for one NVLink island or a single
NUMA node; ``gpu_config`` is the profile that schedules it.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.parsing.quantity import resource_value
from tensorsched.generators.clusters import ZONE, check_sizes, node_dict, pod_dict

from tensorsched.topology.gpu import ANNO_GPU_COUNT, ANNO_GPU_MILLI
from tensorsched.topology.node_topology import ANNO_NODE_TOPOLOGY, ANNO_POD_PLACEMENT, dgx_annotation

GPU_PRODUCT = "A100"
# (kind, weight, cpu, memory, gpus, milli, placement)
GPU_MIX = (
    ("share", 10, "2", "8Gi", 1, 100, ""),
    ("share", 10, "2", "8Gi", 1, 250, ""),
    ("share", 12, "4", "16Gi", 1, 500, ""),
    ("share", 8, "4", "16Gi", 1, 750, ""),
    ("whole", 25, "8", "32Gi", 1, 1000, ""),
    ("whole", 15, "16", "64Gi", 2, 1000, "nvlink-island"),
    ("whole", 10, "32", "128Gi", 4, 1000, "nvlink-island"),
    ("whole", 5, "32", "128Gi", 4, 1000, "single-numa-node"),
    ("whole", 5, "64", "256Gi", 8, 1000, ""),
)


def gpu_typical_pods() -> list[dict]:
    """The workload's pod shapes, as GpuShareScore's ``typicalPods`` arg."""
    return [{"cpu": resource_value("cpu", cpu), "gpuCount": n, "gpuMilli": m, "weight": w}
            for _k, w, cpu, _mem, n, m, _p in GPU_MIX]


def gpu_config(percentage: int = 100, policy: str = "FGD") -> dict:
    """The default profile plus GpuShareFit, GpuShareScore and GpuTopologyScore."""
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": percentage,
            "profiles": [{"schedulerName": "default-scheduler", "plugins": {
                "filter": {"enabled": [{"name": "GpuShareFit"}]},
                "reserve": {"enabled": [{"name": "GpuShareFit"}]},
                "preScore": {"enabled": [{"name": "GpuTopologyScore"}]},
                "score": {"enabled": [{"name": "GpuShareScore", "weight": 5},
                                      {"name": "GpuTopologyScore", "weight": 2}]}},
                "pluginConfig": [{"name": "GpuShareScore",
                                  "args": {"policy": policy, "typicalPods": gpu_typical_pods()}}]}]}


def gpu_node(name: str, zone: str = "zone-0") -> dict:
    n = node_dict(name, cpu="128", memory="1Ti", pods="110", extra={"nvidia.com/gpu": "8"},
                  labels={ZONE: zone, "nvidia.com/gpu.product": GPU_PRODUCT})
    n["metadata"]["annotations"] = {ANNO_NODE_TOPOLOGY: dgx_annotation()}
    return n


def gpu(nodes: int, pods: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(node dicts, pending pod dicts) of the GPU workload (seeded mix)."""
    nodes, pods, seed = check_sizes("synthetic.gpu", nodes, pods, seed)
    rng = np.random.default_rng(seed)
    node_objs = [gpu_node(f"dgx-{i}", f"zone-{i % 3}") for i in range(nodes)]
    w = np.array([m[1] for m in GPU_MIX], np.float64)
    kinds = rng.choice(len(GPU_MIX), size=pods, p=w / w.sum())
    out = []
    for i, k in enumerate(kinds):
        kind, _w, cpu, mem, n, milli, place = GPU_MIX[int(k)]
        if kind == "share":
            p = pod_dict(f"gpu-{i}", cpu=cpu, memory=mem, created=i)
            p["metadata"]["annotations"] = {ANNO_GPU_MILLI: str(milli), ANNO_GPU_COUNT: "1"}
        else:
            p = pod_dict(f"gpu-{i}", cpu=cpu, memory=mem, created=i,
                         extra={"nvidia.com/gpu": str(n)})
        if place:
            p["metadata"].setdefault("annotations", {})[ANNO_POD_PLACEMENT] = place
        out.append(p)
    return node_objs, out
