"""The sort path against the compiled run: one run of alike pods on the
basic workload (``nodes`` identical nodes, every node scored) placed by one
``Framework.place_run``, once by the sort path (``kernels.fused.run_sort``)
and once by the compiled run (the switch ``run_sort.ENABLED`` off), each
on a fresh cluster after a warm-up; process CPU seconds of that call and
of the state's bookkeeping of the placed pods in it (``register_run``, the
same work on either path).

With ``--backend cuda`` the other side is numba's sort path, whose
placements must be the same (asserted), and the compiled-run fields hold
numba's sort path.

Checks: the sort path's first ``check`` placements equal one scheduling
cycle per pod (``Scheduler(batch=False)`` on the numpy backend, the truth
under the seeded tie rule; asserted), and the two paths' placements are
compared (``same_placements``: equal once the compiled run takes the same
tie rule; before, they differ on ties only).  The placement alone (the
call less ``register_run``) is what the two paths differ in.  Written to
``bench/results/run-sort-<nodes>-<backend>.json`` with the machine, the
backend and the commit.

    python -m tensorsched.bench.run_sort --nodes 10000 --pods 100000 400000
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import time
from pathlib import Path

import numpy as np

from tensorsched import synthetic
from tensorsched.framework.records.pod_columns import PodColumns, build_record
from tensorsched.framework.scheduler.cluster import build_cluster, pods_from
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels.fused import run_sort

from .harness import record_stamp, write_record

RESULTS = Path(__file__).resolve().parent / "results"


def _cluster(nodes: int, backend: str, seed: int):
    node_objs, _ = synthetic.workload("basic", nodes, 1, seed)
    cluster = build_cluster(node_objs, synthetic.config("basic", 100))
    template = pods_from([synthetic.pod_dict("warm-up")], cluster.resolve)[0]
    return cluster, cluster.framework_for(template, backend), template


def _run(nodes: int, pods: int, backend: str, seed: int, sorted_on: bool) -> dict:
    """One run of ``pods`` alike pods on a fresh cluster: (rows placed,
    CPU seconds, which path placed it)."""
    cluster, fw, template = _cluster(nodes, backend, seed)
    state = cluster.state
    keep = run_sort.ENABLED, run_sort.CPU_MIN_SHARE
    run_sort.ENABLED, run_sort.CPU_MIN_SHARE = sorted_on, 0.0
    try:
        warm = [dataclasses.replace(template, name=f"warm-up-{i}") for i in range(2)]
        got = fw.place_run(state, warm, seed=seed, attempt=0, start_index=0)
        for p in warm[: 0 if got is None else got[0].shape[0]]:
            state.remove_pod(p.key)
        # the run as the scheduling queue hands it: pods of one template
        # (one class) as columns
        run = PodColumns.from_records([build_record(template, f"{template.namespace}/pod-{i}",
                                                    template.creation_ns or 0, template.obj)
                                       for i in range(pods)])
        register = state.register_run
        booked = []

        def timed_register(*args):
            b0 = time.process_time()
            register(*args)
            booked.append(time.process_time() - b0)
        state.register_run = timed_register
        c0 = time.process_time()
        rows, _ = fw.place_run(state, run, seed=seed, attempt=0, start_index=0)
        cpu = time.process_time() - c0
        del state.register_run
        path = fw.last_run_path     # sort, compiled_run or device_run
    finally:
        run_sort.ENABLED, run_sort.CPU_MIN_SHARE = keep
    names = [state.node_name(int(r)) for r in rows]
    return {"rows": rows, "names": names, "cpu_seconds": cpu, "register_seconds": sum(booked),
            "path": path}


def one_by_one(nodes: int, count: int, seed: int) -> list:
    """The first ``count`` pods scheduled one cycle each on the numpy
    backend (the truth: its cycles take ``tied_node``'s tie rule)."""
    node_objs, pod_objs = synthetic.workload("basic", nodes, count, seed)
    sched = Scheduler(build_cluster(node_objs, synthetic.config("basic", 100)), "numpy",
                      seed, batch=False)
    return [b.node for b in sched.schedule_pending(pod_objs)[0]]


def _sha(names) -> str:
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


def measure(nodes: int, pods: int, backend: str = "numba", seed: int = 0,
            check: int = 1000) -> dict:
    """One comparison: the record's entry for ``pods`` pods."""
    fast = _run(nodes, pods, backend, seed, True)
    # on numba the other path is the compiled run; elsewhere numba's sort
    # path (the device's compiled run is hundreds of microseconds a pod)
    numba = backend == "numba"
    slow = _run(nodes, pods, "numba", seed, not numba)
    truth = one_by_one(nodes, min(check, pods), seed)
    if fast["names"][: len(truth)] != truth:
        raise AssertionError("the sort path's placements differ from one cycle per pod")
    if not numba and fast["names"] != slow["names"]:
        raise AssertionError(f"the {backend} sort path's placements differ from numba's")
    placed = len(fast["names"])
    # the placement itself: the call less the state's bookkeeping of the
    # placed pods (``register_run``, the same work on either path)
    fast_place = fast["cpu_seconds"] - fast["register_seconds"]
    slow_place = slow["cpu_seconds"] - slow["register_seconds"]
    return {
        "pods": pods, "placed": placed, "path": fast["path"],
        "other": "compiled run (numba)" if numba else "sort path (numba)",
        "other_path": slow["path"],
        "sort_cpu_seconds": round(fast["cpu_seconds"], 4),
        "compiled_run_cpu_seconds": round(slow["cpu_seconds"], 4),
        "sort_place_cpu_seconds": round(fast_place, 4),
        "compiled_run_place_cpu_seconds": round(slow_place, 4),
        "register_cpu_seconds": [round(fast["register_seconds"], 4),
                                 round(slow["register_seconds"], 4)],
        "sort_place_pods_per_cpu_second": round(placed / max(fast_place, 1e-9)),
        "compiled_run_place_pods_per_cpu_second": round(len(slow["names"])
                                                        / max(slow_place, 1e-9)),
        "place_speedup": round(slow_place / max(fast_place, 1e-9), 2),
        "speedup": round(slow["cpu_seconds"] / max(fast["cpu_seconds"], 1e-9), 2),
        "same_as_one_by_one_prefix": len(truth),
        "same_placements": fast["names"] == slow["names"],
        "same_node_counts": bool(np.array_equal(np.sort(np.bincount(fast["rows"])),
                                                np.sort(np.bincount(slow["rows"])))),
        "placements_sha256": _sha(fast["names"]),
        "compiled_run_placements_sha256": _sha(slow["names"]),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.run_sort",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--pods", type=int, nargs="+", default=[100000, 400000])
    ap.add_argument("--backend", default="numba")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", type=int, default=1000,
                    help="pods checked against one cycle per pod")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    runs = [measure(args.nodes, p, args.backend, args.seed, args.check) for p in args.pods]
    record = {"benchmark": "run-sort", "workload": "basic", "nodes": args.nodes,
              "backend": args.backend, "percentage_of_nodes_to_score": 100, "runs": runs,
              **record_stamp(args.seed)}
    out = args.output or str(RESULTS / f"run-sort-{args.nodes}-{args.backend}.json")
    write_record(record, out)
    return record


if __name__ == "__main__":
    main()
