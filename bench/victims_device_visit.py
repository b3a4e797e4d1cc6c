"""The plain device victim search's bytes up a preemptor, two source trees.

Counts, not times: ``DeviceVictims.search_and_pick`` (the device search when
no host filter applies) on the cuda backend, this tree against a base tree
(``--base-commit C``, laid out as ``harness.base_tree`` lays it out),
in alternated processes under Numba's CUDA simulator without a GPU (the
counts are the device's, the times are not).  Two measures per tree:

- ``preemption``: the basic preemption workload (``bench.preemption``) at
  each ``--nodes``, ``--pods`` preemptors; per preemptor the counters of
  the victim mirror (``victim_device_counters``) and the placements digest;
- ``nominated``: the second preemptor's attempt beside one nominated pod
  (``victims_counts_device``'s cluster plus fillers) at several N: the
  bytes its search sends up.

Before the resident visiting order each preemptor sent its order whole (8
bytes a node); after, a rotation of the last one sends only its offset.

python -m tensorsched.bench.victims_device_visit --base-commit C
        [--nodes 150 300] [--pods 20]
        [--output bench/results/victims-device-visit-cudasim.json]
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
from tensorsched.bench.harness import base_tree
from tensorsched.kernels._deps import gpu_present

FILLERS = (40, 160, 640, 2560)


def _child(kind: str, nodes: int, pods: int) -> dict:
    """One measure in this process (the tree on ``sys.path``)."""
    if kind == "nominated":
        from tensorsched.bench.victims_counts_device import nominated_traffic
        got = nominated_traffic(nodes)
        return {"nodes": got["nodes"], "bytes_uploaded": got["bytes_uploaded"],
                "victims": got["victims"], "nominated_node": got["nominated_node"]}
    from tensorsched.bench.preemption import run_preemption
    rec = run_preemption(nodes, pods, "cuda")
    counters = rec.get("victim_device_counters") or {}
    n = max(rec["preemptions"], 1)
    return {"nodes": nodes, "preemptions": rec["preemptions"],
            "placements_sha256": rec["placements_sha256"],
            "victim_device_counters": counters,
            "per_preemptor": {k: round(v / n, 2) for k, v in counters.items()}}


def _run(path: str | None, kind: str, nodes: int, pods: int) -> dict:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    if not gpu_present():
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    out = subprocess.run([sys.executable, "-m", "tensorsched.bench.victims_device_visit",
                          "--child", kind, str(nodes), str(pods)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-commit")
    ap.add_argument("--nodes", type=int, nargs="+", default=[150, 300])
    ap.add_argument("--pods", type=int, default=20)
    ap.add_argument("--output")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_child(a.child[0], int(a.child[1]), int(a.child[2]))))
        return {}
    if not a.base_commit:
        ap.error("--base-commit is required")
    base = base_tree(a.base_commit, tempfile.mkdtemp(prefix="victims-visit-base-"))
    jobs = [("preemption", n, a.pods) for n in a.nodes] + [("nominated", f, 0) for f in FILLERS]
    out: dict = {"preemption": [], "nominated": []}
    for k, (kind, nodes, pods) in enumerate(jobs):
        trees = [("this", None), ("base", base)]
        got = {}
        for name, path in (trees if k % 2 == 0 else trees[::-1]):      # alternated
            got[name] = _run(path, kind, nodes, pods)
        if kind == "preemption":
            got["same_placements"] = (got["this"]["placements_sha256"]
                                      == got["base"]["placements_sha256"])
        else:
            got["same_answers"] = all(got["this"][f] == got["base"][f]
                                      for f in ("victims", "nominated_node"))
        out[kind].append(got)
    record = {"experiment": "the plain device victim search: bytes up a preemptor with the "
                            "visiting order resident (this) vs sent whole (base), module doc",
              "backend": "cuda", "device": "gpu" if gpu_present() else "numba cuda simulator",
              "pods": a.pods, "results": out,
              "note": "counts only; times under the simulator are not device times",
              "commit": git_commit(), "base_commit": a.base_commit, "machine": machine_info(),
              "load_after": list(os.getloadavg()),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                    f"victims-device-visit-"
                                    f"{'gpu' if gpu_present() else 'cudasim'}.json")
    with open(dest, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps({kind: [{t: (g[t].get("per_preemptor", {}).get("bytes_uploaded")
                                  if kind == "preemption" else g[t]["bytes_uploaded"])
                              for t in ("this", "base")} for g in rows]
                      for kind, rows in out.items()}, indent=1))
    return record


if __name__ == "__main__":
    main()
