"""Built-in, seeded synthetic clusters and workloads (no files needed).

``basic`` mirrors kube-scheduler's scheduler_perf SchedulingBasic: identical
nodes (4 cpu, 32Gi memory, 110 pods) and pods requesting 100m cpu and 500Mi
memory.  ``sample`` is a small mixed cluster for the README's first command:
zones, a tainted node, an unschedulable node, a GPU node, pods with
selectors, affinities, tolerations and priorities.
"""

from __future__ import annotations

import numpy as np


def node_dict(name: str, cpu: str = "4", memory: str = "32Gi", pods: str = "110",
              labels: dict | None = None, taints: list | None = None,
              extra: dict | None = None, unschedulable: bool = False,
              images: list | None = None) -> dict:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                 **(labels or {})}},
           "spec": {}, "status": {"capacity": dict(alloc), "allocatable": alloc}}
    if taints:
        obj["spec"]["taints"] = taints
    if unschedulable:
        obj["spec"]["unschedulable"] = True
    if images:
        obj["status"]["images"] = images
    return obj


def pod_dict(name: str, namespace: str = "default", cpu: str | None = "100m",
             memory: str | None = "500Mi", priority: int | None = None,
             created: int = 0, spec: dict | None = None, labels: dict | None = None,
             extra: dict | None = None, image: str = "registry.k8s.io/pause:3.10") -> dict:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extra or {})
    container = {"name": "pause", "image": image, "resources": {"requests": requests}}
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "labels": labels or {},
                        "creationTimestamp": _timestamp(created)},
           "spec": {"containers": [container], **(spec or {})}}
    if priority is not None:
        obj["spec"]["priority"] = priority
    return obj


def _timestamp(seconds: int) -> str:
    import datetime
    t = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + \
        datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def basic(nodes: int, pods: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """SchedulingBasic: (node dicts, pending pod dicts)."""
    del seed   # identical nodes and pods; the seed only breaks ties
    node_objs = [node_dict(f"node-{i}", labels={"topology.kubernetes.io/zone": f"zone-{i % 3}"})
                 for i in range(nodes)]
    pod_objs = [pod_dict(f"pod-{i}", created=i) for i in range(pods)]
    return node_objs, pod_objs


def sample(seed: int = 0, nodes: int = 12, pods: int = 40) -> tuple[list[dict], list[dict]]:
    """A small mixed cluster and workload exercising every built-in plugin."""
    rng = np.random.default_rng(seed)
    node_objs = []
    for i in range(nodes):
        zone = f"zone-{'abc'[i % 3]}"
        cpu = str(int(rng.choice([2, 4, 8])))
        mem = f"{int(rng.choice([8, 16, 32]))}Gi"
        taints, extra, unsched = None, None, False
        if i == 1:
            taints = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
        if i == 2:
            taints = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
        if i == 3:
            unsched = True
        if i == 4:
            extra = {"nvidia.com/gpu": "4"}
        images = [{"names": ["docker.io/library/nginx:1.27"], "sizeBytes": 190 * 2**20}] \
            if i % 2 == 0 else None
        node_objs.append(node_dict(f"node-{i}", cpu=cpu, memory=mem,
                                   labels={"topology.kubernetes.io/zone": zone,
                                           "node.example.com/generation": str(i % 4)},
                                   taints=taints, extra=extra, unschedulable=unsched,
                                   images=images))
    pod_objs = []
    for i in range(pods):
        kind = i % 8
        spec: dict = {}
        extra = None
        image = "registry.k8s.io/pause:3.10"
        cpu = f"{int(rng.integers(1, 16)) * 100}m"
        mem = f"{int(rng.integers(1, 16)) * 256}Mi"
        if kind == 1:
            spec["nodeSelector"] = {"topology.kubernetes.io/zone": "zone-b"}
        elif kind == 2:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal",
                                    "value": "batch", "effect": "NoSchedule"}]
        elif kind == 3:
            spec["affinity"] = {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "node.example.com/generation",
                                           "operator": "Gt", "values": ["1"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "preference": {"matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In",
                         "values": ["zone-a"]}]}}]}}
        elif kind == 4:
            extra = {"nvidia.com/gpu": "1"}
        elif kind == 5:
            image = "docker.io/library/nginx:1.27"
        elif kind == 6:
            cpu = "6"     # large: fits only on the 8-cpu nodes, or nowhere
        pod_objs.append(pod_dict(f"web-{i}", namespace="shop" if i % 2 else "default",
                                 cpu=cpu, memory=mem, priority=int(rng.choice([0, 0, 100])),
                                 created=i, spec=spec, extra=extra, image=image))
    return node_objs, pod_objs


