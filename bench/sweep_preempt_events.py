"""``tensorsched sweep`` over default-profile configurations on manifests
where pods preempt under a scenario's node steps, batched
(``experiments.sweep_local`` with ``sweep_preempt`` and ``sweep_events``:
DefaultPreemption and the node events inside one kernel call,
``kernels.batch.local_preempt_events``) against one Simulation per job
(the way these jobs ran before: refused by the batched path):
``python -m tensorsched.bench.sweep_preempt_events``.

The cluster, trace and three configurations of ``bench.sweep_preempt``
(``--nodes`` nodes with two bound pods of priority 0 each, ``--pods``
pods of priorities 0, 100 and 1000 a second apart); the scenario: a
tenth of the nodes drained at a quarter of the trace, as many added
(addNodes) at its half, a tenth removed at three quarters, a node
cordoned then uncordoned.  CPU and wall seconds of both paths, the load
average before each, whether the tables are equal (but
``wall_seconds``), the preemptions and evictions per job and how many
jobs the batched path took.  Written to
``bench/results/sweep-preempt-events-numba.json`` (``--output``
elsewhere).  ``--grace G``: with a termination grace, as
``bench.sweep_preempt --grace`` (``ts.simulate_batch`` against one
Simulation per run, under the scenario), written to
``bench/results/sweep-preempt-events-grace-numba.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import yaml

from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.generators.clusters import node_dict

from .harness import git_commit, machine_info
from .sweep_preempt import RESULTS, graceful_run, write_inputs
from .sweep_timing import comparison, timed_sweep


def write_scenario(where: Path, nodes: int, pods: int) -> str:
    """The scenario (module doc) under ``where``; its path."""
    k = max(1, nodes // 10)
    steps = [{"at": pods // 4, "drain": f"node-{i}"} for i in range(k)]
    steps += [{"at": pods // 3, "cordon": f"node-{k}"},
              {"at": pods // 2, "addNodes": {"template": node_dict("extra", cpu="4",
                                                                   memory="16Gi"),
                                             "count": k}},
              {"at": pods // 2 + 10, "uncordon": f"node-{k}"},
              {"at": 3 * pods // 4, "removeNodes": [f"node-{nodes - 1 - i}"
                                                    for i in range(k)]}]
    path = where / "scenario.yaml"
    path.write_text(yaml.safe_dump({"steps": steps}))
    return str(path)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.sweep_preempt_events",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods", type=int, default=1500)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--grace", type=float, default=0.0)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    if args.grace > 0:
        return graceful_run(args, write_scenario, "sweep-preempt-events-grace")
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        cluster, trace, configs = write_inputs(where, args.nodes, args.pods)
        scenario = write_scenario(where, args.nodes, args.pods)
        jobs = S.make_jobs([trace], list(range(args.seeds)), configs=configs, cluster=cluster,
                           scenario=scenario)
        taken: list = []
        SL.batched_local(jobs, S.load_inputs(jobs), 1, lambda i, row, e: taken.append(i))
        # compile (or load the cached) kernels before timing
        timed_sweep(S.make_jobs([trace], [0], configs=configs[:1], cluster=cluster,
                                scenario=scenario), True)
        batched, rows_b = timed_sweep(jobs, True)
        # per job: one process, so both sides count every CPU second they spend
        per_run, rows_p = timed_sweep(jobs, False)
    record = {"benchmark": "sweep-preempt-events", "backend": "numba", "nodes": args.nodes,
              "pods": args.pods, "configs": len(configs), "seeds": args.seeds,
              "jobs": len(jobs), "batched_jobs": len(taken),
              **comparison(batched, per_run, rows_b, rows_p),
              "preemptions": [r["preemptions"] for r in rows_b],
              "evicted": [r["evicted"] for r in rows_b],
              "deleted": [r["deleted"] for r in rows_b],
              "machine": machine_info(), "commit": git_commit()}
    out = Path(args.output) if args.output else RESULTS / "sweep-preempt-events-numba.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{len(jobs)} jobs ({len(taken)} batched), {args.nodes} nodes, {args.pods} pods, "
          f"{sum(record['preemptions'])} preemptions, {sum(record['evicted'])} evictions: "
          f"batched {batched['cpu_seconds']} CPU s, per run {per_run['cpu_seconds']} CPU s "
          f"({record['cpu_ratio']}x), tables equal {record['tables_equal']}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
