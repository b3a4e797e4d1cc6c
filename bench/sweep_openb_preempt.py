"""``tensorsched sweep --config`` of the openb profile plus DefaultPreemption
at postFilter without a scenario, batched (``experiments.sweep``:
``trace_batch`` preempting in its queue, ``sweep_batch.simulate_row``
counting the victims) against one Simulation per job in this process,
and against the other batched route it could take (the node-event engine,
``sweep_openb_events``, under a scenario of no steps):
``python -m tensorsched.bench.sweep_openb_preempt``.

Inputs: ``openb_preempt``'s preempting workload (the first ``--nodes``
GPU nodes of the openb node list, the first ``--pods`` pods of the trace,
arrivals compressed ``--scale`` times, staying their lifetime times
``--stay`` compressed as much, a share ``--high`` at priority 100, the
others 0) written as a node CSV and a Parquet trace; one
KubeSchedulerConfiguration file per policy (``openb_config`` with the
trace's typical pods plus DefaultPreemption), ``--seeds`` seeds.  Each
path timed after a warm-up call (the compiled kernels loaded; the two
batched routes ``--rounds`` times alternated, the median round
recorded, the per-job path once), CPU and wall seconds, the load
average before each, whether the tables are equal (but
``wall_seconds``), the preemptions per job and how many jobs each
batched path took.  Written to
``bench/results/sweep-openb-preempt-numba.json`` (``--output``
elsewhere).

``--grace S``: every job's termination grace (``make_jobs``'
``termination_grace_seconds``; the victims stay on their node S seconds
after their first eviction).  Both engines take it and count every
eviction (a terminating victim chosen again counts again); a run where a
victim left at its own departure time (``sweep_batch.departs_terminating``:
its departure while terminating or its grace ending then, which the
outputs do not tell apart) reruns on the node-event engine under a
scenario of no steps (``sweep._on_no_steps``; ``batched_rows``: the rows
the openb engine's call kept).  Written to
``bench/results/sweep-openb-preempt-grace-numba.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as E
from tensorsched.experiments.simulate_run import read_trace_file, typical_of
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.openb.trace import openb_config

from .harness import git_commit, machine_info
from .openb_batch import DATA
from .openb_preempt import workload
from .sweep_openb_configs import workload as trace_workload_of
from .sweep_timing import comparison, timed_sweep

RESULTS = Path(__file__).resolve().parent / "results"


def write_inputs(where: Path, args) -> tuple:
    """(node CSV, Parquet trace, config paths, empty scenario path) of the
    module doc's workload under ``where``."""
    inv, trace = workload(args.data, args.trace, args.nodes, args.pods, args.scale, args.high,
                          args.stay)
    lines = ["sn,cpu_milli,memory_mib,gpu,model"]
    for i in range(inv.n_nodes):
        model = inv.models[int(inv.model[i])] if inv.model[i] >= 0 else ""
        lines.append(f"{inv.names[i]},{int(inv.cpu_cap[i])},{int(inv.mem_cap[i])},"
                     f"{int(inv.gpu_count[i])},{model}")
    nodes = where / "nodes.csv"
    nodes.write_text("\n".join(lines) + "\n")
    pods = where / "pods.parquet"
    pq.write_table(trace.table, pods)
    typical = typical_of(read_trace_file(str(pods)))
    configs = []
    for policy in args.policies.split(","):
        cfg = openb_config(policy, typical)
        cfg["profiles"][0]["plugins"]["postFilter"] = {
            "disabled": [{"name": "*"}], "enabled": [{"name": "DefaultPreemption"}]}
        path = where / f"cfg-{policy}.json"
        path.write_text(json.dumps(cfg))
        configs.append(str(path))
    empty = where / "no-steps.json"
    empty.write_text(json.dumps({"steps": []}))
    return str(nodes), str(pods), configs, str(empty)


