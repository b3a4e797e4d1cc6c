"""Seeded synthetic DRA clusters and workloads (manifest dicts).

``dra`` follows scheduler_perf's SchedulingWithResourceClaimTemplate: every
node publishes one ResourceSlice of 8 GPUs (driver ``gpu.nvidia.com``, a
pool per node), one DeviceClass selects that driver's GPUs, and every pod
asks one GPU through one ResourceClaimTemplate whose request selects the
GPU model by CEL.

``dra_gpu`` is a mixed GPU cluster as NVIDIA's DRA driver publishes it:
each node has 8 GPUs on 2 NUMA nodes / 4 PCIe roots; on every other node
the last 2 GPUs are split into MIG devices (7 ``1g.10gb`` each).  The pods
ask for one whole GPU (a memory selector with ``quantity``), one MIG
``1g.10gb`` device, or two whole GPUs under one PCIe root (two requests
tied by ``matchAttribute``), in a seeded mix.
"""

from __future__ import annotations

import numpy as np

from .clusters import node_dict, pod_dict

DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
GPU_MODEL = "NVIDIA H100 80GB HBM3"
API = "resource.k8s.io/v1"
GPUS_PER_NODE = 8
MIG_PER_GPU = 7

__all__ = ["dra", "dra_gpu", "device_classes", "node_slice", "claim_template", "claim_pod",
           "GPU_CLASS", "MIG_CLASS", "DRIVER"]


def _cel(expr: str) -> dict:
    return {"cel": {"expression": expr}}


def device_classes() -> list[dict]:
    """The whole-GPU and MIG DeviceClasses."""
    def cls(name: str, kind: str) -> dict:
        return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name},
                "spec": {"selectors": [_cel(f'device.driver == "{DRIVER}" && '
                                            f'device.attributes["{DRIVER}"].type == "{kind}"')]}}
    return [cls(GPU_CLASS, "gpu"), cls(MIG_CLASS, "mig")]


def _gpu(i: int, numa_nodes: int = 2, roots: int = 4) -> dict:
    return {"name": f"gpu-{i}",
            "attributes": {"type": {"string": "gpu"}, "productName": {"string": GPU_MODEL},
                           "index": {"int": i},
                           "numaNode": {"int": i * numa_nodes // GPUS_PER_NODE},
                           "pcieRoot": {"string": f"pci-{i * roots // GPUS_PER_NODE}"},
                           "driverVersion": {"version": "580.65.6"}},
            "capacity": {"memory": {"value": "80Gi"}}}


def _mig(gpu: int, k: int) -> dict:
    return {"name": f"gpu-{gpu}-mig-1g10gb-{k}",
            "attributes": {"type": {"string": "mig"}, "profile": {"string": "1g.10gb"},
                           "parentIndex": {"int": gpu}, "productName": {"string": GPU_MODEL},
                           "numaNode": {"int": gpu * 2 // GPUS_PER_NODE}},
            "capacity": {"memory": {"value": "10Gi"}}}


def node_slice(node: str, mig_gpus: int = 0) -> dict:
    """The ResourceSlice of ``node``: 8 GPUs, the last ``mig_gpus`` of them
    published as MIG devices instead."""
    devices = [_gpu(i) for i in range(GPUS_PER_NODE - mig_gpus)]
    for g in range(GPUS_PER_NODE - mig_gpus, GPUS_PER_NODE):
        devices.extend(_mig(g, k) for k in range(MIG_PER_GPU))
    return {"apiVersion": API, "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def claim_template(name: str, requests: list[dict], constraints: list[dict] | None = None,
                   namespace: str = "default") -> dict:
    devices: dict = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": API, "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": devices}}}


def _request(name: str, cls: str, selectors: list[str] = (), count: int = 1) -> dict:
    exactly: dict = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [_cel(s) for s in selectors]
    return {"name": name, "exactly": exactly}


def claim_pod(name: str, template: str, created: int = 0, cpu: str = "100m",
              memory: str = "500Mi") -> dict:
    """A pod whose one claim ``gpu`` comes from ``template``."""
    pod = pod_dict(name, cpu=cpu, memory=memory, created=created,
                   spec={"resourceClaims": [{"name": "gpu",
                                             "resourceClaimTemplateName": template}]})
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def _nodes(n: int) -> list[dict]:
    return [node_dict(f"node-{i}", cpu="64", memory="512Gi",
                      labels={"topology.kubernetes.io/zone": f"zone-{i % 3}",
                              "nvidia.com/gpu.present": "true"}) for i in range(n)]


def dra(nodes: int, pods: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """SchedulingWithResourceClaimTemplate: (nodes + DRA objects, pending pods)."""
    del seed    # identical nodes and pods
    template = claim_template("one-gpu", [_request(
        "gpu", GPU_CLASS, [f'device.attributes["{DRIVER}"].productName == "{GPU_MODEL}"'])])
    objs = _nodes(nodes) + device_classes()[:1] + [template]
    objs += [node_slice(f"node-{i}") for i in range(nodes)]
    return objs, [claim_pod(f"pod-{i}", "one-gpu", created=i) for i in range(pods)]


DRA_GPU_TEMPLATES = ("one-gpu", "one-mig", "two-gpus-one-root")


def dra_gpu_templates() -> list[dict]:
    """Whole GPU with >= 40Gi, one MIG 1g.10gb, two GPUs under one PCIe root."""
    big = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
    return [
        claim_template("one-gpu", [_request("gpu", GPU_CLASS, [big])]),
        claim_template("one-mig", [_request(
            "mig", MIG_CLASS, [f'device.attributes["{DRIVER}"].profile == "1g.10gb"'])]),
        claim_template("two-gpus-one-root",
                       [_request("a", GPU_CLASS), _request("b", GPU_CLASS)],
                       [{"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/pcieRoot"}]),
    ]


def dra_gpu(nodes: int, pods: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """Whole GPUs, MIG devices and NUMA/PCIe-aligned pairs: (objects, pending pods).
    Pods ask one GPU (50%), one MIG device (30%) or an aligned pair (20%)."""
    rng = np.random.default_rng(seed)
    objs = _nodes(nodes) + device_classes() + dra_gpu_templates()
    objs += [node_slice(f"node-{i}", mig_gpus=2 if i % 2 else 0) for i in range(nodes)]
    kinds = rng.choice(len(DRA_GPU_TEMPLATES), size=pods, p=[0.5, 0.3, 0.2])
    return objs, [claim_pod(f"pod-{i}", DRA_GPU_TEMPLATES[k], created=i)
                  for i, k in enumerate(kinds.tolist())]
