"""Tie-ranked ``tensorsched sweep --policy ... --tie-rank`` jobs (the openb
paper experiment's profile: GpuShareScore with OpenbTieRank breaking its
ties, the nodes labelled ``batch.tie_of(n, seed)``), batched against one
Simulation per job in this process:
``python -m tensorsched.bench.sweep_tie_rank``.

Inputs: ``sweep_openb_events``' node list and first ``--pods`` pods; the
six GpuShareScore policies x ``--seeds`` seeds (12 jobs by default), run
twice: without a scenario (the openb engine, ``openb.batch.trace_batch``)
and under ``sweep_openb_events --tie``'s scenario (node steps, added
nodes ranked by their label, Pod steps: the node-event engine).  Per
case: CPU and wall seconds of both paths, the load average before each,
whether the tables are equal (but ``wall_seconds``) and how many jobs the
batched path took.  Written to ``bench/results/sweep-tie-rank-numba.json``
(``--output`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as E
from tensorsched.kernels.gpu.share import POLICIES

from .harness import git_commit, machine_info
from .sweep_openb_configs import workload
from .sweep_openb_events import RESULTS, tie_scenario, write_inputs
from .sweep_timing import comparison, timed_sweep


def taken_jobs(jobs, inputs: dict) -> int:
    """How many of ``jobs`` a batched path takes (a scenario's: one dry run
    of ``sweep_openb_events.batched_openb_events``)."""
    if not jobs[0].scenario:
        return sum(S.batchable(j, inputs) for j in jobs)
    taken: list = []
    E.batched_openb_events(jobs, inputs, 1, lambda i, row, e: taken.append(i),
                           lambda t: workload(inputs, t), "FGD")
    return len(taken)


def case(nodes: str, pods: str, scenario: str | None, seeds: int) -> dict:
    """One case's record fields (module doc)."""
    jobs = S.make_jobs([pods], list(range(seeds)), policies=list(POLICIES), nodes=nodes,
                       scenario=scenario, tie_rank=True)
    inputs = S.load_inputs(jobs)
    taken = taken_jobs(jobs, inputs)
    timed_sweep(jobs[:1], True)         # compile (or load the cached) kernels first
    batched, rows_b = timed_sweep(jobs, True)
    per_run, rows_p = timed_sweep(jobs, False)
    return {"jobs": len(jobs), "batched_jobs": taken,
            **comparison(batched, per_run, rows_b, rows_p)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.sweep_tie_rank",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="default")
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        nodes, pods, base = write_inputs(Path(tmp), args.trace, args.pods)
        cases = {"no_scenario": case(nodes, pods, None, args.seeds),
                 "scenario": case(nodes, pods, tie_scenario(pods, base, Path(tmp)),
                                  args.seeds)}
    record = {"benchmark": "sweep-tie-rank", "backend": "numba", "trace": args.trace,
              "nodes": "openb_node_list_gpu_node.csv (1213)", "pods": args.pods,
              "jobs": "sweep --policy (all six) --tie-rank: the experiment's profile, "
              "OpenbTieRank under GpuShareScore (weight n + 1; Random without it)",
              "seeds": args.seeds,
              "scenario": "sweep_openb_events --tie's: node steps (20 nodes added, ranked "
              "600), 12 GPU-share pods created at T/3 (even: 600 s), the odd ones deleted "
              "at T/2",
              **cases, "machine": machine_info(), "commit": git_commit()}
    out = Path(args.output) if args.output else RESULTS / "sweep-tie-rank-numba.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    for name, c in cases.items():
        print(f"{name}: {c['jobs']} jobs ({c['batched_jobs']} batched), {args.pods} pods: "
              f"batched {c['batched']['cpu_seconds']} CPU s, per job "
              f"{c['per_run']['cpu_seconds']} CPU s ({c['cpu_ratio']}x), tables equal "
              f"{c['tables_equal']}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
