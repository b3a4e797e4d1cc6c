"""A preemptor's victim side with this round's paths and with the ways
before them, compared in one process: the host's share of each preemptor
as ``bench.preempt_host`` times it (cuda under the simulator, every launch
a host stand-in with the kernels' outputs: ``--stub-all``), for blocks of
``--block`` preemptors in turn, the first of each block left out (what the
previous block left warm or cold is not its own).  Side ``new``: a failed
cycle's helpful rows in one pass (``evaluator.ONE_PASS_HELPFUL``) and a
few rows' slots from the rows' pods (``evaluator.ROWS_FROM_BOUND_PODS``);
side ``old``: both False (codes and helpful rows together; every slot from
the whole key index).  What neither flag turns off is on both sides: the
row write's start times gathered by slot, and the bound pods' per-row
bookkeeping on binds and removals (``BoundPods.pods_on_rows``' dicts, kept
once a sync has read them).  Whole attempts of two processes swing by
more than the difference; in one process, blocks taking turns, both sides
see the same machine.

python -m tensorsched.bench.victim_sync_paired --workload preemption
        [--nodes 10000] [--pods 60] [--block 10] [--output FILE]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import argparse      # noqa: E402

import numpy as np   # noqa: E402

from tensorsched.bench import preempt_host as PH  # noqa: E402
from tensorsched.bench.harness import write_record  # noqa: E402
from tensorsched.framework.preemption import evaluator as EV  # noqa: E402
from tensorsched.framework.scheduler.scheduler import Scheduler  # noqa: E402

_FLAGS = ("ONE_PASS_HELPFUL", "ROWS_FROM_BOUND_PODS")


def run(workload: str, nodes: int, pods: int, block: int) -> dict:
    """The record of one paired run (module doc)."""
    one = Scheduler.schedule_one
    kept = {f: getattr(EV, f) for f in _FLAGS}
    sides: list = []            # per call: (new, first of its block)

    def schedule_one(self, pod=None):
        i = len(sides)
        new = (i // block) % 2 == 0
        for f in _FLAGS:
            setattr(EV, f, new)
        sides.append((new, i % block == 0))
        return one(self, pod)
    Scheduler.schedule_one = schedule_one
    try:
        rec = PH.run(workload, nodes, pods, stub_victims=True, stub_cycle=True,
                     stub_rest=True, items=False)
    finally:
        Scheduler.schedule_one = one
        for f, v in kept.items():
            setattr(EV, f, v)
    host = rec["host_us_per_attempt"]["each"]
    timed = sides[len(sides) - len(host):]      # the bench's timed attempts
    got = {}
    for name, want in (("new", True), ("old", False)):
        each = [h for h, (t, first) in zip(host, timed) if t == want and not first]
        got[name] = {"attempts": len(each),
                     "host_us_p50": round(float(np.median(each)), 1) if each else None,
                     "host_us_mean": round(float(np.mean(each)), 1) if each else None,
                     "each": each}
    return {"bench": "host CPU microseconds a preemptor, the victim side's one-pass "
                     "helpful rows and rows' slots from the bound pods (new) or the ways "
                     "before (old), blocks taking turns in one process "
                     "(bench.victim_sync_paired)",
            "workload": workload, "nodes": nodes, "pods": pods, "block": block,
            "flags": list(_FLAGS),
            "backend": "cuda", "simulator": os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
            "stub_all": True, **got,
            "placements_sha256": rec["placements_sha256"], "preemptions": rec["preemptions"],
            **{k: rec[k] for k in ("seed", "commit", "machine", "timestamp", "load")}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="preemption",
                    choices=("preemption", "preemption-spread", "preemption-antiaffinity"))
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pods", type=int, default=60)
    ap.add_argument("--block", type=int, default=10,
                    help="preemptors a side takes in turn (the first of each left out)")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    if args.block < 2 or args.pods < 2 * args.block:
        ap.error("--block must be at least 2 and --pods at least twice --block")
    rec = run(args.workload, args.nodes, args.pods, args.block)
    write_record(rec, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
