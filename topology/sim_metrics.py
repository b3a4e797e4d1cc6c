"""GPU columns of a simulation's time series (``Simulation(metrics=...)``):
the framework's simulation knows nothing of GPUs; these callables read the
GPU table of the cluster state.

``gpu_metrics(typical)`` -> ``{"gpu_alloc_pct", "gpu_frag_pct",
"gpu_frag_ratio"}``: allocated GPU milli as % of the cluster's GPU capacity;
GPU fragmentation by FGD's measure (the expected GPU milli that the typical
pods could not use, Weng et al. ATC'23) as % of capacity and as % of the
idle GPU milli.  Per-node fragmentation is recomputed only for nodes whose
row changed since the last sample.

``typical_shapes(pods)`` -> the typical pods of a workload the way the openb
simulator takes them: the most frequent (cpu, GPU count, GPU milli, models)
shapes covering 95 % of the pods, as GpuShareScore's ``typicalPods`` args.
"""

from __future__ import annotations

import numpy as np

from tensorsched.kernels.gpu import share as K

from .gpu import MILLI, pod_gpu_ask
from .gpu_table import GpuTable

TYPICAL_THRESHOLD = 95


def typical_shapes(shapes, threshold: int = TYPICAL_THRESHOLD) -> list[dict]:
    """``shapes``: (cpu millicores, gpu count, gpu milli, models "A|B") per
    pod.  Returns ``typicalPods`` entries {cpu, gpuCount, gpuMilli, models,
    weight}, most frequent first, covering ``threshold`` % of the pods
    (CPU-only shapes included; cpu 0 counts as 100m, as the simulator's)."""
    counts: dict = {}
    n = 0
    for cpu, num, milli, models in shapes:
        cnz = int(cpu) if cpu > 0 else 100
        key = (cnz, int(milli), int(num), models or "")
        counts[key] = counts.get(key, 0) + 1
        n += 1
    ordered = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    need = threshold * n / 100.0
    out, cum = [], 0
    for (cnz, milli, num, models), c in ordered:
        if cum >= need:
            break
        out.append({"cpu": cnz, "gpuCount": num, "gpuMilli": milli, "models": models,
                    "weight": float(c)})
        cum += c
    return out


def trace_shapes(trace) -> list[tuple]:
    """(cpu, gpu count, gpu milli, models) of every row of a simulation
    ``Trace`` (its ``cpu`` column and GPU annotations)."""
    table = trace.table
    n = table.num_rows
    cpu = (table.column("cpu").to_numpy(zero_copy_only=False) if "cpu" in table.column_names
           else np.zeros(n))
    cpu = np.nan_to_num(np.asarray(cpu, np.float64)).astype(np.int64)
    annos = (table.column("annotations").to_pylist() if "annotations" in table.column_names
             else [None] * n)
    cache: dict = {}
    out = []
    for c, a in zip(cpu.tolist(), annos):
        key = tuple(a) if a else ()
        ask = cache.get(key)
        if ask is None:
            ask = pod_gpu_ask({"metadata": {"name": "trace", "annotations": dict(key)}})
            cache[key] = ask
        out.append((c, ask.num, ask.milli, "|".join(ask.models)))
    return out


