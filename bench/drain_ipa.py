"""A drain whose removed nodes hold bound pods InterPodAffinity reads,
batched (per-probe groups of the plugin's constants: ``LocalProber``'s
static groups) against the per-probe path: ``python -m
tensorsched.bench.drain_ipa``.

The cluster: ``--nodes`` basic nodes (4 cpu, three zones); on every node a
logging agent (DaemonSet, app=agent) whose preferred anti-affinity (weight
40 to 46) keeps web pods off its node; on every fifth node a guard
(DaemonSet) whose required anti-affinity keeps web pods off its node (they
were bound before it came); on every node two web pods (500m, preferred
affinity to the agents' zones) and one api pod (1 cpu).  Removing a node
takes its agent and guard along, so every removal reads its own
InterPodAffinity constants (the batch used to refuse those: per probe).
``removable_nodes`` over every node, greedy (cluster-autoscaler's order,
``exact_limit=0``), batched and per probe (``batch=False``).

Each side runs ``--repeats`` times, alternating (batched, then per probe),
after one untimed run of each; per run its CPU seconds
(``time.process_time``: every thread of this process), wall seconds and the
load average before it; the medians; whether every report equals the first
batched one and which path the batched side took.  Written to
``bench/results/drain-ipa-numba.json`` (``--output`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from tensorsched.framework.capacity.drain import removable_nodes
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators.clusters import basic, pod_dict

from .harness import git_commit, machine_info
from .ipa_static import CONFIG, HOST, ZONE

RESULTS = Path(__file__).resolve().parent / "results"
DAEMONSET = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u",
              "controller": True}]


def _term(key: str, app: str) -> dict:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}


def _alternate(run, repeats: int) -> tuple[dict, bool]:
    """``run(batch)`` for batch True then False, ``repeats`` rounds after
    an untimed one: per side its runs' CPU / wall seconds and the load
    before each, their medians; whether every result equals the first
    batched one."""
    first = run(True)
    same = run(False) == first
    sides: dict = {"batched": [], "per_probe": []}
    for _ in range(repeats):
        for batch in (True, False):
            load = os.getloadavg()
            c0, t0 = time.process_time(), time.perf_counter()
            got = run(batch)
            sides["batched" if batch else "per_probe"].append(
                {"cpu_seconds": round(time.process_time() - c0, 3),
                 "wall_seconds": round(time.perf_counter() - t0, 3),
                 "load_before": [round(x, 2) for x in load]})
            same = same and got == first
    out: dict = {}
    for side, runs in sides.items():
        out[side] = {"runs": runs,
                     "cpu_seconds": round(statistics.median(r["cpu_seconds"] for r in runs), 3),
                     "wall_seconds": round(statistics.median(r["wall_seconds"] for r in runs),
                                           3)}
    out["cpu_ratio"] = round(out["per_probe"]["cpu_seconds"]
                             / max(out["batched"]["cpu_seconds"], 1e-9), 2)
    return out, same


def _daemon(name: str, node: str, app: str, affinity: dict) -> dict:
    p = pod_dict(name, cpu="100m", memory="128Mi", labels={"app": app},
                 spec={"nodeName": node, "affinity": affinity})
    p["metadata"]["ownerReferences"] = [dict(o) for o in DAEMONSET]
    return p


def drain_cluster(nodes: int) -> list:
    """``nodes`` basic nodes, their DaemonSet pods with terms on web pods
    and the web and api pods a drain moves (see the module doc)."""
    objs, _ = basic(nodes, 0)
    prefer_agent = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 30, "podAffinityTerm": _term(ZONE, "agent")}]}}
    for i, n in enumerate(list(objs)):
        name = n["metadata"]["name"]
        objs.append(_daemon(f"agent-{i}", name, "agent", {"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 40 + i % 7, "podAffinityTerm": _term(HOST, "web")}]}}))
        if i % 5 == 0:
            objs.append(_daemon(f"guard-{i}", name, "guard", {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [_term(HOST, "web")]}}))
        for k in range(2):
            objs.append(pod_dict(f"web-{i}-{k}", cpu="500m", memory="256Mi",
                                 labels={"app": "web"},
                                 spec={"nodeName": name, "affinity": prefer_agent}))
        objs.append(pod_dict(f"api-{i}", cpu="1", memory="512Mi", labels={"app": "api"},
                             spec={"nodeName": name}))
    return objs


def drain_case(nodes: int, repeats: int) -> dict:
    cluster = build_cluster(drain_cluster(nodes), CONFIG)
    paths = []

    def run(batch):
        report = removable_nodes(cluster, backend="numba", seed=0, exact_limit=0, batch=batch)
        if batch:
            paths.append(report.probe_path)
        doc = report.to_dict()
        doc["status"].pop("seconds", None)
        return doc
    got, same = _alternate(run, repeats)
    doc = run(True)
    return {"case": "drain-daemonset-affinity", "nodes": nodes,
            "bound_pods": len(cluster.objects.pods),
            "removable_alone": len(doc["status"]["removable"]),
            "removable_set": len(doc["status"]["removableSet"]["nodes"]),
            "batched_path": paths[-1], **got, "reports_equal": same}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.drain_ipa",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    case = drain_case(args.nodes, args.repeats)
    record = {"benchmark": "drain-ipa", "backend": "numba", "cases": [case],
              "machine": machine_info(), "commit": git_commit(),
              "load_after": [round(x, 2) for x in os.getloadavg()]}
    out = Path(args.output) if args.output else RESULTS / "drain-ipa-numba.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{case['case']} ({case['nodes']} nodes): batched {case['batched']['cpu_seconds']} "
          f"CPU s, per probe {case['per_probe']['cpu_seconds']} CPU s ({case['cpu_ratio']}x); "
          f"path: {case['batched_path']}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
