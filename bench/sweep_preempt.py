"""``tensorsched sweep`` over default-profile configurations on manifests
where pods preempt, batched (``experiments.sweep_local`` with
``sweep_preempt``: DefaultPreemption inside the node-local kernel's trace
form, one call) against one Simulation per job (the way these jobs ran
before: refused by the batched path): ``python -m
tensorsched.bench.sweep_preempt``.

The cluster: ``--nodes`` nodes (4 cpu / 16Gi / 110 pods), each with two
bound pods of priority 0 (1 cpu); the trace: ``--pods`` pods (250m..2
cpu, 256Mi..2Gi) arriving a second apart, of priorities 0, 100 and 1000
(the later ones more often high: they come when the cluster is full),
most staying, some leaving after 30..600 s, some after a duration; three
configurations (LeastAllocated, MostAllocated, RequestedToCapacityRatio
at percentageOfNodesToScore 50, DefaultPreemption's
minCandidateNodesPercentage 10, 30, 10) times ``--seeds`` seeds.  CPU and
wall seconds of both, the load average before each, whether the tables
are equal (but ``wall_seconds``), the preemptions per job and how many
jobs the batched path took.  Written to
``bench/results/sweep-preempt-numba.json`` (``--output`` elsewhere).
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
from tensorsched.generators.clusters import node_dict, pod_dict

from .harness import git_commit, machine_info
from .sweep_timing import comparison, timed_sweep

RESULTS = Path(__file__).resolve().parent / "results"
API = "kubescheduler.config.k8s.io/v1"
STRATEGIES = (
    ({"type": "LeastAllocated"}, 100, 10),
    ({"type": "MostAllocated"}, 100, 30),
    ({"type": "RequestedToCapacityRatio",
      "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                                             {"utilization": 100, "score": 0}]}}, 50, 10),
)


def write_inputs(where: Path, nodes: int, pods: int, seed: int = 0) -> tuple:
    """(cluster path, trace path, config paths) under ``where``."""
    objs = [node_dict(f"node-{i}", cpu="4", memory="16Gi") for i in range(nodes)]
    for i in range(nodes):
        for k in range(2):
            p = pod_dict(f"bound-{i}-{k}", cpu="1", memory="1Gi", priority=0)
            p["spec"]["nodeName"] = f"node-{i}"
            objs.append(p)
    cluster = where / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(objs))
    rng = np.random.default_rng(seed)
    lines = ["name,arrival,departure,duration,cpu,memory,priority"]
    for j in range(pods):
        stay = int(rng.choice([-1, -1, -1, 30, 600]))
        timed = stay >= 0 and rng.random() < 0.5
        dep = "" if stay < 0 or timed else str(j + stay)
        prio = rng.choice([0, 100, 1000] if j < pods // 2 else [0, 1000, 1000])
        lines.append(f"p{j},{j},{dep},{stay if timed else ''},"
                     f"{rng.choice(['250m', '500m', '1', '2'])},"
                     f"{rng.choice(['256Mi', '1Gi', '2Gi'])},{prio}")
    trace = where / "trace.csv"
    trace.write_text("\n".join(lines) + "\n")
    configs = []
    for k, (strategy, pct, cand) in enumerate(STRATEGIES):
        cfg = {"apiVersion": API, "kind": "KubeSchedulerConfiguration",
               "percentageOfNodesToScore": pct,
               "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
                   {"name": "NodeResourcesFit",
                    "args": {"apiVersion": API, "kind": "NodeResourcesFitArgs",
                             "scoringStrategy": strategy}},
                   {"name": "DefaultPreemption",
                    "args": {"apiVersion": API, "kind": "DefaultPreemptionArgs",
                             "minCandidateNodesPercentage": cand}}]}]}
        path = where / f"config{k}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        configs.append(str(path))
    return str(cluster), str(trace), configs


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.sweep_preempt",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods", type=int, default=1500)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cluster, trace, configs = write_inputs(Path(tmp), args.nodes, args.pods)
        jobs = S.make_jobs([trace], list(range(args.seeds)), configs=configs, cluster=cluster)
        taken: list = []
        SL.batched_local(jobs, S.load_inputs(jobs), 1, lambda i, row, e: taken.append(i))
        # compile (or load the cached) kernels before timing
        timed_sweep(S.make_jobs([trace], [0], configs=configs[:1], cluster=cluster), True)
        batched, rows_b = timed_sweep(jobs, True)
        # per job: one process (the CPU time of a pool's workers is not this
        # process's), so both sides count every CPU second they spend
        per_run, rows_p = timed_sweep(jobs, False)
    record = {"benchmark": "sweep-preempt", "backend": "numba", "nodes": args.nodes,
              "pods": args.pods, "configs": len(configs), "seeds": args.seeds,
              "jobs": len(jobs), "batched_jobs": len(taken),
              **comparison(batched, per_run, rows_b, rows_p),
              "preemptions": [r["preemptions"] for r in rows_b],
              "machine": machine_info(), "commit": git_commit()}
    out = Path(args.output) if args.output else RESULTS / "sweep-preempt-numba.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{len(jobs)} jobs ({len(taken)} batched), {args.nodes} nodes, {args.pods} pods, "
          f"{sum(record['preemptions'])} preemptions: batched {batched['cpu_seconds']} CPU s, "
          f"per run {per_run['cpu_seconds']} CPU s ({record['cpu_ratio']}x), "
          f"tables equal {record['tables_equal']}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
