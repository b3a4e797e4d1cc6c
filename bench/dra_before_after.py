"""The DRA workload's throughput, this tree and a base tree, alternated.

``tensorsched bench --workload dra`` (numba by default) in separate
processes, this tree and commit ``--base-commit`` laid out as
``harness.base_tree`` lays it out, in turn for ``--rounds`` rounds;
each process's record kept (CPU seconds of the timed run, pods per second,
p50, placements digest, load average before the run).  The placements of
the two trees must agree (the record says whether they do).

python -m tensorsched.bench.dra_before_after --base-commit C [--rounds 3]
        [--nodes 500] [--pods 5000] [--backend numba]
        [--output bench/results/dra-500x5000-numba-before-after.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from tensorsched.bench.harness import git_commit, machine_info, tree_env
from tensorsched.bench.harness import base_tree

#: the fields of ``tensorsched bench``'s record kept per run
KEEP = ("cpu_seconds", "pods_per_second", "p50_us", "p99_us", "scheduled",
        "placements_sha256")


def _run(path: str | None, a) -> dict:
    load = list(os.getloadavg())
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([sys.executable, "-m", "tensorsched.cli", "bench", "--workload", "dra",
                        "--nodes", str(a.nodes), "--pods", str(a.pods), "--backend", a.backend,
                        "--output", f.name], env=tree_env(path), check=True, capture_output=True)
        with open(f.name) as out:
            rec = json.load(out)
    return {**{k: rec.get(k) for k in KEEP}, "load": load}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.dra_before_after",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--base-commit", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods", type=int, default=5000)
    ap.add_argument("--backend", default="numba")
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    base = base_tree(a.base_commit, tempfile.mkdtemp(prefix="dra-base-"))
    # one untimed run of each tree first: numba's compile cache filled
    _run(base, a)
    _run(None, a)
    runs = []
    for r in range(a.rounds):
        for label, path in (("before", base), ("after", None)):
            runs.append({"round": r + 1, "label": label, **_run(path, a)})
    digests = {run["placements_sha256"] for run in runs}
    best = {label: max(run["pods_per_second"] for run in runs if run["label"] == label)
            for label in ("before", "after")}
    out = {"table": "dra-before-after", "workload": "dra", "nodes": a.nodes, "pods": a.pods,
           "backend": a.backend, "commit": git_commit(), "base": a.base_commit,
           "machine": machine_info(), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                 time.gmtime()),
           "placements_agree": len(digests) == 1, "best_pods_per_second": best, "runs": runs}
    text = json.dumps(out, indent=2)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