def _median(rounds: list) -> dict:
    """The round of median CPU seconds."""
    return sorted(rounds, key=lambda r: r["cpu_seconds"])[len(rounds) // 2]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.sweep_openb_preempt",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="gpushare40")
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--scale", type=float, default=600.0)
    ap.add_argument("--high", type=float, default=0.3)
    ap.add_argument("--stay", type=float, default=30.0)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--grace", type=float, default=0.0,
                    help="every job's termination grace, seconds")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        nodes, pods, configs, empty = write_inputs(Path(tmp), args)
        grace = args.grace
        jobs = S.make_jobs([pods], list(range(args.seeds)), configs=configs, nodes=nodes,
                           termination_grace_seconds=grace)
        # the other route: the same jobs under a scenario of no steps
        events = S.make_jobs([pods], list(range(args.seeds)), configs=configs, nodes=nodes,
                             scenario=empty, termination_grace_seconds=grace)
        inputs = S.load_inputs(jobs)
        taken = [i for i, j in enumerate(jobs) if S.batchable(j, inputs)]
        kept: list = []
        S.batched_simulations(jobs, inputs, 1, lambda i, row, e: kept.append(i))
        ev_inputs = S.load_inputs(events)
        ev_sent = [j for j in events if S.grace_goes(j, ev_inputs, "openb_events")]
        ev_taken: list = []
        E.batched_openb_events(ev_sent, ev_inputs, 1, lambda i, row, e: ev_taken.append(i),
                               lambda t: trace_workload_of(ev_inputs, t), "FGD")
        timed_events = len(ev_sent) == len(events)
        # compile (or load the cached) kernels before timing
        timed_sweep(jobs[:1], True)
        if timed_events:
            timed_sweep(events[:1], True)
        rounds_b, rounds_e = [], []
        for _ in range(args.rounds):        # the two batched routes alternated
            batched, rows_b = timed_sweep(jobs, True)
            rounds_b.append(batched)
            if timed_events:
                ev_batched, rows_e = timed_sweep(events, True)
                rounds_e.append(ev_batched)
        batched = _median(rounds_b)
        per_run, rows_p = timed_sweep(jobs, False)
        if timed_events:
            node_event_route = {"batched_jobs": len(ev_taken), **_median(rounds_e),
                                "rounds": rounds_e, "rows_equal": rows_e == rows_p}
        else:
            node_event_route = {"batched_jobs": 0, "not_timed": "the sweep runs these jobs "
                                "per job (sweep.grace_goes)"}
    record = {"benchmark": "sweep-openb-preempt", "backend": "numba", "trace": args.trace,
              "nodes": args.nodes, "pods": args.pods, "scale": args.scale, "stay": args.stay,
              "high": args.high, "policies": args.policies.split(","), "seeds": args.seeds,
              "jobs": len(jobs),
              "configs": "openb_config(policy, the trace's typical pods) + DefaultPreemption "
                         "at postFilter (default arguments)",
              "termination_grace_seconds": grace,
              "batched_jobs": len(taken), "batched_rows": len(kept),
              **comparison(batched, per_run, rows_b, rows_p),
              "preemptions": [r["preemptions"] for r in rows_b],
              "batched_rounds": rounds_b,
              "node_event_route": node_event_route,
              "machine": machine_info(), "commit": git_commit()}
    name = "sweep-openb-preempt-grace-numba.json" if grace > 0 else \
        "sweep-openb-preempt-numba.json"
    out = Path(args.output) if args.output else RESULTS / name
    out.write_text(json.dumps(record, indent=2) + "\n")
    ner = record["node_event_route"]
    print(f"{len(jobs)} jobs ({len(taken)} batched, {len(kept)} rows kept), grace {grace:g} s, "
          f"{args.nodes} nodes, {args.pods} pods, "
          f"{int(np.sum(record['preemptions']))} preemptions: batched "
          f"{batched['cpu_seconds']} CPU s, node-event route "
          f"{ner.get('cpu_seconds', 'not timed')} CPU s "
          f"({len(ev_taken)} batched), per job {per_run['cpu_seconds']} CPU s "
          f"({record['cpu_ratio']}x), tables equal {record['tables_equal']} / "
          f"{ner.get('rows_equal', '-')}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
