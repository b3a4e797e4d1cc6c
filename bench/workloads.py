"""Benchmarks behind ``tensorsched bench``; results are JSON records.

Timing excludes loading and JIT compilation: warm-up cycles run first (and
are undone), so the measured run starts from the loaded cluster.
"""

from __future__ import annotations

import time

from tensorsched import synthetic
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster, pod_columns_from, pods_from
from tensorsched.framework.scheduler.scheduler import Scheduler

from . import gpu as BG
from .harness import (
    latency_fields,
    peak_rss_bytes,
    placements_sha256,
    record_stamp,
    rss_bytes,
    state_bytes_per_pod,
    timed_pending_clocks,
    warm_up_run,
)
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
                 percentage: int = 100, seed: int = 0, progress=_no_progress,
                 batch: bool = True, remember_failures: bool = True) -> dict:
    """Build the workload, warm up, then add ``pods`` pods to the scheduling
    queue and run the scheduler until idle (what scheduler_perf measures);
    return the record.  ``progress(stage)`` after each of ``BENCH_STAGES``;
    ``batch``: runs of alike pods in one compiled call;
    ``remember_failures``: the scheduler's failure memory."""
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; choose one of {', '.join(WORKLOADS)}")
    if workload.startswith("preemption"):
        return run_preemption(nodes, pods, backend, percentage, seed,
                              variant=workload.partition("-")[2], progress=progress)
    node_objs, pod_objs = synthetic.workload(workload, nodes, pods, seed)
    cluster = build_cluster(node_objs, synthetic.config(workload, percentage))
    # parsed as schedule_pending parses Pod dicts (one parse and one
    # priority resolution per template, pods as columns)
    pending = pod_columns_from(pod_objs, cluster.resolve)
    sched = Scheduler(cluster, backend, seed, batch=batch, remember_failures=remember_failures)
    progress(BENCH_STAGES[0])
    fw = cluster.framework_for(pending[0] if pending else parse_pod(synthetic.pod_dict("w")),
                               backend)
    warm_up(cluster, fw, pod_objs, seed, shaped=workload != "basic")
    if workload == "gpu":
        BG.warm_up(cluster, fw, pod_objs, seed)
    if batch and pending:
        warm_up_run(cluster, fw, pending[0], seed)
    progress(BENCH_STAGES[1])
    # when the first FailedScheduling went out (wall and process CPU seconds)
    failed_at: list[tuple] = []
    if workload == "unschedulable":
        sched.subscribe("FailedScheduling", lambda e: failed_at.append(
            (time.perf_counter(), time.process_time())) if not failed_at else None)
    rss0 = rss_bytes()
    counted = device_counters(fw.backend)
    # the end clocks are the run's own: the FailedScheduling instant is
    # inside the run, so the time after it is never longer than the run
    bindings, (t0, c0), (ended, cpu1) = timed_pending_clocks(sched, pending)
    elapsed, cpu = ended - t0, cpu1 - c0
    rss1 = rss_bytes()
    progress(BENCH_STAGES[2])
    extra = BG.gpu_summary(cluster, bindings) if workload == "gpu" else {}
    if workload == "unschedulable":
        extra = unschedulable_summary(sched, pods, elapsed, ended - failed_at[0][0],
                                      cpu1 - failed_at[0][1]) if failed_at else {}
    counted = {k: v - counted[k] for k, v in device_counters(fw.backend).items()}
    runs = sched.run_lengths
    return {
        "workload": workload, "nodes": nodes, "pods": pods, "backend": fw.backend_name,
        **({"requested_backend": backend} if backend != fw.backend_name else {}),
        "percentage_of_nodes_to_score": percentage, "batch": batch,
        "remember_failures": remember_failures,
        "pods_per_second": round(pods / elapsed, 1) if elapsed > 0 else None,
        # the process's CPU seconds in the timed run (the machine is shared:
        # wall seconds stretch with its load)
        "cpu_seconds": round(cpu, 4),
        "mean_run_length": round(sum(runs) / len(runs), 1) if runs else 1.0,
        "compiled_runs": len(runs),
        # pods and calls per placement path (``metrics.PLACEMENT_PATHS``)
        "placed_by": dict(sched.placed_by), "runs_by": dict(sched.runs_by),
        **latency_fields(sched.latencies),
        "stages": {k: round(v, 4) for k, v in sched.timer.seconds.items()},
        "scheduled": sum(1 for b in bindings if b.node is not None),
        "placements_sha256": placements_sha256(bindings),
        "peak_rss_bytes": peak_rss_bytes(),
        "rss_bytes_per_pod": round((rss1 - rss0) / max(pods, 1), 1),
        "state_bytes_per_pod": _state_bytes_per_pod(),
        **record_stamp(seed),
        # the cuda backend's launches and copies in the timed run
        **({"device_counters": counted} if counted else {}),
        **extra,
    }


# the cuda backend's counters (``CudaBackend``): kernels launched, row cache
# rows copied back, rows recomputed, node rows uploaded, the copies for them
# and their bytes; the device runs' rows recomputed, keys recomputed, full
# rescans and pods; the placement cycles whose host filters the device pick
# answered and the domain sums those copied up
DEVICE_COUNTERS = ("launches", "rows_downloaded", "rows_recomputed", "rows_uploaded", "copies",
                   "bytes_uploaded", "run_rows_recomputed", "run_rows_rekeyed",
                   "run_full_scans", "run_pods", "rule_picks", "domain_sums_uploaded")


def device_counters(backend) -> dict:
    """``DEVICE_COUNTERS`` of ``backend`` now (0 where it keeps none; {} off
    the device: a backend that launches no kernels, whatever else it counts)."""
    if not hasattr(backend, "launches"):
        return {}
    return {k: int(getattr(backend, k, 0)) for k in DEVICE_COUNTERS}


def unschedulable_summary(sched, pods: int, elapsed: float, after_first: float,
                          after_first_cpu: float) -> dict:
    """What the ``unschedulable`` workload measures, in microseconds: the
    first failure's cycle (filter, DefaultPreemption's dry run, the
    diagnosis), everything until its FailedScheduling event (the queue
    filled, a compiled run tried first when batching), the time per pod of
    the others (``after_first`` seconds from that event to the end: all the
    queue and the loop do for them; ``after_first_cpu``: the same in process
    CPU seconds), and how many were answered from remembered failures."""
    first = sched.latencies[0] if sched.latencies else 0.0
    memory = sched.failure_memory
    return {"first_failure_cycle_us": round(first * 1e6, 1),
            "first_failure_us": round((elapsed - after_first) * 1e6, 1),
            "after_first_us_per_pod": (round(after_first / (pods - 1) * 1e6, 2)
                                       if pods > 1 else None),
            "after_first_cpu_us_per_pod": (round(after_first_cpu / (pods - 1) * 1e6, 2)
                                           if pods > 1 else None),
            "failures_remembered": memory.hits if memory is not None else 0}


def _state_bytes_per_pod(n: int = 20000) -> float:
    """``harness.state_bytes_per_pod`` for basic pods bound on 100 nodes."""
    node_objs, pod_objs = synthetic.workload("basic", 100, n, 0)
    cluster = build_cluster(node_objs)
    # parsed as schedule_pending parses Pod dicts: one parse and one priority
    # resolution per template
    records = pods_from(pod_objs, cluster.resolve)
    names = [f"node-{i % 100}" for i in range(n)]
    it = iter(names)
    return state_bytes_per_pod(lambda pod: cluster.state.add_pod(pod, next(it)), records)
