"""The cuda backend's host-device traffic a sorted run, two source trees.

Counts, not times: for every run the cuda sort path placed
(``CudaBackend.place_run_sorted``), the host-to-device copies and their
bytes, the device-to-host copies and their bytes, the device allocations
and the kernels launched (the backend's ``launches``), counted from
outside the backend (Numba's device-array copy methods and ``to_device``
wrapped), so a tree that counts less itself is counted the same.  The
simulator path's host sort (``run_sort_cuda._host_sort``: the stand-in
for CuPy's device sort, a copy each way) is set apart.

The cluster: ``--nodes`` nodes (every fourth with a PreferNoSchedule taint,
so TaintToleration's maximum and the exact prefix are read), one node
deleted (the run's rows are not every row: the row list goes up), then
``--runs`` runs of ``--pods`` alike pods (one pod template: one query, its
row cache kept from run to run), a node updated before every other run
(rows written outside the runs, the query compiled anew: its buffer goes
up again).  This tree
against a base tree (``--base-commit C``, laid out as
``harness.base_tree`` lays it out), alternated processes, with the
bindings (they must agree).  Without a GPU it runs under Numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``).

python -m tensorsched.bench.gpu_sort_traffic --base-commit C [--nodes 64] [--pods 40]
        [--runs 6] [--output bench/results/gpu-sort-traffic-cudasim-64.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from tensorsched.bench.harness import git_commit, machine_info
from tensorsched.bench.harness import base_tree
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels._deps import gpu_present
from tensorsched.kernels.fused import run_sort

COUNTS = ("uploads", "bytes_up", "downloads", "bytes_down", "allocations", "launches")


def _nbytes(a) -> int:
    return int(getattr(a, "nbytes", 0) or 0)


class Transfers:
    """Host-device traffic counted from outside a backend: while installed,
    Numba's ``to_device`` and ``device_array`` and the device arrays'
    ``copy_to_device`` / ``copy_to_host`` add to ``now`` (a dict of
    ``COUNTS`` but launches; None: not counting).  A copy made inside
    another counts once; ``apart()`` sets a block's copies apart (the
    simulator's host sort)."""

    def __init__(self):
        from numba import cuda      # the simulator's or the device's: after the environment
        self._cuda = cuda
        self._type = type(cuda.device_array(1, np.int64))
        self._saved = []
        self._depth = 0
        self.now = None

    def _wrap(self, real, kind: str):
        def wrapper(*a, **k):
            now = self.now
            if now is not None and self._depth == 0:
                if kind == "down":
                    now["downloads"] += 1
                    now["bytes_down"] += _nbytes(a[0])
                elif kind == "alloc":
                    now["allocations"] += 1
                else:
                    now["uploads"] += 1
                    now["bytes_up"] += _nbytes(a[0] if kind == "to_device" else
                                               a[1] if len(a) > 1 else None)
            self._depth += 1
            try:
                return real(*a, **k)
            finally:
                self._depth -= 1
        return wrapper

    def install(self) -> None:
        cuda, t = self._cuda, self._type
        for owner, name, kind in ((cuda, "to_device", "to_device"),
                                  (cuda, "device_array", "alloc"),
                                  (t, "copy_to_device", "up"), (t, "copy_to_host", "down")):
            real = getattr(owner, name)
            self._saved.append((owner, name, real))
            setattr(owner, name, self._wrap(real, kind))

    def remove(self) -> None:
        for owner, name, real in reversed(self._saved):
            setattr(owner, name, real)
        self._saved.clear()

    @contextlib.contextmanager
    def apart(self):
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1


