"""Preemption with PodDisruptionBudgets: the ``preemption`` workload
(``bench.preemption``: 30 low pods a node, high pods needing four victims
each) with PDBs over the low pods, per preemptor on one backend.

The PDBs (namespace ``default``): ``all-pods`` selects every pod without a
``tier`` label (all of them: the low pods and the preemptors) with
``maxUnavailable: 5%`` and no status, so its ``disruptionsAllowed`` is the
controller's rule over the bound pods, computed again after every change of
the state; ``fixed`` has the same selector and ``status.disruptionsAllowed:
2``; ``none`` selects ``tier: batch`` (no pod) with ``minAvailable: 1``.
``--pdbs 0`` runs the workload without them (the reference line).

    python -m tensorsched.bench.preempt_pdb --nodes 2000 --pods 20 --pdbs 3 --backend numba \\
        --output bench/results/preempt-pdb.json

The record: ``p50_us`` / ``p99_us`` per preempting attempt (wall),
``cpu_per_attempt_us`` (the scheduling thread's CPU, p50), the first
timed attempt's wall (``first_attempt_ms``: the victim table's first sync
with the PDBs), ``placements_sha256`` (placements and victims) and where
it ran."""

from __future__ import annotations

import statistics
import sys
import time

from tensorsched.framework.records.records import PodDisruptionBudgetRecord
from tensorsched.framework.scheduler.scheduler import Scheduler

from .harness import latency_fields, preemption_sha256, record_stamp, sized_main
from .preemption import alike, build

_NO_TIER = {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}


def budgets(count: int) -> list[PodDisruptionBudgetRecord]:
    """The first ``count`` of the module doc's PDBs (0 to 3)."""
    every = [PodDisruptionBudgetRecord("default", "all-pods", _NO_TIER, None, "5%", None, ()),
             PodDisruptionBudgetRecord("default", "fixed", _NO_TIER, None, None, 2, ()),
             PodDisruptionBudgetRecord("default", "none", {"matchLabels": {"tier": "batch"}},
                                       1, None, None, ())]
    return every[:count]


def run(nodes: int, pods: int, pdbs: int, backend: str, seed: int = 0) -> dict:
    """The record of one run (module doc)."""
    cluster, pending = build(nodes, pods + 1, 100)
    cluster.objects.pdbs[:] = budgets(pdbs)
    sched = Scheduler(cluster, backend, seed)
    # warm-up outside the timing: the compile, the victim table's first sync
    warm, pending = alike(pending[0], name="warm-up", uid="warm-up"), pending[1:]
    sched.schedule_one(warm)
    walls, cpus, bindings = [], [], []
    for pod in sched.queue_order(pending):
        t0, c0 = time.perf_counter(), time.thread_time()
        bindings.append(sched.schedule_one(pod))
        cpus.append(time.thread_time() - c0)
        walls.append(time.perf_counter() - t0)
    preempted = sum(1 for b in bindings if b.node is not None and b.victims)
    return {"bench": "preemption with PodDisruptionBudgets, a preemptor at a time",
            "workload": "preemption", "nodes": nodes, "pods": pods, "pdbs": pdbs,
            "backend": backend, "preemptions": preempted,
            **latency_fields(walls),
            "cpu_per_attempt_us": round(statistics.median(cpus) * 1e6, 1) if cpus else None,
            "first_attempt_ms": round(walls[0] * 1e3, 2) if walls else None,
            "placements_sha256": preemption_sha256(bindings),
            **record_stamp(seed)}


def main(argv=None) -> int:
    return sized_main(argv, __doc__, "python -m tensorsched.bench.preempt_pdb", run,
                      {"nodes": 2000, "pods": 20},
                      {"pdbs": (3, range(4)), "backend": ("numba", ("numpy", "numba", "cuda"))})

if __name__ == "__main__":
    sys.exit(main())
