"""openb replay benchmark: ours vs the paper simulator's published means.

python bench/openb_replay.py [--traces default,...] [--seeds 42,43,44] [--output bench/results/openb-replay.json]
Records, per trace and policy, our mean allocation ratio at 100 % and 130 %
of arrived demand, the published mean (seeds 42-51), and the time per run.
"""
import argparse, json, os, statistics, sys, time

from tensorsched.framework import bench as B
from tensorsched.framework.replay import (read_expected, read_openb_nodes, read_openb_pods,
                                          replay)
from tensorsched.kernels.gpu_share import POLICIES

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "openb")

def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", default="default")
    ap.add_argument("--seeds", default="42,43,44")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--output", default=os.path.join(HERE, "results", "openb-replay.json"))
    a = ap.parse_args(argv)
    nodes = read_openb_nodes(os.path.join(DATA, "csv", "openb_node_list_all_node.csv"))
    exp = os.path.join(DATA, "expected_results", "analysis_allo_discrete.csv")
    rows = []
    for trace in a.traces.split(","):
        wl = f"openb_pod_list_{trace}"
        pods = read_openb_pods(os.path.join(DATA, "csv", wl + ".csv"))
        for pol in a.policies.split(","):
            res = [replay(nodes, pods, pol, seed=int(s)) for s in a.seeds.split(",")]
            row = {"trace": trace, "policy": pol, "seeds": a.seeds,
                   "seconds_per_run": round(statistics.mean(r.seconds for r in res), 3)}
            for col in (100, 130):
                row[f"ours_{col}"] = round(statistics.mean(float(r.alloc[col]) for r in res), 2)
                pub = read_expected(exp, wl, pol, col)
                row[f"published_{col}"] = round(statistics.mean(pub), 2)
                row[f"diff_{col}"] = round(row[f"ours_{col}"] - row[f"published_{col}"], 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    rec = {"rows": rows, "commit": B.git_commit(), "machine": B.machine_info(),
           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "note": "first run of a policy includes Numba JIT compilation"}
    os.makedirs(os.path.dirname(a.output), exist_ok=True)
    with open(a.output, "w") as f:
        json.dump(rec, f, indent=2)
    return 0

if __name__ == "__main__":
    sys.exit(main())
