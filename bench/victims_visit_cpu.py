"""The numba visit on counts over every node (no early stop), warm: CPU ms
a visit, for before/after records of ``kernels.victims._counts_core``.  Run
it in alternated processes, a base tree first on ``PYTHONPATH`` for the
before (``bench.harness.base_tree`` lays one out); one JSON line out.

python -m tensorsched.bench.victims_visit_cpu spread|antiaffinity NODES REPS
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from tensorsched.bench.preemption import build
from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.preemption.host_search import HostVictimSearch, active_host_filters
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.kernels.victims import on_counts as VS


def visit_cpu(variant: str, nodes: int, reps: int) -> dict:
    """The first preemptor of ``preemption-<variant>`` on ``nodes`` nodes:
    its search on counts over every node ``reps`` times after one warm-up."""
    cluster, pending = build(nodes, 1, 100, variant)
    pod = pending[0]
    fw = cluster.framework_for(pod, "numba")
    state = cluster.state
    result = fw.run_cycle(state, pod, all_nodes=True)
    ctx = CycleContext(state, pod, fw)
    host = active_host_filters(fw, ctx, result.skipped_filters)
    table = cluster.pod_table()
    pods = table.sync()
    search = HostVictimSearch(ctx, result.query, host, pod_priority(pod), pods, table.keys,
                              classes=(table.cls, table.class_records), order=table.order,
                              alike_from=table.alike_from)
    rows = state.valid_rows()

    def once():
        visit = VS.VisitState(rows.shape[0] + 1, pods.pod_prio.shape[1])
        return search.visit(rows, 0, visit, keep_victims=False)
    once()
    c0 = time.process_time()
    for _ in range(reps):
        got = once()
    c1 = time.process_time()
    search.close()
    return {"variant": variant, "nodes": nodes, "reps": reps,
            "cpu_ms_per_visit": round((c1 - c0) / reps * 1e3, 3),
            "kinds": np.bincount(got.kind).tolist()}


if __name__ == "__main__":
    print(json.dumps(visit_cpu(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
