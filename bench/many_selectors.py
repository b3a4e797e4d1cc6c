"""Spread and anti-affinity pods of many apps on a bound cluster, through
the queue: milliseconds a pod.

``nodes`` nodes (64 cpu, 256Gi, four zones) each run 20 bound pods; pod k
belongs to app ``k % apps``.  Every pod, bound or pending, carries its
app's label, a DoNotSchedule zone spread constraint and a preferred
hostname anti-affinity term selecting its app, so each app is two count
keys of the pod-to-pod plugins' index: with more than 64 apps its LRU of
128 keys cannot hold them all, and a pending pod of an app whose keys were
dropped has them counted again from the bound pods.

    python -m tensorsched.bench.many_selectors --nodes 2000 --apps 200 --pods 400
"""

from __future__ import annotations

import sys
import time

from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict

from .harness import placements_sha256, record_stamp, sized_main

ZONE = "topology.kubernetes.io/zone"
BOUND_PER_NODE = 20
WARM_UP = 5


def _spec(app: str) -> dict:
    select = {"matchLabels": {"app": app}}
    return {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                           "whenUnsatisfiable": "DoNotSchedule",
                                           "labelSelector": select}],
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                   "labelSelector": select}}]}}}


def run(nodes: int, apps: int, pods: int, backend: str = "numba") -> dict:
    """The record: ``ms_per_pod`` over ``pods`` pending pods (the first
    ``WARM_UP`` more scheduled before, untimed), ``placements_sha256``."""
    objs = [node_dict(f"n{i}", cpu="64", memory="256Gi", labels={ZONE: f"z{i % 4}"})
            for i in range(nodes)]
    for k in range(nodes * BOUND_PER_NODE):
        app = f"app{k % apps}"
        objs.append(pod_dict(f"b{k}", cpu="100m", memory="100Mi", labels={"app": app},
                             spec=dict(_spec(app), nodeName=f"n{k // BOUND_PER_NODE}")))
    sched = Scheduler(build_cluster(objs, None), backend, 0)
    pending = [pod_dict(f"q{i}", cpu="100m", memory="100Mi", labels={"app": f"app{i % apps}"},
                        spec=_spec(f"app{i % apps}")) for i in range(WARM_UP + pods)]
    for obj in pending[:WARM_UP]:
        sched.add_pod(obj)
    sched.run_until_idle()
    for obj in pending[WARM_UP:]:
        sched.add_pod(obj)
    t0 = time.perf_counter()
    bindings = sched.run_until_idle()
    elapsed = time.perf_counter() - t0
    return {"bench": "spread and anti-affinity pods of many apps through the queue, ms a pod",
            "nodes": nodes, "apps": apps, "pods": pods, "backend": backend,
            "bound_pods": nodes * BOUND_PER_NODE,
            "placed": sum(1 for b in bindings if b.node is not None),
            "ms_per_pod": round(elapsed / pods * 1e3, 3),
            "placements_sha256": placements_sha256(bindings), **record_stamp(0)}


def main(argv=None) -> int:
    return sized_main(argv, __doc__, "python -m tensorsched.bench.many_selectors", run,
                      {"nodes": 2000, "apps": 200, "pods": 400},
                      {"backend": ("numba", ("numpy", "numba", "cuda"))})


if __name__ == "__main__":
    sys.exit(main())
