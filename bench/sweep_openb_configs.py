"""``tensorsched sweep --config`` of the openb profile with a scenario of
node and Pod steps, batched (``experiments.sweep_openb_events``:
``job_profile`` reads each config's GpuShareScore weight, policy and
backoff) against one Simulation per job in this process:
``python -m tensorsched.bench.sweep_openb_configs``.

Inputs: ``sweep_openb_events``' node list, first ``--pods`` pods and its
``--tie`` scenario (node steps, 12 GPU-share pods created, half of them
deleted later); six KubeSchedulerConfiguration files, the openb profile
of each GpuShareScore policy with the trace's own typical pods and
GpuShareScore's weight 1 + k (k the policy's index), ``--seeds`` seeds.
CPU and wall seconds of both, the load average before each, whether the
tables are equal (but ``wall_seconds``) and how many jobs the batched path
took.  Written to ``bench/results/sweep-openb-configs-numba.json``
(``--output`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_openb_events as E
from tensorsched.experiments.simulate_run import read_trace_file, typical_of
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.openb.batch import trace_workload
from tensorsched.topology.openb.trace import openb_config

from .harness import git_commit, machine_info
from .sweep_openb_events import RESULTS, tie_scenario, write_inputs
from .sweep_timing import comparison, timed_sweep


def workload(inputs: dict, path: str):
    """The trace's ``TraceWorkload`` with the Simulation's typical pods."""
    tw = trace_workload(inputs[("trace", path)])
    tw.typical = inputs[("typical", path)]
    return tw


def write_configs(where: Path, pods: str) -> list:
    """The six config files (module doc), their paths."""
    typical = typical_of(read_trace_file(pods))
    out = []
    for k, policy in enumerate(POLICIES):
        cfg = openb_config(policy, typical)
        cfg["profiles"][0]["plugins"]["score"]["enabled"][0]["weight"] = 1 + k
        path = where / f"cfg-{policy}.json"
        path.write_text(json.dumps(cfg))
        out.append(str(path))
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.sweep_openb_configs",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="default")
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        nodes, pods, base = write_inputs(Path(tmp), args.trace, args.pods)
        scenario = tie_scenario(pods, base, Path(tmp))
        jobs = S.make_jobs([pods], list(range(args.seeds)),
                           configs=write_configs(Path(tmp), pods), nodes=nodes,
                           scenario=scenario)
        inputs = S.load_inputs(jobs)
        taken: list = []
        E.batched_openb_events(jobs, inputs, 1, lambda i, row, e: taken.append(i),
                               lambda t: workload(inputs, t), "FGD")
        # compile (or load the cached) kernels before timing
        timed_sweep(jobs[:1], True)
        batched, rows_b = timed_sweep(jobs, True)
        per_run, rows_p = timed_sweep(jobs, False)
    record = {"benchmark": "sweep-openb-configs", "backend": "numba", "trace": args.trace,
              "nodes": "openb_node_list_gpu_node.csv (1213)", "pods": args.pods,
              "configs": [f"openb_config({p}, the trace's typical pods), GpuShareScore "
                          f"weight {1 + k}" for k, p in enumerate(POLICIES)],
              "seeds": args.seeds, "jobs": len(jobs),
              "scenario": "sweep_openb_events --tie's: node steps, 12 GPU-share pods created "
              "at T/3 (even: 600 s), the odd ones deleted at T/2",
              "batched_jobs": len(taken), **comparison(batched, per_run, rows_b, rows_p),
              "machine": machine_info(), "commit": git_commit()}
    out = Path(args.output) if args.output else RESULTS / "sweep-openb-configs-numba.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{len(jobs)} jobs ({len(taken)} batched), {args.pods} pods: batched "
          f"{batched['cpu_seconds']} CPU s, per job {per_run['cpu_seconds']} CPU s "
          f"({record['cpu_ratio']}x), tables equal {record['tables_equal']}")
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
