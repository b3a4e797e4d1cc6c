"""Benchmarks behind ``tensorsched bench``; results are JSON records.

Timing excludes loading and JIT compilation: warm-up cycles run first (and
are undone), so the measured run starts from the loaded cluster.
"""

from __future__ import annotations

from tensorsched import synthetic
from tensorsched.framework.objects.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

from . import gpu as G
from .harness import latency_fields, placements_sha256, record_stamp, timed_schedule
from .preemption import run_preemption

WORKLOADS = synthetic.WORKLOADS
BENCH_STAGES = ("built", "warmed up", "scheduled")     # ``progress`` is called after each


def _no_progress(stage: str) -> None:
    return None


def warm_up(cluster, fw, pod_objs, seed: int, shaped: bool) -> None:
    """JIT-compile every path outside the timed run: explain, schedule, and
    the incremental update after a placement (the pod is then removed
    again); with ``shaped``, the workload's own pod shape too (it takes the
    host-plugin path)."""
    state = cluster.state
    warm = parse_pod(synthetic.pod_dict("warm-up"))
    fw.run_cycle(state, warm, seed=seed)
    fw.run_cycle(state, warm, seed=seed, want_scores=False)
    state.add_pod(warm, state.node_name(int(state.valid_rows()[0])))
    fw.run_cycle(state, warm, seed=seed, want_scores=False)
    state.remove_pod(warm.key)
    fw.run_cycle(state, warm, seed=seed, want_scores=False)
    if shaped and pod_objs:
        obj = dict(pod_objs[0], metadata=dict(pod_objs[0]["metadata"], name="warm-up-shaped"))
        rec = parse_pod(obj)
        fw.run_cycle(state, rec, seed=seed)
        fw.run_cycle(state, rec, seed=seed, want_scores=False)


def run_workload(workload: str, nodes: int, pods: int, backend: str,
                 percentage: int = 100, seed: int = 0, progress=_no_progress) -> dict:
    """Build the workload, warm up, schedule ``pods`` pods, return the record;
    ``progress(stage)`` after each of ``BENCH_STAGES``."""
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; choose one of {', '.join(WORKLOADS)}")
    if workload.startswith("preemption"):
        return run_preemption(nodes, pods, backend, percentage, seed,
                              variant=workload.partition("-")[2], progress=progress)
    node_objs, pod_objs = synthetic.workload(workload, nodes, pods, seed)
    cluster = build_cluster(node_objs, synthetic.config(workload, percentage))
    records = [parse_pod(p) for p in pod_objs]
    sched = Scheduler(cluster, backend, seed)
    progress(BENCH_STAGES[0])
    fw = cluster.framework_for(records[0] if records else parse_pod(synthetic.pod_dict("w")),
                               backend)
    warm_up(cluster, fw, pod_objs, seed, shaped=workload != "basic")
    if workload == "gpu":
        G.warm_up(cluster, fw, pod_objs, seed)
    progress(BENCH_STAGES[1])
    bindings, elapsed = timed_schedule(sched, sched.queue_order(records))
    progress(BENCH_STAGES[2])
    extra = G.gpu_summary(cluster, bindings) if workload == "gpu" else {}
    return {
        "workload": workload, "nodes": nodes, "pods": pods, "backend": backend,
        "percentage_of_nodes_to_score": percentage,
        "pods_per_second": round(pods / elapsed, 1) if elapsed > 0 else None,
        **latency_fields(sched.latencies),
        "stages": {k: round(v, 4) for k, v in sched.timer.seconds.items()},
        "scheduled": sum(1 for b in bindings if b.node is not None),
        "placements_sha256": placements_sha256(bindings),
        **record_stamp(seed),
        **extra,
    }
