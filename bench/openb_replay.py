"""openb replay benchmark: ours vs the paper simulator's published means.

python -m tensorsched.bench.openb_replay [--traces default,...] [--seeds 42-51] [--workers N]
                                        [--output bench/results/openb-replay.json] [--csv sweep.csv]
Runs the sweep (policies x traces x seeds, all cores) on the paper's cluster
(the 1,213 GPU nodes), then records per trace and policy our mean
allocation ratio at 100 % and 130 % of arrived demand, the published mean
(seeds 42-51), and the time per run.
"""
import argparse
import json
import os
import statistics
import sys
import time

from tensorsched.kernels.gpu.share import POLICIES
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
    a = ap.parse_args(argv)
    nodes = os.path.join(DATA, "csv", "openb_node_list_gpu_node.csv")
    exp = os.path.join(DATA, "expected_results", "analysis_allo_discrete.csv")
    traces = a.traces.split(",")
    policies = a.policies.split(",")
    seeds = R.parse_seeds(a.seeds)
    pods = [os.path.join(DATA, "csv", f"openb_pod_list_{t}.csv") for t in traces]
    t0 = time.perf_counter()
    out = R.sweep(nodes, pods, policies, seeds, workers=a.workers, backend=a.backend, output=a.csv)
    wall = time.perf_counter() - t0
    rows = []
    for trace in traces:
        wl = f"openb_pod_list_{trace}"
        for pol in policies:
            res = [r for w, r in out if w == wl and r.policy == pol]
            row = {"trace": trace, "policy": pol, "seeds": a.seeds,
                   "seconds_per_run": round(statistics.mean(r.seconds for r in res), 3)}
            for col in (100, 130):
                row[f"ours_{col}"] = round(statistics.mean(float(r.alloc[col]) for r in res), 2)
                pub = R.read_expected(exp, wl, pol, col)
                row[f"published_{col}"] = round(statistics.mean(pub), 2)
                row[f"diff_{col}"] = round(row[f"ours_{col}"] - row[f"published_{col}"], 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    rec = {"rows": rows, "runs": len(out), "workers": a.workers or os.cpu_count(),
           "sweep_wall_seconds": round(wall, 1), "backend": a.backend,
           "nodes": "data/openb/csv/openb_node_list_gpu_node.csv (1213 GPU nodes, 6212 GPUs)",
           "max_abs_diff": max(max(abs(r["diff_100"]), abs(r["diff_130"])) for r in rows),
           "commit": git_commit(), "machine": machine_info(),
           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "note": "seconds_per_run is one replay (one core); the first run in each worker "
                   "includes loading Numba's on-disk cache"}
    os.makedirs(os.path.dirname(a.output), exist_ok=True)
    with open(a.output, "w") as f:
        json.dump(rec, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
