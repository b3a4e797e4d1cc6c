"""Pod dicts through ``schedule_pending`` against the same pods pre-parsed:
``python -m tensorsched.bench.ingest_pending``.

The ``basic`` workload (default 10,000 nodes x 100,000 pods, every node
scored, numba): in ``dicts`` mode the timed call is
``Scheduler.schedule_pending(list_of_pod_dicts)`` (parsing included); in
``columns`` mode the pods are parsed to :class:`PodColumns` before the clock
starts (what ``tensorsched bench`` times).  Each round builds a fresh cluster
and scheduler per mode, warms them up outside the timing as ``bench`` does,
and runs the modes one after the other (the machine is shared: compare the
modes of one round).  Both modes must place the same pods on the same nodes
(``placements_sha256``).  ``--append`` adds the runs to an existing record
(before/after runs of two commits in one file, each run with its commit).
``--modes parse`` times the parse alone (``pod_columns_from`` of the dicts,
the least process CPU of ``PARSE_REPEAT`` passes: ``parse_cpu_us_per_pod``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from pathlib import Path

from tensorsched import synthetic
from tensorsched.framework.scheduler.cluster import build_cluster, pod_columns_from
from tensorsched.framework.scheduler.scheduler import Scheduler

from .harness import git_commit, machine_info, placements_sha256, timed_pending
from .workloads import warm_up, warm_up_run

RESULTS = Path(__file__).resolve().parent / "results"
MODES = ("dicts", "columns", "parse")
PARSE_REPEAT = 7


def run_parse(node_objs: list, pod_objs: list, percentage: int) -> dict:
    """The parse alone (``pod_columns_from``, what ``schedule_pending`` does
    to dicts before it queues them): the least process CPU of
    ``PARSE_REPEAT`` passes (the machine is shared), in µs a pod."""
    cluster = build_cluster(node_objs, synthetic.config("basic", percentage))
    best = float("inf")
    for _ in range(PARSE_REPEAT):
        gc.collect()
        gc.freeze()
        try:
            cpu0 = time.process_time()
            columns = pod_columns_from(pod_objs, cluster.resolve)
            best = min(best, time.process_time() - cpu0)
        finally:
            gc.unfreeze()
        del columns
    return {"mode": "parse", "workload": "basic-parse", "nodes": len(node_objs),
            "pods": len(pod_objs), "commit": git_commit(),
            "parse_cpu_us_per_pod": round(best / len(pod_objs) * 1e6, 3),
            "cpu_seconds": round(best, 4), "repeat": PARSE_REPEAT,
            "load": [round(x, 2) for x in os.getloadavg()],
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def run_mode(mode: str, node_objs: list, pod_objs: list, backend: str, seed: int,
             percentage: int) -> dict:
    """One timed ``schedule_pending`` of ``pod_objs`` on a fresh cluster
    (``parse``: ``run_parse``)."""
    if mode == "parse":
        return run_parse(node_objs, pod_objs, percentage)
    cluster = build_cluster(node_objs, synthetic.config("basic", percentage))
    sched = Scheduler(cluster, backend, seed)
    columns = pod_columns_from(pod_objs, cluster.resolve)
    fw = cluster.framework_for(columns[0], backend)
    warm_up(cluster, fw, pod_objs, seed, shaped=False)
    warm_up_run(cluster, fw, columns[0], seed)
    pods = pod_objs if mode == "dicts" else columns
    del columns
    cpu0 = time.process_time()
    bindings, elapsed = timed_pending(sched, pods)
    cpu = time.process_time() - cpu0
    return {"mode": mode, "workload": f"basic-{mode}", "nodes": len(node_objs),
            "pods": len(pod_objs), "backend": backend,
            "percentage_of_nodes_to_score": percentage, "commit": git_commit(),
            "pods_per_second": round(len(pod_objs) / elapsed, 1),
            "seconds": round(elapsed, 4), "cpu_seconds": round(cpu, 4),
            "scheduled": sum(1 for b in bindings if b.node is not None),
            "placements_sha256": placements_sha256(bindings),
            "load": [round(x, 2) for x in os.getloadavg()],
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pods", type=int, default=100_000)
    ap.add_argument("--backend", default="numba")
    ap.add_argument("--percentage-of-nodes-to-score", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--modes", default="dicts,columns",
                    help="comma-separated, in the order each round runs them "
                    f"(of {', '.join(MODES)}; parse: the parse alone)")
    ap.add_argument("--label", default="", help="a word for these runs (e.g. before, after)")
    ap.add_argument("--append", action="store_true", help="add the runs to --output's record")
    ap.add_argument("--output", default=str(RESULTS / "ingest-schedule-pending.json"))
    args = ap.parse_args(argv)
    modes = args.modes.split(",")
    if not set(modes) <= set(MODES):
        ap.error(f"--modes: choose among {', '.join(MODES)}")
    node_objs, pod_objs = synthetic.workload("basic", args.nodes, args.pods, args.seed)
    doc = {"benchmark": "ingest-schedule-pending",
           "command": "python -m tensorsched.bench.ingest_pending",
           "workload": "basic", "nodes": args.nodes, "pods": args.pods,
           "backend": args.backend,
           "percentage_of_nodes_to_score": args.percentage_of_nodes_to_score,
           "seed": args.seed, "machine": machine_info(), "runs": []}
    if args.append and os.path.exists(args.output):
        with open(args.output) as f:
            doc = json.load(f)
    for r in range(args.rounds):
        for mode in modes:
            run = run_mode(mode, node_objs, pod_objs, args.backend, args.seed,
                           args.percentage_of_nodes_to_score)
            run = {"label": args.label, "round": r, **run}
            doc["runs"].append(run)
            if mode == "parse":
                print(f"{args.label:8s} round {r} parse    {run['parse_cpu_us_per_pod']:>9.3f} us"
                      f" CPU a pod (least of {PARSE_REPEAT})  load {run['load']}")
                continue
            print(f"{args.label:8s} round {r} {mode:8s} {run['pods_per_second']:>12,.1f} pods/s"
                  f"  cpu {run['cpu_seconds']:.3f} s  load {run['load']}"
                  f"  {run['placements_sha256'][:12]}")
    hashes = {run["placements_sha256"] for run in doc["runs"] if "placements_sha256" in run}
    if len(hashes) != 1:
        raise SystemExit(f"placements differ between runs: {sorted(hashes)}")
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"wrote {args.output}")
    return doc


if __name__ == "__main__":
    main()
