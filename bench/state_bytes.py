"""Bytes of cluster state per bound pod at scale:
``python -m tensorsched.bench.state_bytes``.

10,000 basic nodes filled with 400,000 bound pods (40 a node, the basic
workload's 100m / 500Mi pods parsed as ``schedule_pending`` parses them),
each added with ``ClusterState.add_pod``; the bytes are Python allocations
(tracemalloc) while they are added plus each pod's key string
(``harness.state_bytes_per_pod``).  Per-workload bench records carry the
same figure for 20,000 pods on 100 nodes (cheap enough for every record);
this one is at the scale the state is meant for.

``retained_bytes_per_pod`` is what the process still holds per bound pod
once the caller has let go of the records it parsed: the state plus any
record it keeps (tracemalloc from before parsing to after the records are
dropped).  ``queued_bytes_per_pod`` is the same for pods waiting in a scheduler's
queue (``SchedulingQueue.add_many``) instead of bound.
``manifest_bytes_per_pod`` is the size of the pod objects themselves (the
state and the queue hold a reference to each; the caller made them).
Written to ``bench/results/state-<nodes>x<pods>.json`` with the machine and
commit.
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from pathlib import Path

from tensorsched import synthetic
from tensorsched.framework.scheduler.cluster import build_cluster, pods_from
from tensorsched.framework.scheduler.scheduler import Scheduler

from .harness import peak_rss_bytes, record_stamp, state_bytes_per_pod, write_record

RESULTS = Path(__file__).resolve().parent / "results"


def measure(nodes: int, pods: int) -> dict:
    """The record for ``pods`` basic pods bound round-robin on ``nodes`` nodes."""
    per_pod = _state_bytes(nodes, pods)
    gc.collect()
    retained, manifest = _retained(nodes, pods)
    gc.collect()
    queued, _ = _retained(nodes, pods, "queue")
    return {"workload": "basic", "nodes": nodes, "bound_pods": pods,
            "state_bytes_per_pod": per_pod, "retained_bytes_per_pod": retained,
            "queued_bytes_per_pod": queued,
            "manifest_bytes_per_pod": manifest, "peak_rss_bytes": peak_rss_bytes(),
            **record_stamp(0)}


def _state_bytes(nodes: int, pods: int) -> float:
    """``harness.state_bytes_per_pod`` of the pods parsed, then bound."""
    node_objs, pod_objs = synthetic.workload("basic", nodes, pods, 0)
    cluster = build_cluster(node_objs)
    records = pods_from(pod_objs, cluster.resolve)
    del pod_objs
    target = iter([f"node-{i % nodes}" for i in range(pods)])
    return state_bytes_per_pod(lambda pod: cluster.state.add_pod(pod, next(target)), records)


def _retained(nodes: int, pods: int, into: str = "state") -> tuple[float, float]:
    """(retained, manifest) bytes per pod (module doc): the pods parsed,
    bound round-robin (``into="state"``) or added to a scheduler's queue
    (``"queue"``), and their records dropped."""
    node_objs = synthetic.workload("basic", nodes, 0, 0)[0]
    cluster = build_cluster(node_objs)
    names = [f"node-{i % nodes}" for i in range(pods)]
    queue = Scheduler(cluster, "numpy", 0).queue if into == "queue" else None
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        pod_objs = synthetic.workload("basic", 0, pods, 0)[1]
        made = tracemalloc.get_traced_memory()[0]
        records = pods_from(pod_objs, cluster.resolve)
        if queue is not None:
            queue.add_many(records)
        else:
            add = cluster.state.add_pod
            for pod, name in zip(records, names):
                add(pod, name)
        del records
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return round((kept - made) / pods, 1), round((made - start) / pods, 1)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pods", type=int, default=400_000)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    rec = measure(args.nodes, args.pods)
    write_record(rec, args.output or str(RESULTS / f"state-{args.nodes}x{args.pods}.json"))
    return rec


if __name__ == "__main__":
    main()
