"""DefaultPreemption's nominated pods in the node-local preemption
engines' CPU twins (``kernels.batch.local_preempt``, with node events
``local_preempt_events``), timed warm: two source trees of the package
compared in alternated processes (``--base DIR`` / ``--base-commit C``
as ``bench.openb_nominees`` takes them), each process compiling (or
loading) the twins on the cases first, outside the timing.

python -m tensorsched.bench.local_nominees [--base DIR | --base-commit C] [--rounds 3]
        [--calls 2] [--nodes 100] [--pods 1500] [--seeds 2]
        [--output bench/results/local-nominees-numba.json]

The cases (``bench.sweep_preempt``'s cluster, trace and three
configurations x ``--seeds`` seeds through ``ts.simulate_batch``, one
worker):

- ``preempt``: grace 0 (the victims leave at once);
- ``preempt_grace``: a termination grace of ``--grace`` seconds (the
  nominations outstanding longer, the preemptors waiting on their
  victims);
- ``preempt_events``: grace 0 under ``bench.sweep_preempt_events``'
  scenario (nodes drained, cordoned, added and removed: the node-event
  form).

Recorded per tree and case: the CPU seconds (the process's, all threads)
of ``--calls`` calls in each round, their mean over the rounds, the load
average before and after each process, and a digest of the answers
(placements, bind times, attempts, evictions, change log): equal digests
are equal answers.
"""
import argparse
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

import tensorsched as ts

from .harness import alternated, base_tree, cpu_seconds, git_commit, machine_info, run_child
from .sweep_preempt import write_inputs
from .sweep_preempt_events import write_scenario

CASES = ("preempt", "preempt_grace", "preempt_events")


def _digest(runs: list) -> str:
    h = hashlib.sha256()
    for r in runs:
        for x in (r.node, r.bind, r.tries, r.log_pod, r.log_t, r.victim):
            h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()[:16]


def _cases(a, where: Path) -> dict:
    """name -> a function running the case once (its runs)."""
    cluster, trace, configs = write_inputs(where, a.nodes, a.pods)
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    cfgs = [yaml.safe_load(Path(c).read_text()) for c in configs]
    seeds = list(range(a.seeds))
    scenario = write_scenario(where, a.nodes, a.pods)

    def run(grace: float = 0.0, sc=None):
        return lambda: ts.simulate_batch(objs, [trace], cfgs, seeds=seeds, scenario=sc,
                                         termination_grace_seconds=grace, workers=1)
    return {"preempt": run(), "preempt_grace": run(a.grace),
            "preempt_events": run(0.0, scenario)}


def one(a) -> dict:
    """This process's timings of the chosen cases (the module doc)."""
    rec = {"tree": os.path.dirname(os.path.dirname(os.path.realpath(ts.__file__))),
           "load_before": [round(x, 2) for x in os.getloadavg()], "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        cases = _cases(a, Path(tmp))
        for name in [c for c in a.cases.split(",") if c]:
            runs = cases[name]()            # the compile (or the cache's load), untimed
            c0, t0 = cpu_seconds(), time.perf_counter()
            for _ in range(a.calls):
                runs = cases[name]()
            rec["cases"][name] = {
                "cpu_seconds": round(cpu_seconds() - c0, 3),
                "wall_seconds": round(time.perf_counter() - t0, 3),
                "runs": len(runs), "calls": a.calls,
                "evictions": int(sum(int(r.victim.sum()) for r in runs)),
                "attempts": int(sum(int(r.tries.sum()) for r in runs)),
                "digest": _digest(runs)}
    rec["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return rec


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.local_nominees",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None)
    ap.add_argument("--base-commit", default=None,
                    help="the base tree's commit (recorded; without --base: built from it)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=2)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods", type=int, default=1500)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--grace", type=float, default=3.0)
    ap.add_argument("--one", action="store_true", help="(internal) time this process's tree")
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(a)))
        return None
    if a.base is None and a.base_commit:
        a.base = base_tree(a.base_commit, tempfile.mkdtemp(prefix="local-nominees-base-"))
    args = ["--one", "--calls", a.calls, "--cases", a.cases, "--nodes", a.nodes,
            "--pods", a.pods, "--seeds", a.seeds, "--grace", a.grace]
    trees = [("this", None)] + ([("base", a.base)] if a.base else [])
    got = alternated(trees, a.rounds,
                     lambda path: run_child("tensorsched.bench.local_nominees", args, path))
    names = [n for n in a.cases.split(",") if n]
    summary = {t: {name: {
        "cpu_seconds": [x["cases"][name]["cpu_seconds"] for x in got[t]],
        "mean_cpu_seconds": round(float(np.mean([x["cases"][name]["cpu_seconds"]
                                                 for x in got[t]])), 3),
        "digests": sorted({x["cases"][name]["digest"] for x in got[t]}),
        "evictions": got[t][0]["cases"][name]["evictions"],
        "attempts": got[t][0]["cases"][name]["attempts"],
        "runs": got[t][0]["cases"][name]["runs"]} for name in names} for t, _ in trees}
    record = {"experiment": "the node-local preemption twins, warm (compile excluded): "
                            "this tree vs the base tree, alternated processes (module doc)",
              "backend": "numba", "calls_per_timing": a.calls, "rounds": a.rounds,
              "nodes": a.nodes, "pods": a.pods, "seeds": a.seeds, "grace_seconds": a.grace,
              "summary": summary, "processes": got,
              "commit": git_commit(), "base_commit": a.base_commit,
              "machine": machine_info(),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if a.base:
        record["same_answers"] = all(summary["this"][n]["digests"] == summary["base"][n]["digests"]
                                     for n in names)
    out = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                   "local-nominees-numba.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    for name in names:
        line = f"{name}: this {summary['this'][name]['mean_cpu_seconds']} CPU s"
        if a.base:
            line += f", base {summary['base'][name]['mean_cpu_seconds']} CPU s"
        print(line)
    print(f"wrote {out}")
    return record


if __name__ == "__main__":
    main()
