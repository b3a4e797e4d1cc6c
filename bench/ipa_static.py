"""InterPodAffinity as static columns of the node-local batch kernel,
batched against the per-job and per-probe paths: ``python -m
tensorsched.bench.ipa_static``.

- sweep: the README's example sweep (``data/examples``: cluster.yaml,
  whose pending pod has preferred anti-affinity to its own app, trace.csv,
  spread.yaml and pack.yaml, seeds 1 and 2) through ``run_sweep`` in this
  process, batched (``experiments.sweep_local``) and per job
  (``batch=False``: one Simulation each);
- probe: ``how_many_fit`` of a 500m / 256Mi web pod (preferred affinity
  to db pods' zones) on ``--nodes`` basic nodes (4 cpu, three zones) whose
  bound pods carry terms on web pods: a db pod every fourth node with
  preferred anti-affinity to web per node, a guard every tenth node with
  required anti-affinity to web per node; batched (the kernel's fill) and
  through the Scheduler (``batch=False``).

Each side runs ``--repeats`` times, alternating (batched, then the other),
after one untimed warm-up of each; per run its CPU seconds
(``time.process_time``: every thread of this process), wall seconds and the
load average before it; the medians; whether both sides' results are
equal and which path the batched side took.  Written to
``bench/results/ipa-static-numba.json`` (``--output`` elsewhere).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import time
from pathlib import Path

from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.framework.capacity.batch_probe import LocalProber
from tensorsched.framework.capacity.common import bound_pods
from tensorsched.framework.capacity.fit import how_many_fit
from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators.clusters import basic, pod_dict

from .harness import git_commit, machine_info

RESULTS = Path(__file__).resolve().parent / "results"
EXAMPLES = Path(__file__).resolve().parent.parent / "data" / "examples"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "percentageOfNodesToScore": 100}


def _term(key: str, app: str) -> dict:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}


def affinity_cluster(nodes: int) -> list:
    """``nodes`` basic nodes and their bound pods with terms on web pods."""
    objs, _ = basic(nodes, 0)
    for i, n in enumerate(list(objs)):
        name = n["metadata"]["name"]
        if i % 4 == 0:
            objs.append(pod_dict(f"db-{i}", cpu="250m", memory="256Mi", labels={"app": "db"},
                                 spec={"nodeName": name, "affinity": {"podAntiAffinity": {
                                     "preferredDuringSchedulingIgnoredDuringExecution": [
                                         {"weight": 50, "podAffinityTerm": _term(HOST, "web")}]
                                 }}}))
        if i % 10 == 0:
            objs.append(pod_dict(f"guard-{i}", cpu="100m", memory="128Mi",
                                 labels={"app": "guard"},
                                 spec={"nodeName": name, "affinity": {"podAntiAffinity": {
                                     "requiredDuringSchedulingIgnoredDuringExecution": [
                                         _term(HOST, "web")]}}}))
    return objs


def web_template() -> dict:
    return pod_dict("web", cpu="500m", memory="256Mi", labels={"app": "web"},
                    spec={"affinity": {"podAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 20, "podAffinityTerm": _term(ZONE, "db")}]}}})


def _alternate(run, repeats: int, other: str) -> tuple[dict, bool]:
    """``run(batch)`` for batch True then False, ``repeats`` rounds after
    an untimed one: per side the runs' CPU / wall seconds and load before,
    their medians; whether every result equals the first batched one."""
    first = run(True)
    same = run(False) == first
    sides = {"batched": [], other: []}
    for _ in range(repeats):
        for batch in (True, False):
            load = os.getloadavg()
            c0, t0 = time.process_time(), time.perf_counter()
            got = run(batch)
            sides["batched" if batch else other].append(
                {"cpu_seconds": round(time.process_time() - c0, 3),
                 "wall_seconds": round(time.perf_counter() - t0, 3),
                 "load_before": [round(x, 2) for x in load]})
            same = same and got == first
    out = {}
    for side, runs in sides.items():
        out[side] = {"runs": runs,
                     "cpu_seconds": round(statistics.median(r["cpu_seconds"] for r in runs), 3),
                     "wall_seconds": round(statistics.median(r["wall_seconds"] for r in runs),
                                           3)}
    out["cpu_ratio"] = round(out[other]["cpu_seconds"]
                             / max(out["batched"]["cpu_seconds"], 1e-9), 2)
    return out, same


def sweep_case(repeats: int) -> dict:
    jobs = S.make_jobs([str(EXAMPLES / "trace.csv")], [1, 2],
                       configs=[str(EXAMPLES / "spread.yaml"), str(EXAMPLES / "pack.yaml")],
                       cluster=str(EXAMPLES / "cluster.yaml"))
    taken: list = []
    rest = SL.batched_local(jobs, S.load_inputs(jobs), 1, lambda i, row, e: taken.append(i))

    def run(batch):
        js = [dataclasses.replace(j, batch=batch) for j in jobs]
        return S.run_sweep(js, workers=1).drop(["wall_seconds"]).to_pylist()
    got, same = _alternate(run, repeats, "per_job")
    return {"case": "readme-example-sweep", "jobs": len(jobs), "batched_jobs": len(taken),
            "per_job_left": len(rest), **got, "tables_equal": same}


def probe_case(nodes: int, repeats: int) -> dict:
    objs = affinity_cluster(nodes)
    cluster = build_cluster(objs, CONFIG)
    # the batch covers the template, InterPodAffinity scoring it
    pod = cluster.resolve(parse_objects([web_template()]).pods[0])
    prober = LocalProber(cluster, list(cluster.objects.nodes), bound_pods(cluster), [pod], 0)

    def run(batch):
        return how_many_fit(cluster, [web_template()], backend="numba", seed=0,
                            batch=batch).to_dict()
    got, same = _alternate(run, repeats, "scheduler")
    return {"case": "how-many-fit-affinity", "nodes": nodes,
            "bound_pods": len(objs) - nodes, "fit": run(True)["status"]["total"],
            "ipa_scored": bool(prober.base["c_active"][0, 5]),
            "ipa_filtered_nodes": int((prober.base["static_bits"][0] != 0).sum()),
            **got, "documents_equal": same}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.ipa_static",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    cases = [sweep_case(args.repeats), probe_case(args.nodes, args.repeats)]
    record = {"benchmark": "ipa-static", "backend": "numba", "cases": cases,
              "machine": machine_info(), "commit": git_commit(),
              "load_after": [round(x, 2) for x in os.getloadavg()]}
    out = Path(args.output) if args.output else RESULTS / "ipa-static-numba.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    for c in cases:
        other = "per_job" if "per_job" in c else "scheduler"
        print(f"{c['case']}: batched {c['batched']['cpu_seconds']} CPU s, {other} "
              f"{c[other]['cpu_seconds']} CPU s ({c['cpu_ratio']}x)")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
