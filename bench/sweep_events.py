"""``tensorsched sweep`` with a scenario of node steps on manifests, batched
(``experiments.sweep_local`` with ``sweep_events``: the node-local trace
kernel's node events, one call) against one Simulation per job: ``python
-m tensorsched.bench.sweep_events``.

The inputs of ``bench.sweep_local`` (``--nodes`` basic nodes, ``--pods``
pods a second apart, three configurations, ``--seeds`` seeds) and a
scenario over the trace's T seconds: 10 nodes cordoned at T/4, 3 drained
at T/3, ``--nodes``/10 added from a template at T/2 (mid-trace), the 10
uncordoned at 3T/4, 5 removed at 4T/5; with ``--pod-steps`` Pod steps too:
``--pods``/20 pods created at T/3 (after the drain) and deleted at 7T/10,
as many created at 3T/5 leaving 100 s after their binding.  CPU and wall
seconds of both, the load average before each, whether the tables are equal (but
``wall_seconds``) and how many jobs the batched path took.  Written to
``bench/results/sweep-events-numba.json`` (with ``--pod-steps``:
``sweep-events-pods-numba.json``; ``--output`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import yaml

from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.generators.clusters import basic, pod_dict

from .harness import git_commit, machine_info
from .sweep_local import write_inputs
from .sweep_timing import comparison, timed_sweep

RESULTS = Path(__file__).resolve().parent / "results"


def pod_steps(pods: int) -> list:
    """The Pod steps of ``--pod-steps`` (module doc) over ``pods`` seconds."""
    t = float(pods)
    n = max(1, pods // 20)
    return [{"at": t / 3, "create": pod_dict("burst", cpu="500m", memory="1Gi"), "replicas": n},
            {"at": 3 * t / 5, "create": pod_dict("late", cpu="500m", memory="1Gi"),
             "replicas": n, "duration": 100},
            {"at": 7 * t / 10, "delete": {"kind": "Pod", "name": "burst"}, "replicas": n}]


def write_scenario(where: Path, nodes: int, pods: int, with_pods: bool = False) -> str:
    """The scenario (module doc) as a file under ``where``, with its Pod
    steps when ``with_pods``; its path."""
    names = [o["metadata"]["name"] for o in basic(nodes, 0)[0]]
    template = basic(1, 0)[0][0]
    template["metadata"]["name"] = "added"
    t = float(pods)
    steps = [{"at": t / 4, "cordon": names[:10]},
             {"at": t / 3, "drain": names[10:13]},
             {"at": t / 2, "addNodes": {"template": template, "count": max(1, nodes // 10)}},
             {"at": 3 * t / 4, "uncordon": names[:10]},
             {"at": 4 * t / 5, "removeNodes": names[20:25]}]
    if with_pods:
        steps += pod_steps(pods)
    path = where / "scenario.yaml"
    path.write_text(yaml.safe_dump({"steps": steps}))
    return str(path)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.sweep_events",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--pod-steps", action="store_true",
                    help="Pod creates and deletes in the scenario too")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cluster, trace, configs = write_inputs(Path(tmp), args.nodes, args.pods)
        scenario = write_scenario(Path(tmp), args.nodes, args.pods, args.pod_steps)
        jobs = S.make_jobs([trace], list(range(args.seeds)), configs=configs, cluster=cluster,
                           scenario=scenario)
        taken: list = []
        SL.batched_local(jobs, S.load_inputs(jobs), 1, lambda i, row, e: taken.append(i))
        # compile (or load the cached) kernels before timing
        timed_sweep(S.make_jobs([trace], [0], configs=configs[:1], cluster=cluster,
                                scenario=scenario), True)
        batched, rows_b = timed_sweep(jobs, True)
        per_run, rows_p = timed_sweep(jobs, False)
    record = {"benchmark": "sweep-events", "backend": "numba", "nodes": args.nodes,
              "pods": args.pods, "configs": len(configs), "seeds": args.seeds,
              "jobs": len(jobs), "scenario": "cordon 10 at T/4, drain 3 at T/3, add "
              f"{max(1, args.nodes // 10)} at T/2, uncordon 10 at 3T/4, remove 5 at 4T/5"
              + (f"; create {max(1, args.pods // 20)} pods at T/3 (deleted at 7T/10) and "
                 f"{max(1, args.pods // 20)} at 3T/5 (100 s bound)" if args.pod_steps else ""),
              "batched_jobs": len(taken), **comparison(batched, per_run, rows_b, rows_p),
              "evicted": [r["evicted"] for r in rows_b],
              "deleted": [r["deleted"] for r in rows_b],
              "machine": machine_info(), "commit": git_commit()}
    name = "sweep-events-pods-numba.json" if args.pod_steps else "sweep-events-numba.json"
    out = Path(args.output) if args.output else RESULTS / name
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{len(jobs)} jobs ({len(taken)} batched), {args.nodes} nodes, {args.pods} pods: "
          f"batched {batched['cpu_seconds']} CPU s, per run {per_run['cpu_seconds']} CPU s "
          f"({record['cpu_ratio']}x), tables equal {record['tables_equal']}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
