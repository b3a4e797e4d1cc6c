"""Capacity planning targets: ``python -m tensorsched.bench.capacity``.

- how-many-fit: 100m/500Mi pods into the 10,000-node basic cluster
  (4 cpu / 32Gi / 110 pods per node): 400,000 fit, cpu-bound at 40 per
  node; target <= 10 s wall on numba (the cluster is built before the
  clock starts; the fresh copy the analysis makes is timed);
- nodes-to-add: 10,000 pending pods of four Deployments (250m/512Mi,
  500m/1Gi, 1/2Gi, 2/4Gi) on 1,000 basic nodes already running 20 pods
  each, 8 cpu / 32Gi / 110 pods node template; target <= 30 s.

Written to ``bench/results/capacity-<backend>.json`` with the machine, the
backend and the commit (``--output`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tensorsched.framework.capacity.fit import how_many_fit
from tensorsched.framework.capacity.node_search import nodes_to_add
from tensorsched.generators.clusters import basic, node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster

from .harness import git_commit, machine_info

RESULTS = Path(__file__).resolve().parent / "results"
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "percentageOfNodesToScore": 100}
MIX = (("small", "250m", "512Mi", 4000), ("medium", "500m", "1Gi", 3000),
       ("large", "1", "2Gi", 2000), ("xlarge", "2", "4Gi", 1000))


def fit_case(nodes: int, backend: str, seed: int) -> dict:
    node_objs, _ = basic(nodes, 0)
    cluster = build_cluster(node_objs, CONFIG)
    t0 = time.perf_counter()
    report = how_many_fit(cluster, [pod_dict("cap")], backend=backend, seed=seed)
    wall = time.perf_counter() - t0
    t = report.templates[0]
    return {"case": "how-many-fit", "nodes": nodes, "template": "100m/500Mi",
            "fit": report.total, "expected": 40 * nodes, "nodes_used": len(t.per_node),
            "stop_reason": t.stop_reason, "seconds": round(wall, 3), "target_seconds": 10}


def deployment(name: str, cpu: str, memory: str, replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "bench"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{
                                      "name": "app", "image": "registry.k8s.io/pause:3.10",
                                      "resources": {"requests": {"cpu": cpu,
                                                                 "memory": memory}}}]}}}}


def nodes_case(nodes: int, backend: str, seed: int) -> dict:
    node_objs, _ = basic(nodes, 0)
    bound = []
    for i, n in enumerate(node_objs):
        for j in range(20):
            p = pod_dict(f"run-{i}-{j}", namespace="running", created=j)
            p["spec"]["nodeName"] = n["metadata"]["name"]
            bound.append(p)
    cluster = build_cluster(node_objs + bound, CONFIG)
    workloads = [deployment(*m) for m in MIX]
    template = node_dict("pool", cpu="8", memory="32Gi")
    t0 = time.perf_counter()
    report = nodes_to_add(cluster, workloads, [template], backend=backend, seed=seed)
    wall = time.perf_counter() - t0
    best = report.best
    return {"case": "nodes-to-add", "nodes": nodes, "pods": report.pods,
            "node_template": "8 cpu / 32Gi / 110 pods",
            "nodes_to_add": report.nodes_to_add, "lower_bound": best.lower_bound if best else None,
            "search": best.search if best else None,
            "probes": [p.to_dict() | {"seconds": round(p.seconds, 3)} for p in
                       sorted(best.probes, key=lambda p: p.nodes)] if best else [],
            "seconds": round(wall, 3), "target_seconds": 30}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.capacity",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="numba", choices=("numba", "numpy", "auto"))
    ap.add_argument("--fit-nodes", type=int, default=10_000)
    ap.add_argument("--search-nodes", type=int, default=1_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    # compile (or load the cached) kernels before timing
    how_many_fit(build_cluster(basic(3, 0)[0], CONFIG), [pod_dict("warm")],
                 backend=args.backend, limit=5)
    cases = [fit_case(args.fit_nodes, args.backend, args.seed),
             nodes_case(args.search_nodes, args.backend, args.seed)]
    record = {"benchmark": "capacity", "backend": args.backend, "seed": args.seed,
              "cases": cases, "machine": machine_info(), "commit": git_commit()}
    out = Path(args.output) if args.output else RESULTS / f"capacity-{args.backend}.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    for c in cases:
        print(f"{c['case']}: {c['seconds']}s (target {c['target_seconds']}s) "
              + (f"fit {c['fit']}" if c["case"] == "how-many-fit"
                 else f"nodes to add {c['nodes_to_add']}"))
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
