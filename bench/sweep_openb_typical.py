"""``tensorsched sweep --config`` of the openb profile whose GpuShareScore
has other ``typicalPods`` than the trace's, without a scenario: batched
(``experiments.sweep``: the config's typical pods the kernel's table for
the run, the fragmentation measured again under the trace's:
``sweep_batch.frag_under``) against one Simulation per job in this process
(the path these jobs took before): ``python -m
tensorsched.bench.sweep_openb_typical``.

Inputs: the openb GPU node list, the first ``--pods`` pods of ``--trace``;
three KubeSchedulerConfiguration files: FGD with the typical pods of the
``--other`` trace (a config tuned for another workload), BestFit with
them (no score reads them), FGD with the trace's own (batched before
too); ``--seeds`` seeds.  Each path timed after a warm-up call (the
compiled kernels loaded), ``--rounds`` times alternated, the median round
recorded: CPU and wall seconds, the load average before each, whether the
tables are equal (but ``wall_seconds``) and which jobs the openb engine
took.  Written to
``bench/results/sweep-openb-typical-numba.json`` (``--output``
elsewhere).

``--scenario``: every job under ``bench.sweep_openb_events``' scenario
(nodes cordoned, drained, added, uncordoned, removed), run on the
node-event engine (``sweep_openb_events.batched_openb_events``; FGD with
the other trace's typical pods replayed through the node events:
``sweep_batch.frag_under_events``, its CPU seconds a run recorded too),
written to ``bench/results/sweep-openb-typical-scenario-numba.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as SE
from tensorsched.experiments.simulate_run import DEFAULT_POLICY, read_trace_file, typical_of
from tensorsched.topology.openb.batch import trace_workload
from tensorsched.topology.openb.trace import openb_config

from .harness import git_commit, machine_info
from .sweep_openb_events import CSV, RESULTS, write_inputs
from .sweep_timing import comparison, timed_sweep


def write_configs(where: Path, pods: str, other: str) -> list:
    """The three config files (module doc), their paths."""
    theirs = typical_of(read_trace_file(other))
    out = []
    own = typical_of(read_trace_file(pods))
    for stem, policy, typical in (("fgd-other", "FGD", theirs),
                                  ("bestfit-other", "BestFit", theirs), ("fgd-own", "FGD", own)):
        path = where / f"{stem}.json"
        path.write_text(json.dumps(openb_config(policy, typical)))
        out.append(str(path))
    return out


def scored_workload(inputs: dict, path: str):
    """The trace's ``TraceWorkload`` with the Simulation's typical pods (as
    the sweep gives the node-event engine)."""
    tw = trace_workload(inputs[("trace", path)])
    tw.typical = inputs[("typical", path)]
    return tw


def taken_by_engine(jobs, scenario: bool) -> tuple:
    """(the config names of the jobs the openb engine takes, the CPU
    seconds of each fragmentation replay under a scenario), the compiled
    kernels loaded on the way."""
    inputs = S.load_inputs(jobs)
    taken: list = []
    if not scenario:
        S.batched_simulations(jobs, inputs, 1,
                              lambda i, row, e: taken.append(jobs[i].config_name))
        return taken, []
    replays: list = []
    real = SE.frag_under_events

    def timed(*a, **k):
        c0 = time.process_time()
        got = real(*a, **k)
        replays.append(round(time.process_time() - c0, 4))
        return got
    SE.frag_under_events = timed
    try:
        SE.batched_openb_events(jobs, inputs, 1,
                                lambda i, row, e: taken.append(jobs[i].config_name),
                                lambda t: scored_workload(inputs, t), DEFAULT_POLICY)
    finally:
        SE.frag_under_events = real
    return taken, replays


def _median(rounds: list) -> dict:
    return sorted(rounds, key=lambda r: r["cpu_seconds"])[len(rounds) // 2]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.sweep_openb_typical",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="default")
    ap.add_argument("--other", default="gpushare40")
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scenario", action="store_true")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        nodes, pods, sc = write_inputs(where, args.trace, args.pods)
        other = str(CSV / f"openb_pod_list_{args.other}.csv")
        jobs = S.make_jobs([pods], list(range(args.seeds)),
                           configs=write_configs(where, pods, other), nodes=nodes)
        if args.scenario:
            jobs = [dataclasses.replace(j, scenario=sc) for j in jobs]
        # the jobs the openb engine takes (and the kernels compiled or loaded)
        taken, replays = taken_by_engine(jobs, args.scenario)
        b_rounds, p_rounds = [], []
        for _ in range(args.rounds):
            b, rows_b = timed_sweep(jobs, True)
            b_rounds.append(b)
            p, rows_p = timed_sweep(jobs, False)
            p_rounds.append(p)
    batched, per_run = _median(b_rounds), _median(p_rounds)
    stem = "sweep-openb-typical-scenario" if args.scenario else "sweep-openb-typical"
    record = {"benchmark": stem, "backend": "numba", "trace": args.trace,
              "nodes": "openb_node_list_gpu_node.csv (1213)", "pods": args.pods,
              "configs": [f"openb_config(FGD, the typical pods of {args.other})",
                          f"openb_config(BestFit, the same typical pods)",
                          "openb_config(FGD, the trace's typical pods)"],
              "scenario": ("bench.sweep_openb_events.write_inputs' (cordon, drain, add 20, "
                           "uncordon, remove)") if args.scenario else None,
              "seeds": args.seeds, "jobs": len(jobs), "rounds": args.rounds,
              "replay_cpu_seconds": replays,
              "batched_jobs": len(taken), "batched_configs": sorted(set(taken)),
              **comparison(batched, per_run, rows_b, rows_p),
              "batched_rounds": b_rounds, "per_run_rounds": p_rounds,
              "machine": machine_info(), "commit": git_commit()}
    out = Path(args.output) if args.output else RESULTS / f"{stem}-numba.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{len(jobs)} jobs ({len(taken)} batched), {args.pods} "
          f"pods: batched {batched['cpu_seconds']} CPU s, per job {per_run['cpu_seconds']} "
          f"CPU s ({record['cpu_ratio']}x), tables equal {record['tables_equal']}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
