"""The ``preemption`` benchmark workload (scheduler_perf's preemption test):
every node is filled with low-priority pods (about 30 per node), then
high-priority pods arrive that fit nowhere without preempting.

Nodes: 4 cpu, 32Gi, 110 pods.  Low pods (priority 0): 130m cpu, 1Gi, 30 per
node with distinct start times (3.9 cpu used, 100m free).  High pods
(priority 1000): 500m cpu, 1Gi, so each needs four victims.  The record has
the basic workload's fields; ``pods_per_second`` counts preemptors placed,
``p50_us``/``p99_us`` are per preempting attempt (cycle + PostFilter +
eviction + bind), ``cpu_per_attempt_us`` the scheduling thread's CPU time
per attempt (p50, mean; null through the queue, where no attempt is a
call of its own), ``placements_sha256`` covers placements and
victims.
On cuda, ``victim_table_uploads`` counts the device pod table's full
uploads and the node rows sent (warm-up included), and
``victim_device_counters`` the device victim search's launches, copies
each way and their bytes in the timed run (``DeviceVictims.counters``).

The ``preemption-spread`` variant (``spread=True``): the low pods carry
``app: web`` and so does every preemptor, which also has two DoNotSchedule
spread constraints selecting ``app: web`` (zone maxSkew 1, hostname maxSkew
1), so PodTopologySpread runs on the host during the victim search
(``framework.preemption.host_search``).

The ``preemption-antiaffinity`` variant (``anti=True``): two of the low
pods on every node (k = 0 and 15) carry ``tier: batch``, and every
preemptor has a required pod anti-affinity term against ``tier: batch`` by
hostname, so InterPodAffinity runs on the host during the victim search
and both of a node's batch pods must go with the two newest other pods.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from tensorsched.generators import clusters as synthetic
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

from .harness import (
    latency_fields,
    preemption_sha256,
    record_stamp,
    timed_pending_cpu,
    timed_schedule_cpu,
    warm_up_run,
)


def alike(template, **per_pod):
    """A pod of ``template``'s class (a ``PodRecord``): ``per_pod`` sets only
    per-pod fields (name, uid, node_name, start_ns, creation_ns), so the
    copy shares the template's ``PodClass`` and its memos, as the pods
    parsed from one template do (``parsing.pod_templates``); a plain
    ``dataclasses.replace`` starts a class of its own per copy, which a
    parsed workload never pays for."""
    pod = dataclasses.replace(template, **per_pod)
    pod.pod_class = template.pod_class
    return pod


def build(nodes: int, pods: int, percentage: int, variant: str = ""):
    """(cluster, pending high-priority PodRecords) of ``synthetic.preemption``
    (same objects), built from one parsed record per template: parsing
    300,000 low pods one by one would dominate the set-up."""
    low_obj, batch_obj, high_obj = synthetic.preemption_templates(variant)
    node_objs = [synthetic.node_dict(f"node-{i}", labels={synthetic.ZONE: f"zone-{i % 3}"})
                 for i in range(nodes)]
    cluster = build_cluster(node_objs, {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                        "kind": "KubeSchedulerConfiguration",
                                        "percentageOfNodesToScore": percentage})
    low = cluster.resolve(parse_pod(low_obj))
    batch = cluster.resolve(parse_pod(batch_obj)) if batch_obj is not None else None
    state = cluster.state
    for i in range(nodes):
        node = f"node-{i}"
        for k in range(synthetic.LOW_PER_NODE):
            name = f"low-{i}-{k}"
            base = batch if batch is not None and k in synthetic.ANTI_BATCH_SLOTS else low
            start = synthetic.low_pod_start_seconds(i, k, nodes) * 1_000_000_000
            state.add_pod(alike(base, name=name, uid=name, node_name=node, start_ns=start),
                          node)
    high = cluster.resolve(parse_pod(high_obj))
    pending = [alike(high, name=f"high-{j}", uid=f"high-{j}", creation_ns=j)
               for j in range(pods)]
    return cluster, pending


def _cpu_per_attempt(sched) -> list:
    """The scheduling thread's CPU seconds of each ``schedule_one`` call from
    now on (a loaded machine stretches wall time, not this)."""
    one = sched.schedule_one
    out: list = []

    def timed(pod):
        t0 = time.thread_time()
        try:
            return one(pod)
        finally:
            out.append(time.thread_time() - t0)

    sched.schedule_one = timed
    return out


def run_preemption(nodes: int, pods: int, backend: str, percentage: int = 100,
                   seed: int = 0, variant: str = "", progress=None, *,
                   queue: bool = False, batch: bool = True,
                   nominated_overlay: bool = True) -> dict:
    """The record of one preemption run; ``progress(stage)`` after building,
    warming up and scheduling.  ``queue``: the preemptors go through the
    scheduling queue (``schedule_pending``, the scheduler's ``batch`` on or
    off) instead of one ``schedule_one`` call each.  ``nominated_overlay``
    False: every cycle adds the nominated pods to the state (the path
    before the overlay, for before/after records)."""
    progress = progress or (lambda stage: None)
    cluster, pending = build(nodes, pods, percentage, variant)
    progress("built")
    sched = Scheduler(cluster, backend, seed, batch=batch)
    sched.cycle.use_overlay = nominated_overlay
    # Warm-up outside the timed run: JIT of the fused pass and the victim
    # kernel, the first full sync of the victim table (a dry run: nothing
    # is deleted).
    warm = alike(pending[0], name="warm-up", uid="warm-up")
    fw = cluster.framework_for(warm, backend)
    result = fw.run_cycle(cluster.state, warm, seed=seed, want_scores=False)
    fw.run_post_filter(CycleContext(cluster.state, warm, fw), result, cluster.pod_table(), seed=seed)
    first = cluster.state.node_name(int(cluster.state.valid_rows()[0]))
    cluster.state.add_pod(warm, first)                  # the incremental path
    fw.run_cycle(cluster.state, warm, seed=seed, want_scores=False)
    cluster.state.remove_pod(warm.key)
    result = fw.run_cycle(cluster.state, warm, seed=seed, want_scores=False)
    fw.run_post_filter(CycleContext(cluster.state, warm, fw), result, cluster.pod_table(), seed=seed)
    if queue and batch:         # the run kernels a batching queue tries first
        warm_up_run(cluster, fw, warm, seed)
    progress("warmed up")
    mirror = cluster.pod_table().mirror
    counted = mirror.counters() if mirror is not None else None
    cpu_attempts = [] if queue else _cpu_per_attempt(sched)
    if queue:
        bindings, elapsed, cpu = timed_pending_cpu(sched, pending)
    else:
        bindings, elapsed, cpu = timed_schedule_cpu(sched, sched.queue_order(pending))
    progress("scheduled")
    placed = sum(1 for b in bindings if b.node is not None and b.victims)
    mirror = cluster.pod_table().mirror
    uploads = {} if mirror is None else {"victim_table_uploads": {
        "full": mirror.full_uploads, "rows": mirror.rows_uploaded}}
    if mirror is not None:
        # the device victim search's traffic in the timed run
        # (``DeviceVictims.counters``)
        before = counted or {}
        uploads["victim_device_counters"] = {k: v - before.get(k, 0)
                                             for k, v in mirror.counters().items()}
    return {
        "workload": "preemption-" + variant if variant else "preemption",
        "nodes": nodes, "pods": pods, "backend": backend,
        "percentage_of_nodes_to_score": percentage,
        **({"queue": True, "batch": batch} if queue else {}),
        **({} if nominated_overlay else {"nominated_overlay": False}),
        "low_priority_pods": nodes * synthetic.LOW_PER_NODE,
        "pods_per_second": round(placed / elapsed, 1) if elapsed > 0 else None,
        "cpu_seconds": round(cpu, 4),
        **latency_fields(sched.preemption_latencies),
        "cpu_per_attempt_us": {
            "p50": round(float(np.median(cpu_attempts)) * 1e6, 1) if cpu_attempts else None,
            "mean": round(float(np.mean(cpu_attempts)) * 1e6, 1) if cpu_attempts else None},
        "stages": {k: round(v, 4) for k, v in sched.timer.seconds.items()},
        "scheduled": sum(1 for b in bindings if b.node is not None),
        "preemptions": sched.preemptions, "evictions": len(sched.evictions),
        "placed_by": dict(sched.placed_by), "runs_by": dict(sched.runs_by),
        "placements_sha256": preemption_sha256(bindings),
        **uploads,
        **record_stamp(seed),
    }