# ---------------------------------------------------------------------------
# Pod-to-pod workloads, after scheduler_perf's TopologySpreading,
# SchedulingPodAntiAffinity, SchedulingPodAffinity and
# SchedulingPreferredPodAffinity (test/integration/scheduler_perf): nodes in
# 3 zones; ``init`` pods placed first (part of the workload's state), then
# the measured pods.  Approximations: the init pods are scheduled by the
# same scheduler (not created bound), and one namespace is used.
# ---------------------------------------------------------------------------

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _affinity_pod(name: str, created: int, labels: dict, spec: dict) -> dict:
    return pod_dict(name, created=created, labels=labels, spec=spec)


def pod_to_pod(workload: str, nodes: int, pods: int, seed: int = 0):
    """(node dicts, pending pod dicts) for spread | antiaffinity | affinity |
    preferred-affinity (the init pods come first in the pending list)."""
    del seed
    node_objs = [node_dict(f"node-{i}", labels={ZONE: f"zone-{i % 3}"}) for i in range(nodes)]
    out = []
    if workload == "spread":
        sel = {"matchLabels": {"color": "blue"}}
        spec = {"topologySpreadConstraints": [
            {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": sel}]}
        for i in range(pods):
            out.append(_affinity_pod(f"spread-{i}", i, {"color": "blue"}, spec))
    elif workload == "antiaffinity":
        term = {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOST}
        spec = {"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
        for i in range(pods):
            out.append(_affinity_pod(f"anti-{i}", i, {"color": "green"}, spec))
    elif workload == "affinity":
        term = {"labelSelector": {"matchLabels": {"color": "blue"}}, "topologyKey": ZONE}
        spec = {"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
        for i in range(pods):
            out.append(_affinity_pod(f"aff-{i}", i, {"color": "blue"}, spec))
    elif workload == "preferred-affinity":
        term = {"labelSelector": {"matchLabels": {"color": "red"}}, "topologyKey": HOST}
        spec = {"affinity": {"podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term}]}}}
        for i in range(pods):
            out.append(_affinity_pod(f"pref-{i}", i, {"color": "red"}, spec))
    else:
        raise ValueError(f"unknown workload {workload!r}")
    return node_objs, out


# ---------------------------------------------------------------------------
# GPU workload: DGX-like nodes (8 GPUs in two NVLink islands of 4, two NUMA
# nodes of 64 cpu / 512Gi, GPUs 0-3 on NUMA 0 and 4-7 on NUMA 1) and a mix
# of GPU-sharing pods (openb annotations) and whole-GPU pods
# (nvidia.com/gpu), some asking for one NVLink island or a single NUMA node.
# ---------------------------------------------------------------------------

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
    from .quantity import resource_value
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
    from tensorsched.topology.node_topology import ANNO_NODE_TOPOLOGY, dgx_annotation
    n = node_dict(name, cpu="128", memory="1Ti", pods="110", extra={"nvidia.com/gpu": "8"},
                  labels={ZONE: zone, "nvidia.com/gpu.product": GPU_PRODUCT})
    n["metadata"]["annotations"] = {ANNO_NODE_TOPOLOGY: dgx_annotation()}
    return n


def gpu(nodes: int, pods: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(node dicts, pending pod dicts) of the GPU workload (seeded mix)."""
    rng = np.random.default_rng(seed)
    node_objs = [gpu_node(f"dgx-{i}", f"zone-{i % 3}") for i in range(nodes)]
    w = np.array([m[1] for m in GPU_MIX], np.float64)
    kinds = rng.choice(len(GPU_MIX), size=pods, p=w / w.sum())
    out = []
    for i, k in enumerate(kinds):
        kind, _w, cpu, mem, n, milli, place = GPU_MIX[int(k)]
        if kind == "share":
            p = pod_dict(f"gpu-{i}", cpu=cpu, memory=mem, created=i)
            p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": str(milli),
                                            "alibabacloud.com/gpu-count": "1"}
        else:
            p = pod_dict(f"gpu-{i}", cpu=cpu, memory=mem, created=i,
                         extra={"nvidia.com/gpu": str(n)})
        if place:
            p["metadata"].setdefault("annotations", {})[
                "topology.tensorsched.io/gpu-placement"] = place
        out.append(p)
    return node_objs, out
