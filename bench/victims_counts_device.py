"""The device victim search on counts: its traffic per preemptor, counted.

The ``preemption-spread`` and ``preemption-antiaffinity`` workloads on the
cuda backend (under Numba's CUDA simulator without a GPU: the counts are
the device's, the times are not), once with the search on counts on the
device (``evaluator.DEVICE_ON_COUNTS``) and once the path before it (the
device pre-pass, then the search on counts on the CPU), and on numba;
the record holds, per preemptor, kernels launched, copies each way and
their bytes (``DeviceVictims.counters`` over the timed run), the counts
kernel's argument count, and the placements digests (all must agree).

``nominated``: on ``auto`` (a GPU assumed present), one preemptor nominated
to n0, a second one's attempt on N nodes: the bytes its device search sends
up, less its visiting order (8 a node), at several N; before, the lowered
allocatable [N, R] int64 went up whole (8 N R bytes, the removed
``allocatable_from``).

python -m tensorsched.bench.victims_counts_device [--nodes 300] [--pods 20]
        [--output bench/results/victims-counts-device-cudasim-300.json]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import time

from tensorsched.bench.harness import git_commit, machine_info
from tensorsched.bench.preemption import run_preemption
from tensorsched.framework.preemption import evaluator
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels._deps import gpu_present
from tensorsched.kernels.fused import backends as fused_backends

VARIANTS = ("spread", "antiaffinity")


def _kernel_arguments() -> int:
    """The counts kernel's arguments at launch (the three node packs three)."""
    from tensorsched.kernels.victims.device import counts_kernel
    return len(inspect.signature(counts_kernel().py_func).parameters)


def _one(variant: str, nodes: int, pods: int, backend: str, on_device: bool) -> dict:
    evaluator.DEVICE_ON_COUNTS = on_device
    try:
        rec = run_preemption(nodes, pods, backend, variant=variant)
    finally:
        evaluator.DEVICE_ON_COUNTS = True
    counters = rec.get("victim_device_counters") or {}
    n = max(rec["preemptions"], 1)
    return {"preemptions": rec["preemptions"], "placements_sha256": rec["placements_sha256"],
            "cpu_seconds": rec["cpu_seconds"], "p50_us": rec.get("p50_us"),
            "victim_device_counters": counters,
            "per_preemptor": {k: round(v / n, 2) for k, v in counters.items()}}


def nominated_traffic(fillers: int) -> dict:
    """The second preemptor's device traffic with the first nominated
    (``tests/framework/preemption/test_victims_nominated_device.py``'s
    cluster plus ``fillers`` empty 100m nodes)."""

    def bound(name, cpu, start):
        d = pod_dict(name, cpu=cpu, spec={"nodeName": "n0"})
        d["status"] = {"startTime": f"2024-01-01T00:00:{start:02d}Z"}
        return d
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler", "plugins": {
               "multiPoint": {"disabled": [{"name": "*"}]},
               "queueSort": {"enabled": [{"name": "PrioritySort"}]},
               "preFilter": {"enabled": [{"name": "NodeResourcesFit"}]},
               "filter": {"enabled": [{"name": "NodeResourcesFit"}]},
               "postFilter": {"enabled": [{"name": "DefaultPreemption"}]},
               "bind": {"enabled": [{"name": "DefaultBinder"}]}}}]}
    objs = [node_dict("n0", cpu="1"), bound("low-a", "600m", 0), bound("low-b", "300m", 1)]
    objs += [node_dict(f"f{i}", cpu="100m") for i in range(fillers)]
    real = fused_backends.gpu_present
    fused_backends.gpu_present = lambda: True
    try:
        sched = Scheduler(build_cluster(objs, cfg), "auto", 0, termination_grace_seconds=30)
        sched.add_pod(pod_dict("high", cpu="600m", priority=100))
        sched.schedule_one()
        mirror = sched.cluster.pod_table().mirror
        before = mirror.counters()
        sched.add_pod(pod_dict("mid", cpu="300m", priority=50))
        b = sched.schedule_one()
    finally:
        fused_backends.gpu_present = real
    st = sched.cluster.state
    n, r = st.num_nodes, len(st.resources)
    up = mirror.counters()["bytes_uploaded"] - before["bytes_uploaded"]
    return {"nodes": n, "resources": r, "bytes_uploaded": up,
            "bytes_uploaded_less_visiting_order": up - 8 * n,
            "whole_lowered_allocatable_before": 8 * n * r,
            "victims": list(b.victims), "nominated_node": b.nominated_node}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--pods", type=int, default=20)
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    out = {}
    for variant in VARIANTS:
        got = {"device_on_counts": _one(variant, a.nodes, a.pods, "cuda", True),
               "host_on_counts_before": _one(variant, a.nodes, a.pods, "cuda", False),
               "numba": _one(variant, a.nodes, a.pods, "numba", True)}
        got["same_placements"] = len({v["placements_sha256"] for v in got.values()}) == 1
        out["preemption-" + variant] = got
    nominated = [nominated_traffic(f) for f in (40, 160, 640, 2560)]
    device = "gpu" if gpu_present() else "numba cuda simulator"
    record = {"experiment": "the device victim search on counts: traffic a preemptor, "
                            "against the device pre-pass + CPU search on counts (module doc)",
              "backend": "cuda", "device": device, "nodes": a.nodes, "pods": a.pods,
              "counts_kernel_arguments": _kernel_arguments(), "workloads": out,
              "nominated": nominated,
              "note": "times under the simulator are not device times" if not gpu_present()
              else "", "commit": git_commit(), "machine": machine_info(),
              "load_after": list(os.getloadavg()),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                    f"victims-counts-device-"
                                    f"{'gpu' if gpu_present() else 'cudasim'}-{a.nodes}.json")
    with open(dest, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps({w: {k: v[k]["per_preemptor"] for k in ("device_on_counts",
                                                              "host_on_counts_before")}
                      for w, v in out.items()}, indent=1))
    print({w: v["same_placements"] for w, v in out.items()})
    print([(x["nodes"], x["bytes_uploaded_less_visiting_order"],
            x["whole_lowered_allocatable_before"]) for x in nominated])
    return record


if __name__ == "__main__":
    main()
