"""Benchmarks behind ``tensorsched bench``; results are JSON records.

Timing excludes loading and JIT compilation (one warm-up cycle runs first,
on a copy of the state, so the measured run starts from the same cluster).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import platform
import subprocess
import time

import numpy as np

from tensorsched.framework.objects import synthetic
from tensorsched.framework.objects.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

WORKLOADS = ("basic", "spread", "antiaffinity", "affinity", "preferred-affinity",
             "preemption", "preemption-spread", "preemption-antiaffinity", "gpu")


def placements_sha256(bindings) -> str:
    """sha256 over the ordered (pod, node) placements, one 'pod node' line each."""
    h = hashlib.sha256()
    for b in bindings:
        h.update(f"{b.pod} {b.node if b.node is not None else '-'}\n".encode())
    return h.hexdigest()


def machine_info() -> dict:
    info = {"machine": platform.machine(), "processor": platform.processor() or "",
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__}
    try:
        import numba
        info["numba"] = numba.__version__
    except ImportError:   # pragma: no cover
        pass
    return info


def git_commit() -> str:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def basic_config(percentage: int) -> dict:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": percentage}


def run_workload(workload: str, nodes: int, pods: int, backend: str,
                 percentage: int = 100, seed: int = 0) -> dict:
    """Build the workload, warm up, schedule ``pods`` pods, return the record."""
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; choose one of {', '.join(WORKLOADS)}")
    if workload in ("preemption", "preemption-spread", "preemption-antiaffinity"):
        from .preemption import run_preemption
        return run_preemption(nodes, pods, backend, percentage, seed,
                              spread=workload == "preemption-spread",
                              anti=workload == "preemption-antiaffinity")
    config = basic_config(percentage)
    if workload == "basic":
        node_objs, pod_objs = synthetic.basic(nodes, pods, seed)
    elif workload == "gpu":
        node_objs, pod_objs = synthetic.gpu(nodes, pods, seed)
        config = synthetic.gpu_config(percentage)
    else:
        node_objs, pod_objs = synthetic.pod_to_pod(workload, nodes, pods, seed)
    cluster = build_cluster(node_objs, config)
    records = [parse_pod(p) for p in pod_objs]
    sched = Scheduler(cluster, backend, seed)
    warm = parse_pod(synthetic.pod_dict("warm-up"))
    fw = cluster.framework_for(warm, backend)
    # JIT-compile every path outside the timed run: explain, schedule, and the
    # incremental update after a placement (the pod is then removed again).
    fw.run_cycle(cluster.state, warm, seed=seed)
    fw.run_cycle(cluster.state, warm, seed=seed, want_scores=False)
    cluster.state.add_pod(warm, cluster.state.node_name(int(cluster.state.valid_rows()[0])))
    fw.run_cycle(cluster.state, warm, seed=seed, want_scores=False)
    cluster.state.remove_pod(warm.key)
    fw.run_cycle(cluster.state, warm, seed=seed, want_scores=False)
    if workload != "basic" and pod_objs:
        # The workload's own pod shape takes the host-plugin path: compile it too.
        shaped = dict(pod_objs[0], metadata=dict(pod_objs[0]["metadata"], name="warm-up-shaped"))
        shaped = parse_pod(shaped)
        fw.run_cycle(cluster.state, shaped, seed=seed)
        fw.run_cycle(cluster.state, shaped, seed=seed, want_scores=False)
    if workload == "gpu":
        from .gpu import warm_up
        warm_up(cluster, fw, pod_objs, seed)
    order = sched.queue_order(records)
    # The setup's objects are long-lived: freezing them keeps the cyclic GC's
    # full collections, which walk every one of them, out of the timings.
    gc.collect()
    gc.freeze()
    t0 = time.perf_counter()
    bindings = [sched.schedule_one(p) for p in order]
    elapsed = time.perf_counter() - t0
    gc.unfreeze()
    lat = np.array(sched.latencies) * 1e6
    extra = {}
    if workload == "gpu":
        from .gpu import gpu_summary
        extra = gpu_summary(cluster, bindings)
    return {
        "workload": workload, "nodes": nodes, "pods": pods, "backend": backend,
        "percentage_of_nodes_to_score": percentage,
        "pods_per_second": round(pods / elapsed, 1) if elapsed > 0 else None,
        "p50_us": round(float(np.percentile(lat, 50)), 1) if lat.size else None,
        "p99_us": round(float(np.percentile(lat, 99)), 1) if lat.size else None,
        "stages": {k: round(v, 4) for k, v in sched.timer.seconds.items()},
        "scheduled": sum(1 for b in bindings if b.node is not None),
        "placements_sha256": placements_sha256(bindings),
        "seed": seed, "commit": git_commit(), "machine": machine_info(),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **extra,
    }


def write_record(record: dict, path: str | None) -> None:
    text = json.dumps(record, indent=2, sort_keys=True)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")
    print(text)
