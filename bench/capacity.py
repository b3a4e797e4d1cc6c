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

``--compare``: capacity probes batched (the node-local kernel) against one
Scheduler per probe, the same question both ways (first how-many-fit at
``--fit-nodes``, one template, against the Scheduler's fill), CPU seconds and wall
seconds of each with the load average around it, and whether the two
reports' documents are equal: nodes-to-add as above at ``--compare-nodes``
existing nodes (default 1,000 and 5,000), and drain on a 1,000-node
cluster (20 pods a node; candidates its first ``--drain-candidates``
nodes: each on its own, then the greedy set), roomy (they can go) and full
(half as many candidates; none can go: each node's reason is the
Scheduler's message, from the batch's own diagnosis batched, from a
Scheduler per node per probe), and on a tight 30-node cluster (10
candidates, every subset: none can go).  Written to
``bench/results/capacity-batch-<backend>.json``.

``--fit-multi``: how-many-fit of three templates (100m/500Mi, 500m/1Gi,
1/2Gi) on the ``--fit-nodes`` basic cluster, round robin until each
stops, and the same templates as replicas that fit (20,000 / 10,000 /
5,000) and that do not (60,000 / 30,000 / 25,000): batched (the
node-local kernel) and on the Scheduler (``batch=False``) in alternating
runs (``--runs`` each), CPU and wall seconds of every run with the load
average before it, the documents and the progress totals of all runs
equal (asserted).  Written to ``bench/results/capacity-fit-multi-<backend>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from tensorsched.framework.capacity.drain import removable_nodes
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


def running_cluster(nodes: int, per_node: int = 20, big_every: int = 0):
    """The basic cluster with ``per_node`` pods running on each node
    (100m/500Mi; every ``big_every``-th of them 1 cpu)."""
    node_objs, _ = basic(nodes, 0)
    bound = []
    for i, n in enumerate(node_objs):
        for j in range(per_node):
            cpu = "1" if big_every and j % big_every == 0 else "100m"
            p = pod_dict(f"run-{i}-{j}", namespace="running", created=j, cpu=cpu)
            p["spec"]["nodeName"] = n["metadata"]["name"]
            bound.append(p)
    return node_objs, build_cluster(node_objs + bound, CONFIG)


def nodes_case(nodes: int, backend: str, seed: int) -> dict:
    _node_objs, cluster = running_cluster(nodes)
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


def _both(run) -> dict:
    """``run(batch)`` batched, then per probe: CPU and wall seconds, the
    load average before each, the path taken, the documents equal."""
    out = {}
    docs = []
    for batch in (True, False):
        load = os.getloadavg()
        c0, t0 = time.process_time(), time.perf_counter()
        report = run(batch)
        out["batch" if batch else "per_probe"] = {
            "cpu_seconds": round(time.process_time() - c0, 3),
            "wall_seconds": round(time.perf_counter() - t0, 3),
            "load_before": [round(x, 2) for x in load],
            "path": getattr(report, "probe_path", "")}
        docs.append(report.to_dict())
    out["documents_equal"] = docs[0] == docs[1]
    out["cpu_ratio"] = round(out["per_probe"]["cpu_seconds"]
                             / max(out["batch"]["cpu_seconds"], 1e-9), 2)
    return out, docs[0]


def fit_compare(nodes: int, backend: str, seed: int) -> dict:
    """how-many-fit (``fit_case``'s question) batched against the Scheduler."""
    cluster = build_cluster(basic(nodes, 0)[0], CONFIG)
    got, doc = _both(lambda batch: how_many_fit(cluster, [pod_dict("cap")], backend=backend,
                                                seed=seed, batch=batch))
    for side in ("batch", "per_probe"):
        got[side]["path"] = "batched" if side == "batch" else "Scheduler"
    return {"case": "how-many-fit", "nodes": nodes, "fit": doc["status"]["total"], **got}


MULTI = (("small", "100m", "500Mi"), ("medium", "500m", "1Gi"), ("large", "1", "2Gi"))


def _alternating(run, runs: int) -> dict:
    """``run(batch)`` (a report and its progress total) batched, then on
    the Scheduler, ``runs`` times: each run's CPU and wall seconds and the
    load average before it; every run's document and total equal."""
    out = {"batch": [], "scheduler": []}
    answers = []
    for _ in range(runs):
        for batch in (True, False):
            load = os.getloadavg()
            c0, t0 = time.process_time(), time.perf_counter()
            report, settled = run(batch)
            out["batch" if batch else "scheduler"].append({
                "cpu_seconds": round(time.process_time() - c0, 3),
                "wall_seconds": round(time.perf_counter() - t0, 3),
                "load_before": [round(x, 2) for x in load]})
            answers.append((report.to_dict()["status"], settled))
    assert all(a == answers[0] for a in answers), "batched and Scheduler answers differ"
    best = {side: min(r["cpu_seconds"] for r in rs) for side, rs in out.items()}
    return {"runs": out, "min_cpu_seconds": best, "documents_equal": True,
            "progress_equal": True, "cpu_ratio": round(best["scheduler"]
                                                       / max(best["batch"], 1e-9), 2)}, answers[0]


def fit_multi_compare(nodes: int, backend: str, seed: int, runs: int) -> list[dict]:
    """Three templates' fill and two replica sets, batched against the
    Scheduler (the module doc's ``--fit-multi``)."""
    cluster = build_cluster(basic(nodes, 0)[0], CONFIG)
    templates = [pod_dict(n, cpu=c, memory=m) for n, c, m in MULTI]

    def ask(**kw):
        def run(batch):
            settled = []
            report = how_many_fit(cluster, templates, backend=backend, seed=seed, batch=batch,
                                  progress=settled.append, **kw)
            return report, sum(settled)
        return run

    cases = []
    for label, replicas in (("fill", None), ("replicas-fit", [20_000, 10_000, 5_000]),
                            ("replicas-short", [60_000, 30_000, 25_000])):
        got, (status, settled) = _alternating(ask(replicas=replicas), runs)
        key = "count" if replicas is None else "scheduled"
        cases.append({"case": f"how-many-fit-{label}", "nodes": nodes,
                      "templates": ["/".join(t[1:]) for t in MULTI], "replicas": replicas,
                      "placed": [t[key] for t in status["templates"]],
                      "fits": status.get("fits"), "progress_total": settled, **got})
    return cases


def compare_cases(backend: str, seed: int, search_nodes, drain_candidates: int) -> list[dict]:
    cases = []
    workloads = [deployment(*m) for m in MIX]
    template = node_dict("pool", cpu="8", memory="32Gi")
    for nodes in search_nodes:
        _objs, cluster = running_cluster(nodes)
        got, doc = _both(lambda batch: nodes_to_add(cluster, workloads, [template],
                                                    backend=backend, seed=seed, batch=batch))
        st = doc["status"]
        cases.append({"case": "nodes-to-add", "nodes": nodes, "pods": doc["spec"]["pods"],
                      "nodes_to_add": st["nodesToAdd"],
                      "probes": len(st["nodeTemplates"][0]["probes"]), **got})
    # roomy (2 of 4 cpu used: the candidates' pods move) and full (3.8 of 4:
    # none can go, every node's reason a message the Scheduler gives)
    for label, big, count in (("roomy", 0, drain_candidates), ("full", 10, drain_candidates // 2)):
        objs, cluster = running_cluster(1000, per_node=20, big_every=big)
        names = [n["metadata"]["name"] for n in objs[:count]]
        got, doc = _both(lambda batch: removable_nodes(cluster, nodes=names, backend=backend,
                                                       seed=seed, batch=batch))
        cases.append({"case": f"drain-{label}", "nodes": 1000, "candidates": len(names),
                      "search": doc["status"]["removableSet"]["search"],
                      "removable": len(doc["status"]["removable"]),
                      "removable_set": len(doc["status"]["removableSet"]["nodes"]), **got})
    objs, cluster = running_cluster(30, per_node=7, big_every=3)
    names = [n["metadata"]["name"] for n in objs[:10]]
    got, doc = _both(lambda batch: removable_nodes(cluster, nodes=names, backend=backend,
                                                   seed=seed, batch=batch, exact_limit=10))
    cases.append({"case": "drain-exact", "nodes": 30, "candidates": len(names),
                  "search": doc["status"]["removableSet"]["search"],
                  "removable": len(doc["status"]["removable"]),
                  "removable_set": len(doc["status"]["removableSet"]["nodes"]), **got})
    return cases


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.capacity",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="numba", choices=("numba", "numpy", "auto", "cuda"))
    ap.add_argument("--fit-nodes", type=int, default=10_000)
    ap.add_argument("--search-nodes", type=int, default=1_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default=None)
    ap.add_argument("--compare", action="store_true",
                    help="probes batched against per probe (see the module doc)")
    ap.add_argument("--compare-nodes", type=int, nargs="+", default=[1000, 5000])
    ap.add_argument("--drain-candidates", type=int, default=50)
    ap.add_argument("--fit-multi", action="store_true",
                    help="several templates and replicas, batched against the Scheduler")
    ap.add_argument("--runs", type=int, default=2, help="alternating runs of --fit-multi")
    args = ap.parse_args(argv)
    # compile (or load the cached) kernels before timing
    how_many_fit(build_cluster(basic(3, 0)[0], CONFIG), [pod_dict("warm")],
                 backend=args.backend, limit=5)
    if args.fit_multi:
        load0 = [round(x, 2) for x in os.getloadavg()]
        cases = fit_multi_compare(args.fit_nodes, args.backend, args.seed, args.runs)
        record = {"benchmark": "capacity-fit-multi", "backend": args.backend,
                  "seed": args.seed, "cases": cases, "machine": machine_info(),
                  "commit": git_commit(), "load_before": load0,
                  "load_after": [round(x, 2) for x in os.getloadavg()]}
        out = _write_record(record, args, "capacity-fit-multi")
        for c in cases:
            print(f"{c['case']} {c['nodes']} nodes: placed {c['placed']}, batch "
                  f"{c['min_cpu_seconds']['batch']} CPU s, Scheduler "
                  f"{c['min_cpu_seconds']['scheduler']} CPU s ({c['cpu_ratio']}x)")
        print(f"wrote {out}")
        return record
    if args.compare:
        # the batched kernel compiled (or loaded) before timing too
        nodes_to_add(build_cluster(basic(3, 0)[0], CONFIG), [pod_dict("warm")],
                     [node_dict("pool")], backend=args.backend)
        cases = ([fit_compare(args.fit_nodes, args.backend, args.seed)]
                 + compare_cases(args.backend, args.seed, args.compare_nodes,
                                 args.drain_candidates))
        record = {"benchmark": "capacity-batch", "backend": args.backend, "seed": args.seed,
                  "cases": cases, "machine": machine_info(), "commit": git_commit(),
                  "load_after": [round(x, 2) for x in os.getloadavg()]}
        out = _write_record(record, args, "capacity-batch")
        for c in cases:
            print(f"{c['case']} {c['nodes']} nodes: batch {c['batch']['cpu_seconds']} CPU s, "
                  f"per probe {c['per_probe']['cpu_seconds']} CPU s ({c['cpu_ratio']}x), "
                  f"equal {c['documents_equal']}")
        print(f"wrote {out}")
        return record
    cases = [fit_case(args.fit_nodes, args.backend, args.seed),
             nodes_case(args.search_nodes, args.backend, args.seed)]
    record = {"benchmark": "capacity", "backend": args.backend, "seed": args.seed,
              "cases": cases, "machine": machine_info(), "commit": git_commit()}
    out = _write_record(record, args, "capacity")
    for c in cases:
        print(f"{c['case']}: {c['seconds']}s (target {c['target_seconds']}s) "
              + (f"fit {c['fit']}" if c["case"] == "how-many-fit"
                 else f"nodes to add {c['nodes_to_add']}"))
    print(f"wrote {out}")
    return record



def _write_record(record: dict, args, stem: str) -> Path:
    """``record`` as JSON at ``--output``, else ``bench/results/STEM-BACKEND.json``."""
    out = Path(args.output) if args.output else RESULTS / f"{stem}-{args.backend}.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
