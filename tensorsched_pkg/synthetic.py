"""Seeded synthetic clusters and workloads as manifest dicts, by the names
``tensorsched bench --workload`` takes.

    nodes, pods = ts.synthetic.workload("basic", n_nodes, n_pods, seed)
    cluster = ts.build_cluster(nodes + pods, ts.synthetic.config("basic"))

Pods bound in the workload's initial state (the preemption workloads' low
pods) carry ``spec.nodeName``; the others are pending.  The generators
themselves live with what they exercise: ``framework.objects.synthetic``
(basic, pod-to-pod, preemption, the README sample),
``framework.objects.dra_synthetic`` (DRA: ResourceSlices, DeviceClasses, claim
templates) and ``topology.synthetic`` (GPU).
"""

from __future__ import annotations

from tensorsched.framework.objects.dra_synthetic import dra, dra_gpu
from tensorsched.framework.objects.synthetic import (
    basic,
    node_dict,
    pod_dict,
    pod_to_pod,
    preemption,
    sample,
)
from tensorsched.topology.synthetic import gpu, gpu_config, gpu_node

WORKLOADS = ("basic", "spread", "antiaffinity", "affinity", "preferred-affinity",
             "replicaset", "preemption", "preemption-spread", "preemption-antiaffinity", "gpu",
             "dra", "dra-gpu")
POD_TO_POD = ("spread", "antiaffinity", "affinity", "preferred-affinity", "replicaset")

__all__ = ["WORKLOADS", "workload", "config", "basic", "sample", "pod_to_pod", "preemption",
           "gpu", "gpu_config", "gpu_node", "node_dict", "pod_dict", "dra", "dra_gpu"]


def _check(name: str) -> None:
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose one of {', '.join(WORKLOADS)}")


def workload(name: str, n_nodes: int, n_pods: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(node dicts, pod dicts) of workload ``name`` (one of ``WORKLOADS``)."""
    _check(name)
    if name == "basic":
        return basic(n_nodes, n_pods, seed)
    if name == "gpu":
        return gpu(n_nodes, n_pods, seed)
    if name == "dra":
        return dra(n_nodes, n_pods, seed)
    if name == "dra-gpu":
        return dra_gpu(n_nodes, n_pods, seed)
    if name in POD_TO_POD:
        return pod_to_pod(name, n_nodes, n_pods, seed)
    return preemption(n_nodes, n_pods, seed, variant=name.partition("-")[2])


def config(name: str, percentage: int = 100) -> dict:
    """The KubeSchedulerConfiguration (a dict) workload ``name`` runs with:
    the default profile with ``percentageOfNodesToScore``, plus the GPU
    plugins for ``gpu``."""
    _check(name)
    if name == "gpu":
        return gpu_config(percentage)
    return {"apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": percentage}
