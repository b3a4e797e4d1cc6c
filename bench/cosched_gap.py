"""Coscheduling's minResources check (``Coscheduling.resource_gap``) on the
preemption workload's cluster (30 bound pods a node): milliseconds a call.

A gang member's PreFilter runs the check whenever its group has not
passed within permitWaitingTimeSeconds, so a group that does not fit pays
it on every attempt of every member.

    python -m tensorsched.bench.cosched_gap --nodes 10000 --output bench/results/x.json
"""

from __future__ import annotations

import statistics
import sys
import time

from tensorsched.framework.plugins import coscheduling as C

from .harness import record_stamp, sized_main
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
    return sized_main(argv, __doc__, "python -m tensorsched.bench.cosched_gap", run,
                      {"nodes": 10_000, "calls": 5})

if __name__ == "__main__":
    sys.exit(main())
