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

``--tie``: the experiment's default profile (FGD by name: GpuShareScore
with OpenbTieRank's node order, ``batch.tie_of(n, seed)``), ``--seeds``
seeds, through ``ts.simulate_batch`` (the facade's openb scenario form,
one batched call) against one ``Simulation`` per seed (the node list
labelled with the seed's ranks, ``trace.experiment_registry()``), under
the scenario above plus Pod steps: 12 GPU-share pods created at T/3 (the
even ones staying 600 s after their binding), the odd ones deleted at
T/2, the added nodes labelled with ranks.  CPU and wall seconds of both,
the load average before each, whether every pod's node (by name), GPUs
and binding time are equal.  Written to
``bench/results/sweep-openb-events-tie-numba.json``.

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

import time

import numpy as np
import yaml

import tensorsched as ts
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as E
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.experiments.simulate_run import read_trace_file
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.topology.gpu_table import GpuTable
from tensorsched.topology.openb.batch import tie_of, trace_workload
from tensorsched.topology.openb.trace import (
    TIE_LABEL,
    experiment_registry,
    openb_config,
    openb_node_objects,
    typical_of,
)

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


def tie_scenario(pod_csv: str, scenario: str, where: Path) -> str:
    """The ``--tie`` scenario (module doc): ``scenario``'s steps, the added
    nodes labelled with ranks, plus Pod steps; its path under ``where``."""
    steps = yaml.safe_load(Path(scenario).read_text())["steps"]
    k = [r.split(",") for r in Path(pod_csv).read_text().splitlines()]
    span = max(float(r[k[0].index("creation_time")]) for r in k[1:]) or 1.0
    for st in steps:
        if "addNodes" in st:
            st["addNodes"]["template"]["metadata"]["labels"][TIE_LABEL] = "600"
    for j in range(12):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"made-{j}", "namespace": "default", "annotations": {
                "alibabacloud.com/gpu-milli": str([1000, 500, 250][j % 3]),
                "alibabacloud.com/gpu-count": "1"}},
            "spec": {"containers": [{"name": "c", "resources": {
                "requests": {"cpu": "2", "memory": "4Gi"}}}]}}
        step = {"at": span / 3, "create": pod}
        if j % 2 == 0:
            step["duration"] = 600
        steps.append(step)
        if j % 2:
            steps.append({"at": span / 2, "delete": {"kind": "Pod", "name": f"made-{j}"}})
    out = where / "scenario-tie.yaml"
    out.write_text(yaml.safe_dump({"steps": steps}))
    return str(out)


def _simulated(nodes: str, trace, scenario, seed: int) -> dict:
    """Per pod name: (node, GPU indices, binding time) in the seed's
    Simulation of the experiment's FGD profile (module doc)."""
    inv = read_openb_nodes(nodes)
    n = inv.n_nodes
    typical = typical_of(trace_workload(trace).pods)
    sim = Simulation(openb_node_objects(inv, tie_of(n, seed)), openb_config("FGD", typical, n + 1),
                     "numba", seed, interval=60.0, registry=experiment_registry())
    sim.scenario(load_scenario(scenario))
    got = {}

    def bound(e):
        gt = GpuTable.attached(sim.cluster.state)
        al = gt.alloc.get(e["pod"]) if gt is not None else None
        got[e["pod"].split("/", 1)[1]] = (e["node"], tuple(al.indices) if al is not None
                                          and al.indices else (), float(e["time"]))
    sim.on("Bound", bound)
    sim.submit(trace)
    sim.run()
    return got


def tie_main(args) -> dict:
    """The ``--tie`` record (module doc)."""
    seeds = list(range(args.seeds))
    with tempfile.TemporaryDirectory() as tmp:
        nodes, pods, sc = write_inputs(Path(tmp), args.trace, args.pods)
        sc = tie_scenario(pods, sc, Path(tmp))
        trace = read_trace_file(pods)
        ts.simulate_batch(nodes, pods, ["FGD"], [0], scenario=sc, workers=1)  # compile first
        load_b = os.getloadavg()
        c0, t0 = time.process_time(), time.perf_counter()
        runs = ts.simulate_batch(nodes, pods, ["FGD"], seeds, scenario=sc, workers=1)
        batched = {"cpu_seconds": round(time.process_time() - c0, 3),
                   "wall_seconds": round(time.perf_counter() - t0, 3),
                   "load_before": [round(x, 2) for x in load_b]}
        load_p = os.getloadavg()
        c0, t0 = time.process_time(), time.perf_counter()
        sims = [_simulated(nodes, trace, sc, s) for s in seeds]
        per_run = {"cpu_seconds": round(time.process_time() - c0, 3),
                   "wall_seconds": round(time.perf_counter() - t0, 3),
                   "load_before": [round(x, 2) for x in load_p]}
    mine = []
    for r in runs:
        got = {}
        for j, name in enumerate(r.pod_names):
            if r.node[j] >= 0:
                got[name] = (r.node_names[int(r.node[j])].split(".")[0], r.gpus[j],
                             float(r.bind[j]))
        mine.append(got)
    record = {"benchmark": "sweep-openb-events-tie", "backend": "numba", "trace": args.trace,
              "nodes": "openb_node_list_gpu_node.csv (1213)", "pods": args.pods,
              "config": "FGD by name (GpuShareScore weight n + 1, OpenbTieRank 1)",
              "seeds": args.seeds, "runs": len(runs),
              "scenario": "the default scenario (added nodes labelled rank 600) plus 12 "
              "GPU-share pods created at T/3 (even: 600 s), the odd ones deleted at T/2",
              "batched": batched, "per_run": per_run, "placements_equal": mine == sims,
              "cpu_ratio": round(per_run["cpu_seconds"] / max(batched["cpu_seconds"], 1e-9), 2),
              "scheduled": [int((r.node >= 0).sum()) for r in runs],
              "pods_deleted_by_steps": [int(np.sum(r.why == 3)) for r in runs],
              "machine": machine_info(), "commit": git_commit()}
    return record


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
    ap.add_argument("--tie", action="store_true")
    args = ap.parse_args(argv)
    if args.tie:
        record = tie_main(args)
        out = Path(args.output) if args.output else RESULTS / "sweep-openb-events-tie-numba.json"
        out.write_text(json.dumps(record, indent=2) + "\n")
        print(f"{record['runs']} runs, {args.pods} pods: batched "
              f"{record['batched']['cpu_seconds']} CPU s, per job "
              f"{record['per_run']['cpu_seconds']} CPU s ({record['cpu_ratio']}x), placements "
              f"equal {record['placements_equal']}")
        print(f"wrote {out}")
        return record
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
