"""The ``preemption`` benchmark workload (scheduler_perf's preemption test):
every node is filled with low-priority pods (about 30 per node), then
high-priority pods arrive that fit nowhere without preempting.

Nodes: 4 cpu, 32Gi, 110 pods.  Low pods (priority 0): 130m cpu, 1Gi, 30 per
node with distinct start times (3.9 cpu used, 100m free).  High pods
(priority 1000): 500m cpu, 1Gi, so each needs four victims.  The record has
the basic workload's fields; ``pods_per_second`` counts preemptors placed,
``p50_us``/``p99_us`` are per preempting attempt (cycle + PostFilter +
eviction + bind), ``placements_sha256`` covers placements and victims.

The ``preemption-spread`` variant (``spread=True``): the low pods carry
``app: web`` and so does every preemptor, which also has two DoNotSchedule
spread constraints selecting ``app: web`` (zone maxSkew 1, hostname maxSkew
1), so PodTopologySpread runs on the host during the victim search
(``framework.victims_host``).

The ``preemption-antiaffinity`` variant (``anti=True``): two of the low
pods on every node (k = 0 and 15) carry ``tier: batch``, and every
preemptor has a required pod anti-affinity term against ``tier: batch`` by
hostname, so InterPodAffinity runs on the host during the victim search
and both of a node's batch pods must go with the two newest other pods.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import time

import numpy as np

from tensorsched.framework.objects import synthetic
from tensorsched.framework.objects.manifests import parse_pod
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import run_post_filter
from tensorsched.framework.scheduler.scheduler import Scheduler

LOW_PER_NODE = 30
LOW_PRIORITY = 0
HIGH_PRIORITY = 1000


def preemption_sha256(bindings) -> str:
    """sha256 over 'pod node victim,victim,...' lines, in scheduling order."""
    h = hashlib.sha256()
    for b in bindings:
        h.update(f"{b.pod} {b.node if b.node is not None else '-'} "
                 f"{','.join(b.victims)}\n".encode())
    return h.hexdigest()


SPREAD_LABELS = {"app": "web"}
SPREAD_CONSTRAINTS = [
    {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
     "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": SPREAD_LABELS}},
    {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
     "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": SPREAD_LABELS}},
]


ANTI_LABELS = {"tier": "batch"}
ANTI_BATCH_SLOTS = (0, 15)
ANTI_AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": ANTI_LABELS}, "topologyKey": "kubernetes.io/hostname"}]}}


def build(nodes: int, pods: int, percentage: int, spread: bool = False, anti: bool = False):
    """(cluster, pending high-priority PodRecords); ``spread``: the
    preemption-spread variant (labels and spread constraints); ``anti``: the
    preemption-antiaffinity variant (batch pods, anti-affinity)."""
    labels = dict(SPREAD_LABELS) if spread else None
    high_spec = {"topologySpreadConstraints": SPREAD_CONSTRAINTS} if spread else None
    if anti:
        high_spec = dict(high_spec or {}, affinity=ANTI_AFFINITY)
    from .workloads import basic_config
    node_objs = [synthetic.node_dict(f"node-{i}",
                                     labels={"topology.kubernetes.io/zone": f"zone-{i % 3}"})
                 for i in range(nodes)]
    cluster = build_cluster(node_objs, basic_config(percentage))
    low = cluster.resolve(parse_pod(synthetic.pod_dict("low", cpu="130m", memory="1Gi",
                                                       priority=LOW_PRIORITY, labels=labels)))
    batch = cluster.resolve(parse_pod(synthetic.pod_dict(
        "batch", cpu="130m", memory="1Gi", priority=LOW_PRIORITY,
        labels=dict(labels or {}, **ANTI_LABELS)))) if anti else None
    state = cluster.state
    for i in range(nodes):
        node = f"node-{i}"
        for k in range(LOW_PER_NODE):
            name = f"low-{i}-{k}"
            base = batch if anti and k in ANTI_BATCH_SLOTS else low
            state.add_pod(dataclasses.replace(base, name=name, uid=name, node_name=node,
                                              start_ns=(k * nodes + i) * 1_000_000_000), node)
    high = cluster.resolve(parse_pod(synthetic.pod_dict("high", cpu="500m", memory="1Gi",
                                                        priority=HIGH_PRIORITY, labels=labels,
                                                        spec=high_spec)))
    pending = [dataclasses.replace(high, name=f"high-{j}", uid=f"high-{j}", creation_ns=j)
               for j in range(pods)]
    return cluster, pending


def run_preemption(nodes: int, pods: int, backend: str, percentage: int = 100,
                   seed: int = 0, spread: bool = False, anti: bool = False) -> dict:
    from .workloads import git_commit, machine_info
    cluster, pending = build(nodes, pods, percentage, spread, anti)
    sched = Scheduler(cluster, backend, seed)
    # Warm-up outside the timed run: JIT of the fused pass and the victim
    # kernel, the first full sync of the victim table (a dry run: nothing
    # is deleted).
    warm = dataclasses.replace(pending[0], name="warm-up", uid="warm-up")
    fw = cluster.framework_for(warm, backend)
    result = fw.run_cycle(cluster.state, warm, seed=seed, want_scores=False)
    run_post_filter(cluster, fw, CycleContext(cluster.state, warm, fw), result, seed=seed)
    first = cluster.state.node_name(int(cluster.state.valid_rows()[0]))
    cluster.state.add_pod(warm, first)                  # the incremental path
    fw.run_cycle(cluster.state, warm, seed=seed, want_scores=False)
    cluster.state.remove_pod(warm.key)
    result = fw.run_cycle(cluster.state, warm, seed=seed, want_scores=False)
    run_post_filter(cluster, fw, CycleContext(cluster.state, warm, fw), result, seed=seed)
    order = sched.queue_order(pending)
    # The setup's objects are long-lived: freezing them keeps the cyclic GC's
    # full collections, which walk every one of them, out of the timings.
    gc.collect()
    gc.freeze()
    t0 = time.perf_counter()
    bindings = [sched.schedule_one(p) for p in order]
    elapsed = time.perf_counter() - t0
    gc.unfreeze()
    placed = sum(1 for b in bindings if b.node is not None and b.victims)
    lat = np.array(sched.preemption_latencies) * 1e6
    return {
        "workload": ("preemption-antiaffinity" if anti else
                     "preemption-spread" if spread else "preemption"), "nodes": nodes, "pods": pods, "backend": backend,
        "percentage_of_nodes_to_score": percentage,
        "low_priority_pods": nodes * LOW_PER_NODE,
        "pods_per_second": round(placed / elapsed, 1) if elapsed > 0 else None,
        "p50_us": round(float(np.percentile(lat, 50)), 1) if lat.size else None,
        "p99_us": round(float(np.percentile(lat, 99)), 1) if lat.size else None,
        "stages": {k: round(v, 4) for k, v in sched.timer.seconds.items()},
        "scheduled": sum(1 for b in bindings if b.node is not None),
        "preemptions": sched.preemptions, "evictions": len(sched.evictions),
        "placements_sha256": preemption_sha256(bindings),
        "seed": seed, "commit": git_commit(), "machine": machine_info(),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
