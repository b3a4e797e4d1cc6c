"""openb replay benchmark: ours vs the paper simulator's published means.

python -m tensorsched.bench.openb_replay [--traces default,...|all] [--seeds 42-51] [--workers N]
                                        [--data DIR] [--framework] [--compare-replay]
                                        [--output bench/results/openb-replay.json] [--csv sweep.csv]
Runs the sweep (policies x traces x seeds, all cores) on the paper's cluster
(the 1,213 GPU nodes), then records per trace and policy our mean
allocation ratio at 100 % and 130 % of arrived demand, the published mean
(seeds 42-51), and the time per run.  On numba the sweep is one batched
call (``openb.batch.sweep``: every run equal to its Simulation), ``seconds`` per
run the call's share.  ``--framework``: every run through the Scheduler
and a Simulation (``tensorsched sweep --experiment``, batched the same
way); ``--compare-replay`` also runs ``replay``'s own loop per run on the
same jobs and records the largest difference per run.
``--data``: a directory with ``csv/`` and ``expected_results/`` (the
public trace has all 17 traces; ``all`` takes every pod list there).
"""
import argparse
import json
import os
import statistics
import sys
import time

from tensorsched.experiments import sweep as S
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.openb import batch as RB
from tensorsched.topology.openb import replay as R

from .harness import git_commit, machine_info

HERE = os.path.dirname(os.path.realpath(__file__))     # the repository's bench/
DATA = os.path.join(HERE, "..", "data", "openb")
TRACES = "default,cpu100,gpushare40,gpushare80,gpuspec10,multigpu20"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", default=TRACES)
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--backend", default="numba")
    ap.add_argument("--output", default=os.path.join(HERE, "results", "openb-replay.json"))
    ap.add_argument("--csv", help="also keep the sweep CSV here")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--framework", action="store_true")
    ap.add_argument("--compare-replay", action="store_true")
    a = ap.parse_args(argv)
    nodes = os.path.join(a.data, "csv", "openb_node_list_gpu_node.csv")
    exp = os.path.join(a.data, "expected_results", "analysis_allo_discrete.csv")
    if a.traces == "all":           # every pod list (published means for some of them)
        traces = sorted(f[len("openb_pod_list_"):-4] for f in os.listdir(os.path.join(a.data, "csv"))
                        if f.startswith("openb_pod_list_") and f.endswith(".csv"))
    else:
        traces = a.traces.split(",")
    policies = a.policies.split(",")
    seeds = R.parse_seeds(a.seeds)
    pods = [os.path.join(a.data, "csv", f"openb_pod_list_{t}.csv") for t in traces]
    t0 = time.perf_counter()
    if a.framework:
        out = _framework_sweep(nodes, pods, policies, seeds, a.workers, a.backend)
    else:
        out = [(w, _row(r)) for w, r in RB.sweep(nodes, pods, policies, seeds,
                                                workers=a.workers, backend=a.backend,
                                                output=a.csv)]
    wall = time.perf_counter() - t0
    versus = None
    if a.compare_replay:
        # replay's own loop, per run
        theirs = R.sweep(nodes, pods, policies, seeds, workers=a.workers, backend=a.backend)
        versus = {(w, r.policy, r.seed): r for w, r in theirs}
    rows = []
    for trace in traces:
        wl = f"openb_pod_list_{trace}"
        for pol in policies:
            res = [r for w, r in out if w == wl and r["policy"] == pol]
            row = {"trace": trace, "policy": pol, "seeds": a.seeds,
                   "seconds_per_run": round(statistics.mean(r["seconds"] for r in res), 3),
                   "runs": len(res)}
            if versus is not None:
                row["max_abs_diff_to_replay"] = max(
                    abs(r[col] - float(versus[(wl, pol, r["seed"])].alloc[col]))
                    for r in res for col in (100, 130))
            for col in (100, 130):
                row[f"ours_{col}"] = round(statistics.mean(r[col] for r in res), 2)
                pub = R.read_expected(exp, wl, pol, col)
                row[f"published_{col}"] = round(statistics.mean(pub), 2) if pub else None
                row[f"diff_{col}"] = (round(row[f"ours_{col}"] - row[f"published_{col}"], 2)
                                      if pub else None)
            rows.append(row)
            print(json.dumps(row), flush=True)
    rec = {"rows": rows, "runs": len(out), "workers": a.workers or os.cpu_count(),
           "sweep_wall_seconds": round(wall, 1), "backend": a.backend,
           "through": "framework (Simulation + Scheduler)" if a.framework else "replay",
           "nodes": "data/openb/csv/openb_node_list_gpu_node.csv (1213 GPU nodes, 6212 GPUs)",
           "max_abs_diff": max((max(abs(r["diff_100"]), abs(r["diff_130"])) for r in rows
                                if r["diff_100"] is not None), default=None),
           "commit": git_commit(), "machine": machine_info(),
           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "note": "seconds_per_run is one replay (one core); the first run in each worker "
                   "includes loading Numba's on-disk cache"}
    os.makedirs(os.path.dirname(a.output), exist_ok=True)
    with open(a.output, "w") as f:
        json.dump(rec, f, indent=2)
    return 0


def _row(r: R.ReplayResult) -> dict:
    return {"policy": r.policy, "seed": r.seed, "seconds": r.seconds,
            100: float(r.alloc[100]), 130: float(r.alloc[130])}


def _framework_sweep(nodes, pods, policies, seeds, workers, backend) -> list:
    """The same jobs as ``R.sweep`` through ``tensorsched.sweep``'s
    experiment preset: [(workload, {policy, seed, seconds, 100, 130})]."""
    jobs = S.make_jobs(pods, seeds, policies=policies, experiment=True, nodes=nodes,
                       backend=backend)
    table = S.run_sweep(jobs, workers=workers, progress=True).to_pylist()
    return [(R.workload_name(j.trace), {"policy": r["policy"], "seed": r["seed"],
                                       "seconds": r["wall_seconds"], 100: r["alloc_at_100"],
                                       130: r["alloc_at_130"]})
            for j, r in zip(jobs, table)]


if __name__ == "__main__":
    sys.exit(main())
