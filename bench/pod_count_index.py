"""The pod-to-pod plugins' count index on a cluster already bound: its
build (the bound pods' own affinity terms) and a new key's counts (a
spread constraint's or affinity term's selector met for the first time,
or again after the index's LRU dropped it), milliseconds each, on the
preemption workload's cluster (30 bound pods a node).

    python -m tensorsched.bench.pod_count_index --nodes 10000 --output bench/results/x.json
"""

from __future__ import annotations

import statistics
import sys
import time

from tensorsched.framework.state.domain_counts import PodCountIndex

from .harness import record_stamp, sized_main
from .preemption import build


def _live_in(namespace: str):
    return lambda r: not r.deleting and r.namespace == namespace


def run(nodes: int, keys: int = 5) -> dict:
    """The record: ``build_ms`` (one index built), ``new_key_ms_p50``
    over ``keys`` new keys, the pods they counted."""
    cluster, _ = build(nodes, 1, 100)
    t0 = time.perf_counter()
    index = PodCountIndex(cluster.state)
    built = time.perf_counter() - t0
    times, counted = [], 0
    for k in range(keys):
        t0 = time.perf_counter()
        counted = int(index.counts(("bench", k), _live_in("default")).sum())
        times.append(time.perf_counter() - t0)
    return {"bench": "PodCountIndex on a bound cluster: build and a new key's counts, ms",
            "nodes": nodes, "bound_pods": len(cluster.state.pods), "keys": keys,
            "build_ms": round(built * 1e3, 3),
            "new_key_ms_p50": round(statistics.median(times) * 1e3, 3),
            "pods_counted": counted, **record_stamp(0)}


def main(argv=None) -> int:
    return sized_main(argv, __doc__, "python -m tensorsched.bench.pod_count_index", run,
                      {"nodes": 10_000, "keys": 5})

if __name__ == "__main__":
    sys.exit(main())