class GpuTracker:
    """Used, idle and fragmented GPU milli of a cluster, kept up to date per
    changed node row (``state.row_version``)."""

    def __init__(self, typical: list[dict] | None):
        self.typical = typical or []
        self._arrays = None
        self._models = None
        self._ver = np.zeros(0, np.int64)
        self._frag = np.zeros(0)
        self._owner = None
        self._tot_owner = None
        self._tv = np.zeros(0, np.int64)

    def _typical(self, t: GpuTable):
        if self._arrays is None or self._models != tuple(t.models):
            tp = self.typical
            tot = sum(p["weight"] for p in tp) or 1.0
            self._arrays = (np.array([p["cpu"] for p in tp], np.int64),
                            np.array([p["gpuCount"] for p in tp], np.int64),
                            np.array([p["gpuMilli"] for p in tp], np.int64),
                            np.array([t.model_mask((p.get("models") or "").split("|"))
                                      for p in tp], np.int64),
                            np.array([p["weight"] / tot for p in tp], np.float64))
            self._models = tuple(t.models)
            self._ver = np.zeros(0, np.int64)
        return self._arrays

    def _totals(self, t: GpuTable, n: int, valid: np.ndarray) -> tuple[int, int]:
        """(GPUs, idle milli) of the valid rows, kept as running sums: a
        row is recounted only when the table's row version or the row's
        validity changed."""
        if self._tot_owner is not t or self._tv.shape[0] != n:
            self._tot_owner = t
            self._tv = np.full(n, -1, np.int64)
            self._tvalid = np.zeros(n, np.bool_)
            self._cnt_r = [0] * n
            self._idle_r = [0] * n
            self._gpus = self._idle = 0
        tv = t.ver[:n]
        ch = tv != self._tv
        ch |= valid != self._tvalid
        rows = np.flatnonzero(ch)
        if rows.size:
            count, left = t.count, t.left
            cnt_r, idle_r = self._cnt_r, self._idle_r
            for r in rows.tolist():
                c = int(count[r]) if valid[r] else 0
                i = int(left[r, :c].sum()) if c > 0 else 0
                self._gpus += c - cnt_r[r]
                self._idle += i - idle_r[r]
                cnt_r[r], idle_r[r] = c, i
            self._tv[rows] = tv[rows]
            self._tvalid[rows] = valid[rows]
        return self._gpus, self._idle

    def measure(self, cluster) -> tuple[int, int, int, float]:
        """(capacity, used, idle, fragmented) GPU milli."""
        state = cluster.state
        t = GpuTable.of(state)
        n = state.n_rows
        valid = state.valid[:n]
        gpus, idle = self._totals(t, n, valid)
        cap = gpus * MILLI
        used = cap - idle
        if not self.typical or cap == 0:
            return cap, used, idle, 0.0
        typ = self._typical(t)
        if self._owner is not state or self._ver.shape[0] != n:
            self._owner = state
            self._ver = np.full(n, -1, np.int64)
            self._frag = np.zeros(n)
        rv = state.row_version[:n]
        changed = np.flatnonzero(rv != self._ver)
        if changed.size:
            alloc, req = state.allocatable, state.requested
            count, model, left = t.count, t.model, t.left
            for r in changed.tolist():
                c = int(count[r]) if valid[r] else 0
                self._frag[r] = (K.node_frag(c, int(model[r]), np.ascontiguousarray(left[r]),
                                             int(alloc[r, 0] - req[r, 0]), *typ) if c else 0.0)
            self._ver[changed] = rv[changed]
        return cap, used, idle, float(self._frag[valid].sum())


def gpu_metrics(typical: list[dict] | None = None) -> dict:
    """Time-series columns (see the module doc); without ``typical`` no
    fragmentation columns."""
    tracker = GpuTracker(typical)
    last: dict = {}

    def measured(cluster):
        key = (id(cluster), cluster.state.version)
        if last.get("key") != key:
            last["key"], last["value"] = key, tracker.measure(cluster)
        return last["value"]

    def alloc(cluster):
        cap, used, _idle, _frag = measured(cluster)
        return 100.0 * used / cap if cap else None

    def frag_pct(cluster):
        cap, _used, _idle, frag = measured(cluster)
        return 100.0 * frag / cap if cap else None

    def frag_ratio(cluster):
        _cap, _used, idle, frag = measured(cluster)
        return 100.0 * frag / idle if idle else 0.0

    out = {"gpu_alloc_pct": alloc}
    if typical:
        out["gpu_frag_pct"] = frag_pct
        out["gpu_frag_ratio"] = frag_ratio
    return out
