"""The cuda backend's host-device traffic a device run, two source trees.

Counts, not times: the record's ``device_counters`` (kernels launched,
host-to-device copies, bytes uploaded) of the spread and antiaffinity
workloads on the cuda backend (their pods go in device runs), this tree
against a base tree (``--base-commit C``, laid out as
``openb_nominees.base_tree`` lays it out), in alternated processes, with
the placements digests (they must agree).  Without a GPU it runs under
Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``): slow, so the sizes are
small, but the counts are the device's.  Per run = counters / compiled
runs (the warm-up run is outside the timed part).  Each tree counts what
its own backend counts: an older tree may leave some uploads uncounted
(say so in the record).

python -m tensorsched.bench.gpu_counters --base-commit C [--nodes 300] [--pods 100]
        [--output bench/results/gpu-counters-cudasim-300.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from tensorsched.bench.harness import git_commit, machine_info
from tensorsched.bench.openb_nominees import base_tree
from tensorsched.kernels._deps import gpu_present

WORKLOADS = ("spread", "antiaffinity")


def _record(path: str | None, workload: str, nodes: int, pods: int) -> dict:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    if not gpu_present():
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([sys.executable, "-m", "tensorsched.cli", "bench", "--workload", workload,
                        "--nodes", str(nodes), "--pods", str(pods), "--backend", "cuda",
                        "--output", f.name], env=env, check=True, capture_output=True)
        rec = json.load(open(f.name))
    counters = rec.get("device_counters") or {}
    runs = max(rec.get("compiled_runs") or 0, 1)
    return {"compiled_runs": rec.get("compiled_runs"), "mean_run_length":
            rec.get("mean_run_length"), "device_counters": counters,
            "per_run": {k: round(v / runs, 2) for k, v in counters.items()},
            "placements_sha256": rec.get("placements_sha256")}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-commit", required=True)
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--pods", type=int, default=100)
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    base = base_tree(a.base_commit, tempfile.mkdtemp(prefix="gpu-counters-base-"))
    out = {}
    for k, workload in enumerate(WORKLOADS):
        trees = [("this", None), ("base", base)]
        for name, path in (trees if k % 2 == 0 else trees[::-1]):      # alternated
            out.setdefault(workload, {})[name] = _record(path, workload, a.nodes, a.pods)
        got = out[workload]
        got["same_placements"] = (got["this"]["placements_sha256"]
                                  == got["base"]["placements_sha256"])
    record = {"experiment": "cuda device runs: launches, copies and bytes a run, this tree vs "
                            "the base tree (module doc)",
              "backend": "cuda", "device": "gpu" if gpu_present() else "numba cuda simulator",
              "nodes": a.nodes, "pods": a.pods, "workloads": out,
              "commit": git_commit(), "base_commit": a.base_commit, "machine": machine_info(),
              "load_after": list(os.getloadavg()),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                    f"gpu-counters-{'gpu' if gpu_present() else 'cudasim'}-"
                                    f"{a.nodes}.json")
    with open(dest, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps({w: {t: v[t]["per_run"] for t in ("this", "base")}
                      for w, v in out.items()}, indent=1))
    return record


if __name__ == "__main__":
    main()
