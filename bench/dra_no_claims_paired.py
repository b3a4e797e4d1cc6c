"""DynamicResources' PostFilter for preemptors without claims, its status
shared (``share_no_claims_status``, after) or built per call (before),
compared in one process: whole numba preemption runs
(``bench.preemption.run_preemption``) taking turns, each PostFilter call of
the plugin timed (perf_counter, microseconds), with the run's CPU per
attempt and placements.  The whole-attempt p50s differ by far less than
their run-to-run spread; the per-call times are the measure.

python -m tensorsched.bench.dra_no_claims_paired [--nodes 10000] [--pods 30]
        [--rounds 3] [--variant spread] [--output FILE]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tensorsched.bench.harness import write_record
from tensorsched.bench.preemption import run_preemption
from tensorsched.framework.plugins import dynamic_resources as dr


def run(nodes: int, pods: int, rounds: int, variant: str = "") -> dict:
    """The record of ``rounds`` pairs of runs, after first (module doc)."""
    post_filter = dr.DynamicResources.post_filter
    calls: list = []
    side = {"shared": True}

    def timed(self, *args, **kwargs):
        self.share_no_claims_status = side["shared"]
        t0 = time.perf_counter()
        try:
            return post_filter(self, *args, **kwargs)
        finally:
            calls.append(time.perf_counter() - t0)
    dr.DynamicResources.post_filter = timed
    sides: dict = {"after": [], "before": []}
    try:
        for _ in range(rounds):
            for name, shared in (("after", True), ("before", False)):
                side["shared"] = shared
                del calls[:]
                rec = run_preemption(nodes, pods, "numba", variant=variant)
                # the warm-up's call (first) is not a preemptor's
                each = [round(c * 1e6, 2) for c in calls[1:]]
                sides[name].append({
                    "post_filter_us_p50": round(float(np.median(each)), 2) if each else None,
                    "post_filter_calls": len(each),
                    "cpu_per_attempt_us_p50": rec["cpu_per_attempt_us"]["p50"],
                    "placements_sha256": rec["placements_sha256"],
                    "load": rec.get("load")})
    finally:
        dr.DynamicResources.post_filter = post_filter
    shas = {r["placements_sha256"] for s in sides.values() for r in s}
    med = {name: {k: float(np.median([r[k] for r in rs]))
                  for k in ("post_filter_us_p50", "cpu_per_attempt_us_p50")}
           for name, rs in sides.items()}
    return {"bench": "DynamicResources PostFilter microseconds a preemptor without claims, "
                     "the status shared (after) or built per call (before), whole numba "
                     "preemption runs taking turns in one process (bench.dra_no_claims_paired)",
            "workload": "preemption-" + variant if variant else "preemption",
            "nodes": nodes, "pods": pods, "rounds": rounds, "backend": "numba",
            "medians": med, "same_placements": len(shas) == 1, **sides,
            **{k: rec[k] for k in ("commit", "machine", "timestamp") if k in rec}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pods", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variant", default="", choices=("", "spread", "antiaffinity"))
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    rec = run(args.nodes, args.pods, args.rounds, args.variant)
    write_record(rec, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
