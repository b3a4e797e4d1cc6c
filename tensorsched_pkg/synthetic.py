"""Seeded synthetic clusters and workloads as manifest dicts, by the names
``tensorsched bench --workload`` takes.

    nodes, pods = ts.synthetic.workload("basic", n_nodes, n_pods, seed)
    cluster = ts.build_cluster(nodes + pods, ts.synthetic.config("basic"))

Pods bound in the workload's initial state (the preemption workloads' low
pods) carry ``spec.nodeName``; the others are pending.  The generators
live in ``tensorsched.generators``: ``clusters`` (basic, pod-to-pod,
preemption, the README sample, StatefulSets), ``dra_clusters`` (DRA:
ResourceSlices, DeviceClasses, claim templates) and ``gpu_clusters`` (GPU),
imported on first use: the workload names are read (``tensorsched bench
--help``) without loading them.
"""

from __future__ import annotations

import importlib

from tensorsched.framework.arguments import Arguments, shown

# generator name -> the module that defines it
_GENERATORS = {name: "tensorsched.generators.clusters" for name in (
    "basic", "node_dict", "pod_dict", "pod_to_pod", "preemption", "sample", "statefulsets",
    "unschedulable")}
_GENERATORS.update({name: "tensorsched.generators.dra_clusters" for name in (
    "dra", "dra_gpu")})
_GENERATORS.update({name: "tensorsched.generators.gpu_clusters" for name in (
    "gpu", "gpu_config", "gpu_node")})

WORKLOADS = ("basic", "spread", "antiaffinity", "affinity", "preferred-affinity",
             "replicaset", "preemption", "preemption-spread", "preemption-antiaffinity", "gpu",
             "volumes", "volumes-none", "dra", "dra-gpu", "unschedulable")
POD_TO_POD = ("spread", "antiaffinity", "affinity", "preferred-affinity", "replicaset")

__all__ = ["WORKLOADS", "workload", "config", "basic", "sample", "pod_to_pod", "preemption",
           "statefulsets", "gpu", "gpu_config", "gpu_node", "node_dict", "pod_dict", "dra",
           "dra_gpu", "unschedulable"]


def _check(args: Arguments, name) -> None:
    if name not in WORKLOADS:
        raise args.error("name", f"unknown workload {shown(name)}; choose one of "
                         f"{', '.join(WORKLOADS)}")


def workload(name: str, n_nodes: int, n_pods: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(node dicts, pod dicts) of workload ``name`` (one of ``WORKLOADS``)."""
    args = Arguments("synthetic.workload")
    _check(args, name)
    from tensorsched.generators.clusters import MAX_NODES, MAX_PODS
    n_nodes = args.integer("n_nodes", n_nodes, 1, MAX_NODES)
    n_pods = args.integer("n_pods", n_pods, 0, MAX_PODS)
    seed = args.seed(seed)
    if name in ("basic", "gpu", "dra", "unschedulable"):
        return __getattr__(name)(n_nodes, n_pods, seed)
    if name == "dra-gpu":
        return __getattr__("dra_gpu")(n_nodes, n_pods, seed)
    if name in POD_TO_POD:
        return __getattr__("pod_to_pod")(name, n_nodes, n_pods, seed)
    if name in ("volumes", "volumes-none"):
        # a StatefulSet per zone, with zonal claims or (-none) the same pods without
        return __getattr__("statefulsets")(n_nodes, n_pods, seed, volumes=name == "volumes")
    return __getattr__("preemption")(n_nodes, n_pods, seed, variant=name.partition("-")[2])


def config(name: str, percentage: int = 100) -> dict:
    """The KubeSchedulerConfiguration (a dict) workload ``name`` runs with:
    the default profile with ``percentageOfNodesToScore``, plus the GPU
    plugins for ``gpu``."""
    args = Arguments("synthetic.config")
    _check(args, name)
    percentage = args.integer("percentage", percentage, 0, 100)
    if name == "gpu":
        return __getattr__("gpu_config")(percentage)
    return {"apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": percentage}


def __getattr__(name: str):
    module = _GENERATORS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
