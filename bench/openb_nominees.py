"""DefaultPreemption's nominated pods in the batched openb engine's CPU
twin (``kernels.batch.cpu``, numba), timed warm: two source trees of the
package compared in alternated processes (``--base DIR``: a directory
holding another tree as ``DIR/tensorsched``, put first on the path of
every other process; ``--base-commit C`` alone: commit ``C`` of this
repository laid out so in a temporary directory, with this tree's
benchmarks), each process compiling
(or loading) the twin on the cases first, outside the timing.

python -m tensorsched.bench.openb_nominees [--base DIR | --base-commit C] [--rounds 3] [--calls 2]
        [--cases openb_preempt,tiers,tiers_grace] [--data DIR]
        [--output bench/results/openb-nominees-numba.json]

The cases:

- ``openb_preempt``: ``openb_preempt``'s workload (12 nodes, 400 pods of
  gpushare40, 30 % of priority 100) x its 6 policies x seeds 1-2 through
  ``ts.simulate_batch``;
- ``tiers``: ``batch_check``'s ``preemption`` part's build
  (``preempt_traces``: the default trace's first ``--pods`` pods, times
  over 600, none leaving, priorities rising in four tiers) on the paper's
  first ``--nodes`` nodes, (FGD, BestFit) x seeds 42-43,
  DefaultPreemption (10 %, 100);
- ``tiers_grace``: the same with a termination grace of ``--grace``
  seconds (the victims terminate first: nominations outstanding longer,
  the preemptors waiting on their victims);
- ``tiers_off``: the same runs without DefaultPreemption (for scale: the
  queue and decisions alone; another schedule).

Recorded per tree and case: the CPU seconds (the process's, all threads)
of ``--calls`` calls (``openb_preempt``: 5 x as many) in each round,
their mean over the rounds, the load average before and after each
process, and a digest of the answers (placements, GPUs, attempts,
victims, change log): equal digests are equal answers.
"""
import argparse
import hashlib
import json
import os
import tempfile
import time

import numpy as np

import tensorsched as ts
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R

from .batch_check import preempt_traces, slice_nodes
from .harness import alternated, base_tree, cpu_seconds, git_commit, machine_info, run_child
from .openb_batch import DATA
from .openb_preempt import preempt_config, workload

CASES = ("openb_preempt", "tiers", "tiers_grace", "tiers_off")
SHORT = {"openb_preempt": 5}     # a short case: its calls a timing times this


def _digest(runs: list) -> str:
    h = hashlib.sha256()
    for r in runs:
        for x in (r.node, r.tries, r.log_pod, r.log_t, r.log_frag):
            h.update(np.ascontiguousarray(x).tobytes())
        h.update(repr(r.gpus).encode())
        if r.preempted is not None:
            h.update(np.ascontiguousarray(r.preempted).tobytes())
    return h.hexdigest()[:16]


def _cases(a) -> dict:
    """name -> a function running the case once (its runs)."""
    out = {}
    inv, trace = workload(a.data, "gpushare40", 12, 400, 600.0, 0.3, 30.0)
    configs = [preempt_config(p, inv.n_nodes) for p in POLICIES]
    seeds = R.parse_seeds("1-2")
    out["openb_preempt"] = lambda: ts.simulate_batch(inv, trace, configs, seeds,
                                                     backend="numba")
    nodes = read_openb_nodes(os.path.join(a.data, "csv", "openb_node_list_gpu_node.csv"))
    pre_inv = slice_nodes(nodes, a.nodes)
    tws = preempt_traces([os.path.join(a.data, "csv", "openb_pod_list_default.csv")], a.pods)
    jobs = [(0, 0, p, s) for p in ("FGD", "BestFit") for s in (42, 43)]
    out["tiers"] = lambda: B.trace_batch([pre_inv], tws, jobs, backend="numba",
                                         preempt=[(10, 100)] * len(jobs))
    out["tiers_grace"] = lambda: B.trace_batch([pre_inv], tws, jobs, backend="numba",
                                               preempt=[(10, 100)] * len(jobs),
                                               termination_grace_seconds=a.grace)
    out["tiers_off"] = lambda: B.trace_batch([pre_inv], tws, jobs, backend="numba")
    return out


def one(a) -> dict:
    """This process's timings of the chosen cases (the module doc)."""
    cases = _cases(a)
    names = [c for c in a.cases.split(",") if c]
    rec = {"tree": os.path.dirname(os.path.dirname(os.path.realpath(ts.__file__))),
           "load_before": [round(x, 2) for x in os.getloadavg()], "cases": {}}
    for name in names:
        runs = cases[name]()            # the compile (or the cache's load), untimed
        c0, t0 = cpu_seconds(), time.perf_counter()
        for _ in range(a.calls * SHORT.get(name, 1)):
            runs = cases[name]()
        rec["cases"][name] = {
            "cpu_seconds": round(cpu_seconds() - c0, 3),
            "wall_seconds": round(time.perf_counter() - t0, 3),
            "runs": len(runs),
            "calls": a.calls * SHORT.get(name, 1),
            "victims": int(sum(int(r.preempted.sum()) for r in runs if r.preempted is not None)),
            "attempts": int(sum(int(r.tries.sum()) for r in runs)),
            "digest": _digest(runs)}
    rec["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return rec


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.openb_nominees",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None)
    ap.add_argument("--base-commit", default=None,
                    help="the base tree's commit (recorded; without --base: built from it)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=2)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--pods", type=int, default=3000)
    ap.add_argument("--grace", type=float, default=30.0)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--one", action="store_true", help="(internal) time this process's tree")
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a)))
        return None
    if a.base is None and a.base_commit:
        a.base = base_tree(a.base_commit, tempfile.mkdtemp(prefix="openb-nominees-base-"))
    args = ["--one", "--calls", a.calls, "--cases", a.cases, "--nodes", a.nodes,
            "--pods", a.pods, "--grace", a.grace, "--data", a.data]
    trees = [("this", None)] + ([("base", a.base)] if a.base else [])
    got = alternated(trees, a.rounds,
                     lambda path: run_child("tensorsched.bench.openb_nominees", args, path))
    summary = {}
    for t, _ in trees:
        summary[t] = {name: {
            "cpu_seconds": [x["cases"][name]["cpu_seconds"] for x in got[t]],
            "mean_cpu_seconds": round(float(np.mean([x["cases"][name]["cpu_seconds"]
                                                     for x in got[t]])), 3),
            "digests": sorted({x["cases"][name]["digest"] for x in got[t]}),
            "victims": got[t][0]["cases"][name]["victims"],
            "attempts": got[t][0]["cases"][name]["attempts"],
            "runs": got[t][0]["cases"][name]["runs"]} for name in a.cases.split(",") if name}
    record = {"experiment": "the CPU twin with DefaultPreemption, warm (compile excluded): "
                            "this tree vs the base tree, alternated processes (module doc)",
              "backend": "numba", "calls_per_timing": a.calls, "rounds": a.rounds,
              "nodes": a.nodes, "pods": a.pods, "grace_seconds": a.grace,
              "summary": summary, "processes": got,
              "commit": git_commit(), "base_commit": a.base_commit,
              "machine": machine_info(),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if a.base:
        record["same_answers"] = all(
            summary["this"][n]["digests"] == summary["base"][n]["digests"]
            for n in summary["this"])
    out = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                   "openb-nominees-numba.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record["summary"], indent=1))
    return record


if __name__ == "__main__":
    main()
