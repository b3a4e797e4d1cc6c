"""Small clusters and brute-force answers for the capacity tests."""

from __future__ import annotations

import copy

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "percentageOfNodesToScore": 100}


def bound(name: str, node: str, cpu: str = "500m", memory: str = "512Mi", **kw) -> dict:
    p = pod_dict(name, cpu=cpu, memory=memory, **kw)
    p["spec"]["nodeName"] = node
    return p


def cluster_of(nodes, pods=(), extra=()):
    return build_cluster(list(nodes) + list(pods) + list(extra), CONFIG)


def schedule(objects, pending, backend="numpy", seed=0):
    """schedule_pending of ``pending`` (dicts) on a cluster of ``objects``."""
    cl = build_cluster(list(objects), CONFIG)
    sched = Scheduler(cl, backend, seed)
    bindings, _ = sched.schedule_pending([copy.deepcopy(p) for p in pending])
    return bindings


__all__ = ["CONFIG", "bound", "cluster_of", "schedule", "node_dict", "pod_dict"]
