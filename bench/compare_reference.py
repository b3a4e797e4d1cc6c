"""Basic workload on the scalar reference oracle next to the backends.

The oracle (tests/reference/oracle.py) rebuilds its view of the cluster for
every pod, so it runs at a smaller size; the backends run the same size in
the same process and all placements must hash the same.

    python -m tensorsched.bench.compare_reference --nodes 200 --pods 100 --output bench/results/reference-200x100.json
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from reference.oracle import oracle_explain  # noqa: E402

from tensorsched.generators import clusters as synthetic  # noqa: E402
from tensorsched.framework.scheduler.events import Binding  # noqa: E402

from .harness import git_commit, machine_info, placements_sha256
from .workloads import run_workload

DEFAULT_PROFILE = {
    "filters": ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                "NodePorts", "NodeResourcesFit"],
    "scores": {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
               "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1},
    "args": {},
}


def run_oracle(nodes: int, pods: int, seed: int) -> dict:
    node_objs, pod_objs = synthetic.basic(nodes, pods, seed)
    objects = list(node_objs)
    bindings, lat = [], []
    t0 = time.perf_counter()
    for attempt, pod in enumerate(pod_objs):      # created in order, equal priority
        t = time.perf_counter()
        # Every node is scored (percentageOfNodesToScore 100); the oracle starts
        # at the first node, as the backends do when every node is evaluated.
        out = oracle_explain(objects, pod, DEFAULT_PROFILE, seed=seed, attempt=attempt)
        node = out["selected"]
        bindings.append(Binding(out["pod"], node))
        if node is not None:
            bound = copy.deepcopy(pod)
            bound["spec"]["nodeName"] = node
            objects.append(bound)
        lat.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - t0
    lat_us = np.array(lat) * 1e6
    return {"workload": "basic", "nodes": nodes, "pods": pods, "backend": "oracle",
            "pods_per_second": round(pods / elapsed, 2),
            "p50_us": round(float(np.percentile(lat_us, 50)), 1),
            "p99_us": round(float(np.percentile(lat_us, 99)), 1),
            "placements_sha256": placements_sha256(bindings)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output")
    args = ap.parse_args()
    runs = [run_oracle(args.nodes, args.pods, args.seed)]
    for backend in ("numpy", "numba"):
        r = run_workload("basic", args.nodes, args.pods, backend, 100, args.seed)
        runs.append({k: r[k] for k in ("workload", "nodes", "pods", "backend", "pods_per_second",
                                        "p50_us", "p99_us", "placements_sha256")})
    record = {"runs": runs, "same_placements": len({r["placements_sha256"] for r in runs}) == 1,
              "commit": git_commit(), "machine": machine_info(),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    text = json.dumps(record, indent=2)
    if args.output:
        Path(args.output).write_text(text + "\n")
    print(text)
    return 0 if record["same_placements"] else 1


if __name__ == "__main__":
    sys.exit(main())
