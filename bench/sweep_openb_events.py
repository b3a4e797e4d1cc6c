"""``tensorsched sweep`` of the openb profile with a scenario of node steps,
batched (``experiments.sweep_openb_events``: the openb engine's node
events, one call) against one Simulation per job in this process:
``python -m tensorsched.bench.sweep_openb_events``.

Inputs: the openb node list (``data/openb/csv``), the first ``--pods`` pods
of the ``--trace`` pod CSV (their creation and deletion times), the six
GpuShareScore policies, ``--seeds`` seeds, and a scenario over the pods'
T seconds: every tenth node (from the second) cordoned at T/4, every
tenth (from the third) drained at T/3, 20 nodes like the list's first
added at T/2, the cordoned ones uncordoned at 3T/4, every tenth (from the
sixth) removed at 4T/5.
CPU and wall seconds of both, the load average before each, whether the
tables are equal (but ``wall_seconds``) and how many jobs the batched path
took.  Written to ``bench/results/sweep-openb-events-numba.json``
(``--output`` elsewhere).

``--overhead``: the same jobs without the scenario (the batched engine's
no-scenario path, ``sweep_batch``), timed alternately with and without
this path's routing pass in ``run_sweep`` (``batched_openb_events``
replaced by one that takes nothing), ``--repeats`` times each: the
no-scenario path must not get slower.  Written to
``bench/results/sweep-openb-events-overhead-numba.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import yaml

from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as E
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.openb.batch import trace_workload
from tensorsched.topology.openb.trace import openb_node_objects

from .harness import git_commit, machine_info
from .sweep_timing import comparison, timed_sweep

RESULTS = Path(__file__).resolve().parent / "results"
CSV = Path(__file__).resolve().parent.parent / "data" / "openb" / "csv"


def _workload(inputs: dict, path: str):
    """The trace's ``TraceWorkload`` with the Simulation's typical pods."""
    tw = trace_workload(inputs[("trace", path)])
    tw.typical = inputs[("typical", path)]
    return tw


def write_inputs(where: Path, trace: str, pods: int) -> tuple:
    """(node CSV, the first ``pods`` pods of the trace as a pod CSV,
    scenario path) under ``where`` (module doc)."""
    nodes = str(CSV / "openb_node_list_gpu_node.csv")
    lines = (CSV / f"openb_pod_list_{trace}.csv").read_text().splitlines()
    head, rows = lines[0], lines[1:pods + 1]
    k = head.split(",").index("creation_time")
    span = max(float(r.split(",")[k]) for r in rows) or 1.0
    pod_csv = where / f"{trace}-{pods}.csv"
    pod_csv.write_text("\n".join([head] + rows) + "\n")
    names = list(read_openb_nodes(nodes).names)
    template = openb_node_objects(nodes)[0]
    template["metadata"]["name"] = "added"
    template["metadata"]["labels"].pop("kubernetes.io/hostname", None)
    steps = [{"at": span / 4, "cordon": names[1::10]},
             {"at": span / 3, "drain": names[2::10]},
             {"at": span / 2, "addNodes": {"template": template, "count": 20}},
             {"at": 3 * span / 4, "uncordon": names[1::10]},
             {"at": 4 * span / 5, "removeNodes": names[5::10]}]
    sc = where / "scenario.yaml"
    sc.write_text(yaml.safe_dump({"steps": steps}))
    return nodes, str(pod_csv), str(sc)


def overhead_main(args) -> dict:
    """The ``--overhead`` record (module doc)."""
    with tempfile.TemporaryDirectory() as tmp:
        nodes, pods, _sc = write_inputs(Path(tmp), args.trace, args.pods)
        jobs = S.make_jobs([pods], list(range(args.seeds)), policies=list(POLICIES),
                           nodes=nodes)
        real = S.batched_openb_events
        skip = lambda jobs, *a, **k: list(range(len(jobs)))
        timed_sweep(jobs, True)             # compile or load the kernels first
        with_pass, without = [], []
        for _ in range(args.repeats):
            S.batched_openb_events = skip
            try:
                t, rows_off = timed_sweep(jobs, True)
            finally:
                S.batched_openb_events = real
            without.append(t["cpu_seconds"])
            t, rows_on = timed_sweep(jobs, True)
            with_pass.append(t["cpu_seconds"])
    med = lambda v: sorted(v)[len(v) // 2]
    return {"benchmark": "sweep-openb-events-overhead", "backend": "numba",
            "trace": args.trace, "pods": args.pods, "seeds": args.seeds, "jobs": len(jobs),
            "scenario": None, "cpu_seconds_without_pass": without,
            "cpu_seconds_with_pass": with_pass, "median_without": med(without),
            "median_with": med(with_pass), "tables_equal": rows_on == rows_off,
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "machine": machine_info(), "commit": git_commit()}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.sweep_openb_events",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="default")
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--output", default=None)
    ap.add_argument("--overhead", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if args.overhead:
        record = overhead_main(args)
        out = Path(args.output) if args.output else \
            RESULTS / "sweep-openb-events-overhead-numba.json"
        out.write_text(json.dumps(record, indent=2) + "\n")
        print(f"no scenario, {record['jobs']} jobs: median {record['median_without']} CPU s "
              f"without the pass, {record['median_with']} with it; tables equal "
              f"{record['tables_equal']}")
        print(f"wrote {out}")
        return record
    with tempfile.TemporaryDirectory() as tmp:
        nodes, pods, scenario = write_inputs(Path(tmp), args.trace, args.pods)
        jobs = S.make_jobs([pods], list(range(args.seeds)), policies=list(POLICIES),
                           nodes=nodes, scenario=scenario)
        inputs = S.load_inputs(jobs)
        taken: list = []
        E.batched_openb_events(jobs, inputs, 1, lambda i, row, e: taken.append(i),
                               lambda t: _workload(inputs, t), "FGD")
        # compile (or load the cached) kernels before timing
        timed_sweep(jobs[:1], True)
        batched, rows_b = timed_sweep(jobs, True)
        per_run, rows_p = timed_sweep(jobs, False)
    record = {"benchmark": "sweep-openb-events", "backend": "numba", "trace": args.trace,
              "nodes": "openb_node_list_gpu_node.csv (1213)", "pods": args.pods,
              "policies": list(POLICIES), "seeds": args.seeds, "jobs": len(jobs),
              "scenario": "cordon names[1::10] at T/4, drain names[2::10] at T/3, add 20 "
              "at T/2, uncordon names[1::10] at 3T/4, remove names[5::10] at 4T/5",
              "batched_jobs": len(taken), **comparison(batched, per_run, rows_b, rows_p),
              "evicted": [r["evicted"] for r in rows_b],
              "deleted": [r["deleted"] for r in rows_b],
              "machine": machine_info(), "commit": git_commit()}
    out = Path(args.output) if args.output else RESULTS / "sweep-openb-events-numba.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{len(jobs)} jobs ({len(taken)} batched), {args.pods} pods: batched "
          f"{batched['cpu_seconds']} CPU s, per job {per_run['cpu_seconds']} CPU s "
          f"({record['cpu_ratio']}x), tables equal {record['tables_equal']}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
