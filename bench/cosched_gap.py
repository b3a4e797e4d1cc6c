"""Coscheduling's minResources check (``Coscheduling.resource_gap``) on the
preemption workload's cluster (30 bound pods a node): milliseconds a call.

A gang member's PreFilter runs the check whenever its group has not
passed within permitWaitingTimeSeconds, so a group that does not fit pays
it on every attempt of every member.

    python -m tensorsched.bench.cosched_gap --nodes 10000 --output bench/results/x.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from tensorsched.framework.plugins import coscheduling as C

from .harness import record_stamp
from .preemption import build


def run(nodes: int, calls: int = 5) -> dict:
    """The record: ``ms_per_call_p50`` over ``calls`` calls, the gap found."""
    cluster, _ = build(nodes, 1, 100)
    plugin = C.Coscheduling(C.CoschedulingArgs())
    group = C.PodGroup("default", "g", 4, min_resources={"cpu": 1000})
    times, gap = [], None
    for _ in range(calls):
        t0 = time.perf_counter()
        gap = plugin.resource_gap(cluster.state, group)
        times.append(time.perf_counter() - t0)
    return {"bench": "Coscheduling.resource_gap, ms a call", "nodes": nodes,
            "bound_pods": len(cluster.state.pods), "calls": calls,
            "ms_per_call_p50": round(statistics.median(times) * 1e3, 3), "gap": gap,
            **record_stamp(0)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.cosched_gap",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--output", type=Path)
    args = ap.parse_args(argv)
    if args.nodes < 1 or args.calls < 1:
        ap.error(f"--nodes and --calls must be at least 1 (got {args.nodes}, {args.calls})")
    text = json.dumps(run(args.nodes, args.calls), indent=1)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
