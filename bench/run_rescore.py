"""The device run's work per pod under Numba's CUDA simulator, two source trees.

Counts, not times (no GPU here): for the spread and antiaffinity workloads on
the cuda backend (their pods go in device runs, ``_cuda_run``), per pod placed
by a device run:

* row evaluations: the run kernel body's calls of its feasibility test
  (``_feasible``), of the tie rank (``tie_rank``: one per key computed) and
  of the raw spread and affinity scores (``spread_raw``, ``affinity_raw``),
  counted where the simulator calls device functions;
* block barriers: ``syncthreads`` calls by thread 0 inside the run kernel's
  body, a ``syncthreads_or`` counted once; the simulator's shuffle stand-ins
  (``_cuda_block._sim_exchange``, a barrier each) are counted apart, as
  ``shuffle_exchanges``: on a GPU a shuffle is no barrier;
* this tree's own counters (``OWN``; an older tree keeps none);

with the placements digest, cuda against numba in the same process (they must
agree).  Each tree runs in its own process (``--base-commit C``: the base
laid out as ``harness.base_tree`` lays it out).

NUMBA_ENABLE_CUDASIM=1 python -m tensorsched.bench.run_rescore --base-commit C
        [--nodes 300,1000] [--pods 200] [--output bench/results/run-rescore-cudasim.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from tensorsched import synthetic
from tensorsched.bench.harness import git_commit, machine_info, placements_sha256
from tensorsched.bench.harness import base_tree
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

WORKLOADS = ("spread", "antiaffinity")
COUNTED = ("_feasible", "tie_rank", "spread_raw", "affinity_raw")
OWN = ("run_rows_recomputed", "run_rows_rekeyed", "run_full_scans", "run_pods")
_BODY = "_place_run_body"


def _inside_body(frame) -> bool:
    """Whether ``frame`` is (under) the run kernel's body, some calls up."""
    for _ in range(24):
        if frame is None:
            return False
        if frame.f_code.co_name == _BODY:
            return True
        frame = frame.f_back
    return False


def _instrument(counts: dict) -> None:
    """Make the simulator count into ``counts``: the run kernel body's
    calls of its row functions (under the simulator a device function is a
    ``FakeCUDAKernel`` called from Python, so the call and its caller show)
    and its barriers."""
    from numba.cuda.simulator import kernel as sim

    real_call = sim.FakeCUDAKernel.__call__

    def call(self, *args):
        name = getattr(self.fn, "__name__", "")
        if name in COUNTED and sys._getframe(1).f_code.co_name == _BODY:
            counts[name] += 1
        return real_call(self, *args)
    sim.FakeCUDAKernel.__call__ = call
    real_sync, real_or = sim.BlockThread.syncthreads, sim.BlockThread.syncthreads_or

    def syncthreads(self):
        if self.threadIdx.x == 0 and not getattr(self, "in_or", False):
            caller = sys._getframe(2)           # past FakeCUDAModule.syncthreads
            if caller.f_code.co_name == "_sim_exchange":
                if _inside_body(caller):
                    counts["shuffle_exchanges"] += 1
            elif _inside_body(caller):
                counts["barriers"] += 1
        return real_sync(self)

    def syncthreads_or(self, value):
        if self.threadIdx.x == 0 and _inside_body(sys._getframe(2)):
            counts["barriers"] += 1
        self.in_or = True
        try:
            return real_or(self, value)
        finally:
            self.in_or = False
    sim.BlockThread.syncthreads = syncthreads
    sim.BlockThread.syncthreads_or = syncthreads_or


def child(workload: str, nodes: int, pods: int) -> dict:
    """This process's tree: the counts of ``workload`` on the cuda backend
    and both backends' placements digests."""
    counts = dict.fromkeys((*COUNTED, "barriers", "shuffle_exchanges"), 0)
    node_objs, pod_objs = synthetic.workload(workload, nodes, pods, 0)
    digests = {}
    for backend in ("numba", "cuda"):
        if backend == "cuda":
            _instrument(counts)
        sched = Scheduler(build_cluster(node_objs, synthetic.config(workload)), backend, 0,
                          batch=True)
        bindings = sched.schedule_pending(pod_objs)[0]
        digests[backend] = placements_sha256(bindings)
    be = next(iter(sched.cluster.frameworks.values())).backend
    placed = sched.placed_by.get("device_run", 0)
    per = max(placed, 1)
    own = {k: getattr(be, k) for k in OWN if hasattr(be, k)}
    return {"workload": workload, "nodes": nodes, "pods": pods,
            "device_run_pods": placed, "counts": counts,
            "per_pod": {k: round(v / per, 2) for k, v in counts.items()},
            "own_counters": own,
            "placements_sha256": digests["cuda"],
            "same_placements_as_numba": digests["cuda"] == digests["numba"]}


def _run_tree(path: str | None, workload: str, nodes: int, pods: int) -> dict:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    got = subprocess.run([sys.executable, "-m", "tensorsched.bench.run_rescore", "--child",
                          workload, str(nodes), str(pods)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(got.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.run_rescore",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=3, metavar=("WORKLOAD", "NODES", "PODS"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--base-commit", default=None)
    ap.add_argument("--nodes", default="300,1000")
    ap.add_argument("--pods", type=int, default=200)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--output", default="bench/results/run-rescore-cudasim.json")
    args = ap.parse_args(argv)
    if args.child:
        w, n, p = args.child
        print(json.dumps(child(w, int(n), int(p))))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = base_tree(args.base_commit, os.path.join(tmp, "base")) if args.base_commit \
            else None
        for nodes in (int(x) for x in args.nodes.split(",")):
            for workload in args.workloads.split(","):
                rec = {"after": _run_tree(None, workload, nodes, args.pods)}
                if base:
                    rec["before"] = _run_tree(base, workload, nodes, args.pods)
                    rec["same_placements_before_after"] = (
                        rec["before"]["placements_sha256"] == rec["after"]["placements_sha256"])
                rows.append(rec)
                print(json.dumps(rec), flush=True)
    out = {"benchmark": "run_rescore", "backend": "cuda (NUMBA_ENABLE_CUDASIM=1)",
           "commit": git_commit(), "base": args.base_commit, "machine": machine_info(),
           "note": "counts under Numba's CUDA simulator (4-thread warps, at most 16 "
                   "threads a block): no device timing", "results": rows}
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
