"""A preemptor's failed cycle with its rules staging sent by one driver
copy and by the device array's copy, compared in one process as
``bench.preempt_retry_paired`` compares the retry (cuda under the
simulator, every launch a host stand-in with the kernels' outputs, the
kernels taken out; blocks of ``--block`` preemptors taking turns, each
block's first left out): ``new`` sends a rules cycle's staging by one
driver copy (``DeviceRuleTable.DRIVER_COPY``), ``old`` by the device
array's ``copy_to_device``.

python -m tensorsched.bench.cycle_side_paired --workload preemption-spread
        [--nodes 10000] [--pods 60] [--block 10] [--output FILE]
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import argparse      # noqa: E402

from tensorsched.bench.harness import write_record  # noqa: E402
from tensorsched.bench.preempt_retry_paired import paired  # noqa: E402
from tensorsched.kernels import domain_rules_cycle as DRC  # noqa: E402


def _paths(_sched, new: bool) -> None:
    DRC.DeviceRuleTable.DRIVER_COPY = new


def run(workload: str, nodes: int, pods: int, block: int) -> dict:
    """The record of one paired run (module doc)."""
    try:
        rec, got = paired(workload, nodes, pods, block, _paths, ("new", "old"))
    finally:
        _paths(None, True)
    return {"bench": "host CPU microseconds a preemptor, a failed cycle's rules staging "
                     "sent by one driver copy (new) or by the device array's copy (old), "
                     "blocks taking turns in one process (bench.cycle_side_paired)",
            "workload": workload, "nodes": nodes, "pods": pods, "block": block,
            "backend": "cuda", "simulator": os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
            "stub_all": True, **got,
            "placements_sha256": rec["placements_sha256"], "preemptions": rec["preemptions"],
            **{k: rec[k] for k in ("seed", "commit", "machine", "timestamp", "load")}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="preemption-spread",
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
