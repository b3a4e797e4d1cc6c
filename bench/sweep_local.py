"""``tensorsched sweep`` over default-profile configurations on manifests,
batched (``experiments.sweep_local``: the node-local kernel's trace form,
one call) against one Simulation per job: ``python -m
tensorsched.bench.sweep_local``.

The cluster: ``--nodes`` basic nodes (4 cpu / 32Gi / 110 pods); the trace:
``--pods`` pods (100m..2 cpu, 256Mi..4Gi) arriving a second apart, most
leaving after 60..3,600 s; three configurations (LeastAllocated,
MostAllocated, RequestedToCapacityRatio, the last at
percentageOfNodesToScore 50) times ``--seeds`` seeds; ``--durations``:
the pods leave that long after their binding (a ``duration`` column), not
at a time.  CPU and wall seconds of both, the load average before each,
whether the tables are equal (but ``wall_seconds``) and how many jobs the
batched path took.  Written to ``bench/results/sweep-local-numba.json``
(``sweep-local-duration-numba.json`` with ``--durations``; ``--output``
elsewhere).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import yaml

from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.generators.clusters import basic

from .harness import git_commit, machine_info
from .sweep_timing import comparison, timed_sweep

RESULTS = Path(__file__).resolve().parent / "results"
API = "kubescheduler.config.k8s.io/v1"
STRATEGIES = (
    ({"type": "LeastAllocated"}, 100),
    ({"type": "MostAllocated"}, 100),
    ({"type": "RequestedToCapacityRatio",
      "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                                             {"utilization": 100, "score": 0}]}}, 50),
)


def write_inputs(where: Path, nodes: int, pods: int, seed: int = 0,
                 durations: bool = False) -> tuple:
    """(cluster path, trace path, config paths) under ``where``."""
    node_objs, _ = basic(nodes, 0)
    cluster = where / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(node_objs))
    rng = np.random.default_rng(seed)
    lines = ["name,arrival," + ("duration" if durations else "departure") + ",cpu,memory"]
    for j in range(pods):
        stay = rng.choice([60, 600, 3600, -1])
        dep = "" if stay < 0 else str(int(stay) if durations else j + int(stay))
        lines.append(f"p{j},{j},{dep},{rng.choice(['100m', '500m', '1', '2'])},"
                     f"{rng.choice(['256Mi', '1Gi', '4Gi'])}")
    trace = where / "trace.csv"
    trace.write_text("\n".join(lines) + "\n")
    configs = []
    for k, (strategy, pct) in enumerate(STRATEGIES):
        cfg = {"apiVersion": API, "kind": "KubeSchedulerConfiguration",
               "percentageOfNodesToScore": pct,
               "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
                   {"name": "NodeResourcesFit",
                    "args": {"apiVersion": API, "kind": "NodeResourcesFitArgs",
                             "scoringStrategy": strategy}}]}]}
        path = where / f"config{k}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        configs.append(str(path))
    return str(cluster), str(trace), configs


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.sweep_local",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--durations", action="store_true")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cluster, trace, configs = write_inputs(Path(tmp), args.nodes, args.pods,
                                               durations=args.durations)
        jobs = S.make_jobs([trace], list(range(args.seeds)), configs=configs, cluster=cluster)
        taken: list = []
        SL.batched_local(jobs, S.load_inputs(jobs), 1, lambda i, row, e: taken.append(i))
        # compile (or load the cached) kernels before timing
        timed_sweep(S.make_jobs([trace], [0], configs=configs[:1], cluster=cluster), True)
        batched, rows_b = timed_sweep(jobs, True)
        # per job: one process (the CPU time of a pool's workers is not this
        # process's), so both sides count every CPU second they spend
        per_run, rows_p = timed_sweep(jobs, False)
    record = {"benchmark": "sweep-local", "backend": "numba", "nodes": args.nodes,
              "pods": args.pods, "configs": len(configs), "seeds": args.seeds,
              "jobs": len(jobs), "durations": args.durations, "batched_jobs": len(taken),
              **comparison(batched, per_run, rows_b, rows_p),
              "machine": machine_info(), "commit": git_commit()}
    name = "sweep-local-duration-numba.json" if args.durations else "sweep-local-numba.json"
    out = Path(args.output) if args.output else RESULTS / name
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{len(jobs)} jobs ({len(taken)} batched), {args.nodes} nodes, {args.pods} pods: "
          f"batched {batched['cpu_seconds']} CPU s, per run {per_run['cpu_seconds']} CPU s "
          f"({record['cpu_ratio']}x), tables equal {record['tables_equal']}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