def sorted_run_traffic(nodes: int, pods: int, runs: int, backend: str = "cuda") -> dict:
    """{"runs": [per sorted run {COUNTS, "after_event"}], "bindings": [(pod,
    node)]} on the cuda backend in this process (module doc's cluster);
    ``after_event``: the first sorted run after a node was updated.  The
    counting wrappers are removed before it returns.  ``backend`` other
    than cuda: the same runs, no counts (the bindings to compare)."""
    from tensorsched.kernels.fused import run_sort_cuda as RC
    from tensorsched.kernels.fused.backends import CudaBackend

    prefer = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]

    def node(i, cpu=None):
        return node_dict(f"n{i:04d}", cpu=cpu or str(2 + i % 5), memory="8Gi",
                         pods=str(4 + i % 7), taints=prefer if i % 4 == 0 else None)
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1",
           "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 100}
    sched = Scheduler(build_cluster([node(i) for i in range(nodes)], cfg), backend, 7,
                      batch=True)
    sched.delete_node(f"n{nodes // 2:04d}")

    real_sorted, real_sort = CudaBackend.place_run_sorted, getattr(RC, "_host_sort", None)
    seen = Transfers()

    def host_sort(*a, **k):
        with seen.apart():
            return real_sort(*a, **k)

    out, event = [], [False]

    def place_run_sorted(self, *a, **k):
        seen.now = now = dict.fromkeys(COUNTS, 0)
        now["after_event"] = event[0]
        before = self.launches
        try:
            got = real_sorted(self, *a, **k)
        finally:
            seen.now = None
        if got is not None:
            now["launches"] = self.launches - before
            out.append(now)
            event[0] = False
        return got

    patched = [(CudaBackend, "place_run_sorted", place_run_sorted), (run_sort, "ENABLED", True)]
    if real_sort is not None:
        patched.append((RC, "_host_sort", host_sort))
    saved = [(o, name, getattr(o, name)) for o, name, _ in patched]
    for o, name, v in patched:
        setattr(o, name, v)
    seen.install()
    bound = []
    try:
        for r in range(runs):
            if r % 2 == 1:
                sched.update_node(node(r, cpu=str(16 + r)))
                event[0] = True
            pending = [pod_dict(f"r{r}p{k:03d}", cpu="150m", memory="64Mi",
                                created=r * pods + k) for k in range(pods)]
            bound.extend((b.pod, b.node) for b in sched.schedule_pending(pending)[0])
    finally:
        seen.remove()
        for o, name, v in saved:
            setattr(o, name, v)
    return {"runs": out, "bindings": bound}


def _record(path: str | None, nodes: int, pods: int, runs: int) -> dict:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    if not gpu_present():
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    code = ("import json, sys\nfrom tensorsched.bench.gpu_sort_traffic import "
            f"sorted_run_traffic\njson.dump(sorted_run_traffic({nodes}, {pods}, {runs}), "
            "sys.stdout)\n")
    got = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True)
    rec = json.loads(got.stdout.strip().splitlines()[-1])
    # the first run builds the query's row cache
    for name, keep in (("warm", lambda r: not r["after_event"]),
                       ("after_event", lambda r: r["after_event"])):
        got = [r for r in rec["runs"][1:] if keep(r)]
        rec[name] = {c: round(sum(r[c] for r in got) / max(len(got), 1), 2) for c in COUNTS}
    return rec


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-commit", required=True)
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--pods", type=int, default=40)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    base = base_tree(a.base_commit, tempfile.mkdtemp(prefix="gpu-sort-traffic-base-"))
    got = {}
    for name, path in (("this", None), ("base", base), ("this_again", None)):   # alternated
        got[name] = _record(path, a.nodes, a.pods, a.runs)
    same = got["this"]["bindings"] == got["base"]["bindings"] == got["this_again"]["bindings"]
    record = {"experiment": "cuda sort path: copies each way, bytes, allocations and launches "
                            "a sorted run, this tree vs the base tree (module doc)",
              "backend": "cuda", "device": "gpu" if gpu_present() else "numba cuda simulator",
              "nodes": a.nodes, "pods_a_run": a.pods, "runs": a.runs,
              "per_run": {t: v["runs"] for t, v in got.items()},
              "warm_mean": {t: v["warm"] for t, v in got.items()},
              "after_event_mean": {t: v["after_event"] for t, v in got.items()},
              "same_bindings": same, "bindings": len(got["this"]["bindings"]),
              "note": "counted from outside the backend; the simulator's host sort (the "
                      "device sort's stand-in) set apart; the first run builds the query's "
                      "row cache; warm_mean: the runs after it with no node event before, "
                      "after_event_mean: the first sorted run after a node update",
              "commit": git_commit(), "base_commit": a.base_commit, "machine": machine_info(),
              "load_after": list(os.getloadavg()),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = a.output or os.path.join(os.path.dirname(os.path.realpath(__file__)), "results",
                                    f"gpu-sort-traffic-{'gpu' if gpu_present() else 'cudasim'}"
                                    f"-{a.nodes}.json")
    with open(dest, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps({k: record[k] for k in ("warm_mean", "after_event_mean", "same_bindings")},
                     indent=1))
    return record


if __name__ == "__main__":
    main()
