"""A preemptor's retry with and without the row check the victim search
already proved (``SchedulingCycle.trust_victim_search``), compared in one
process: the host's share of each preemptor as ``bench.preempt_host``
times it (cuda under the simulator, every launch a host stand-in with the
kernels' outputs: ``--stub-all``; the kernels taken out), the flag set
for blocks of ``--block`` preemptors in turn and the first preemptor of
each block left out (the one after a switch: what the previous block
left warm or cold is not its own).  Two processes of two trees differ by
more than their code on a shared machine (single rounds of one workload
vary by up to half); in one process, blocks taking turns, both sides see
the same machine.

python -m tensorsched.bench.preempt_retry_paired --workload preemption-spread
        [--nodes 10000] [--pods 60] [--block 10] [--output FILE]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import argparse      # noqa: E402

import numpy as np   # noqa: E402

from tensorsched.bench import preempt_host as PH  # noqa: E402
from tensorsched.bench.harness import write_record  # noqa: E402
from tensorsched.framework.scheduler.scheduler import Scheduler  # noqa: E402


def paired(workload: str, nodes: int, pods: int, block: int, set_side,
           names: tuple[str, str]) -> tuple[dict, dict]:
    """(``preempt_host``'s record of the run, {name: that side's attempts})
    with ``set_side(scheduler, first)`` called before each preemptor, its
    ``first`` True for the blocks of ``block`` preemptors that take
    ``names[0]``'s side, False for ``names[1]``'s, in turn; each block's
    first preemptor left out (module doc)."""
    one = Scheduler.schedule_one
    sides: list = []            # per call: (first side, first of its block)

    def schedule_one(self, pod=None):
        i = len(sides)
        side = (i // block) % 2 == 0
        set_side(self, side)
        sides.append((side, i % block == 0))
        return one(self, pod)
    Scheduler.schedule_one = schedule_one
    try:
        rec = PH.run(workload, nodes, pods, stub_victims=True, stub_cycle=True,
                     stub_rest=True, items=False)
    finally:
        Scheduler.schedule_one = one
    host = rec["host_us_per_attempt"]["each"]
    timed = sides[len(sides) - len(host):]      # the bench's timed attempts
    got = {}
    for name, want in zip(names, (True, False)):
        each = [h for h, (t, first) in zip(host, timed) if t == want and not first]
        got[name] = {"attempts": len(each),
                     "host_us_p50": round(float(np.median(each)), 1) if each else None,
                     "host_us_mean": round(float(np.mean(each)), 1) if each else None,
                     "each": each}
    return rec, got


def _trust(sched, trusted: bool) -> None:
    sched.cycle.trust_victim_search = trusted


def paired_record(bench: str, rec: dict, got: dict, workload: str, nodes: int, pods: int,
                  block: int, **extra) -> dict:
    """The JSON record of one paired run: ``bench`` says what the sides
    are, ``got`` each side's attempts (``paired``), ``extra`` fields the
    bench adds, ``rec`` (``preempt_host``'s record) the placements and the
    machine."""
    return {"bench": bench, "workload": workload, "nodes": nodes, "pods": pods,
            "block": block, **extra,
            "backend": "cuda", "simulator": os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
            "stub_all": True, **got,
            "placements_sha256": rec["placements_sha256"], "preemptions": rec["preemptions"],
            **{k: rec[k] for k in ("seed", "commit", "machine", "timestamp", "load")}}


def paired_main(argv, doc: str, run, workload: str = "preemption") -> int:
    """The command line of a paired bench: ``run(workload, nodes, pods,
    block)``'s record written (``harness.write_record``); ``workload`` the
    default."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--workload", default=workload,
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


def run(workload: str, nodes: int, pods: int, block: int) -> dict:
    """The record of one paired run (module doc)."""
    rec, got = paired(workload, nodes, pods, block, _trust, ("trusted", "checked"))
    return paired_record("host CPU microseconds a preemptor, the retry's row check left out "
                         "where the victim search proved the fit (trusted) or made (checked), "
                         "blocks taking turns in one process (bench.preempt_retry_paired)",
                         rec, got, workload, nodes, pods, block)


def main(argv=None) -> int:
    return paired_main(argv, __doc__, run)


if __name__ == "__main__":
    raise SystemExit(main())
