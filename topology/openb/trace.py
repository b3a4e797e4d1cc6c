"""openb traces for ``Simulation``: the openb CSVs as they are, turned into
the generic trace schema (``framework/simulation/trace.py``), the openb node
list as Node objects, the paper's profile, and the paper's experiment run
through the framework (``simulate_replay``), which gives ``replay``'s means.

- ``read_openb_trace(path)``: one row per pod of an openb pod CSV: ``name``,
  ``arrival`` = ``creation_time``, ``departure`` = ``deletion_time`` (empty:
  the pod stays), ``cpu`` = ``cpu_milli``, ``memory`` = ``memory_mib`` MiB,
  and the GPU ask as the annotations the GPU plugins read
  (``alibabacloud.com/gpu-milli``, ``gpu-count``, ``gpu-card-model``).
  ``scheduled_time``, ``qos`` and ``pod_phase`` are not used (a pod the real
  cluster never scheduled is submitted all the same).  Errors name
  ``file:line: column``.
- ``openb_node_objects(path)``: Node dicts of an openb node CSV (cpu, memory,
  ``nvidia.com/gpu`` and the ``nvidia.com/gpu.product`` label).
- ``openb_config(policy, typical)``: the simulator's profile: the default
  filters (NodeResourcesFit on cpu and memory) plus GpuShareFit, scored by
  GpuShareScore(policy) alone, no preemption.
- ``simulate_replay(nodes, pods, policy, seed, tune)``: ``replay``'s
  experiment as a ``Simulation``: the same arrival sequence (one pod per
  simulated second, no departures), the same fixed random node order for
  ties (a ``OpenbTieRank`` score below GpuShareScore's weight), and the same
  curves from the time series.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from tensorsched.framework.plugins import default_registry
from tensorsched.framework.runtime.user_plugins import ArrayPlugin
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.simulation.trace import Trace, trace_from_table

from ..gpu import (
    ANNO_GPU_COUNT,
    ANNO_GPU_MILLI,
    ANNO_GPU_MODEL,
    LABEL_GFD_PRODUCT,
    MAX_CPU_MILLI,
    MAX_MEMORY_MIB,
    MAX_NODE_GPUS,
    MILLI,
    CsvError,
    GpuInventory,
    csv_int,
    csv_name,
    read_csv_rows,
    read_openb_nodes,
)
from ..sim_metrics import GpuTracker
from . import replay as R

TRACE_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time")
MAX_TIME = 10**15
NODE_PODS = "100000"              # openb nodes: no pod-count limit in the simulator
TIE_LABEL = "openb.tensorsched.io/tie"
NAME_TIE = "OpenbTieRank"


def read_openb_trace(path) -> Trace:
    """The generic trace of an openb pod CSV (see the module doc)."""
    names, cpu, mem, annos, arrival, departure, lines = [], [], [], [], [], [], []
    seen: dict[str, int] = {}
    shared: dict = {}
    for line, row in read_csv_rows(path, TRACE_COLUMNS):
        name = csv_name(path, line, "name", row["name"])
        if name in seen:
            raise CsvError(path, line, "name", f"duplicate pod {name!r} (first on line "
                           f"{seen[name]})")
        seen[name] = line
        names.append(name)
        cpu.append(csv_int(path, line, "cpu_milli", row["cpu_milli"], 0, MAX_CPU_MILLI))
        mem.append(csv_int(path, line, "memory_mib", row["memory_mib"], 0, MAX_MEMORY_MIB)
                   * 1048576)
        n = csv_int(path, line, "num_gpu", row["num_gpu"], 0, MAX_NODE_GPUS, default=0)
        m = csv_int(path, line, "gpu_milli", row["gpu_milli"], 0, MILLI, default=0)
        if n > 1 and 0 < m < MILLI:
            raise CsvError(path, line, "num_gpu", f"a GPU share ({m} milli) must ask for exactly "
                           f"one GPU, not {n}")
        spec = (row.get("gpu_spec") or "").strip()
        if n and m:
            key = (n, m, spec)
            a = shared.get(key)
            if a is None:
                a = [(ANNO_GPU_MILLI, str(m)), (ANNO_GPU_COUNT, str(n))]
                if spec:
                    a.append((ANNO_GPU_MODEL, spec))
                shared[key] = a
            annos.append(a)
        else:
            annos.append(None)
        t0 = csv_int(path, line, "creation_time", row["creation_time"], 0, MAX_TIME)
        arrival.append(float(t0))
        d = (row.get("deletion_time") or "").strip()
        if d:
            t1 = csv_int(path, line, "deletion_time", d, 0, MAX_TIME)
            if t1 < t0:
                raise CsvError(path, line, "deletion_time", f"{t1} is before creation_time {t0}")
            departure.append(float(t1))
        else:
            departure.append(None)
        lines.append(line)
    if not names:
        raise CsvError(path, None, "", "no pods: the file has a header but no rows")
    table = pa.table({"name": pa.array(names, pa.string()),
                      "arrival": pa.array(arrival, pa.float64()),
                      "departure": pa.array(departure, pa.float64()),
                      "cpu": pa.array(cpu, pa.int64()), "memory": pa.array(mem, pa.int64()),
                      "annotations": pa.array(annos, pa.map_(pa.string(), pa.string()))})
    trace = trace_from_table(table, source=str(path))
    trace.origin = np.asarray(lines, np.int64)[trace.origin]
    trace.lines = True
    return trace


def openb_node_objects(nodes, tie: np.ndarray | None = None) -> list[dict]:
    """Node dicts of an openb node CSV path (or a read ``GpuInventory``);
    ``tie``: a per-node tie-break rank label (the experiment's)."""
    inv = nodes if isinstance(nodes, GpuInventory) else read_openb_nodes(nodes)
    out = []
    for i, name in enumerate(inv.names):
        alloc = {"cpu": f"{int(inv.cpu_cap[i])}m", "memory": f"{int(inv.mem_cap[i])}Mi",
                 "pods": NODE_PODS}
        labels = {"kubernetes.io/hostname": name}
        c = int(inv.gpu_count[i])
        if c:
            alloc["nvidia.com/gpu"] = str(c)
            labels[LABEL_GFD_PRODUCT] = inv.models[int(inv.model[i])]
        if tie is not None:
            labels[TIE_LABEL] = str(int(tie[i]))
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": labels},
                    "spec": {}, "status": {"capacity": dict(alloc), "allocatable": alloc}})
    return out


def openb_config(policy: str = "FGD", typical: list[dict] | None = None,
                 tie_weight: int | None = None) -> dict:
    """The openb simulator's profile (see the module doc); ``tie_weight``:
    GpuShareScore's weight with OpenbTieRank (weight 1) breaking its ties
    (the experiment's fixed node order)."""
    score = [{"name": "GpuShareScore", "weight": tie_weight or 1}]
    if tie_weight:
        score.append({"name": NAME_TIE, "weight": 1})
    args = {"policy": policy}
    if typical:
        args["typicalPods"] = typical
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 100,
            "profiles": [{"schedulerName": "default-scheduler", "plugins": {
                "filter": {"enabled": [{"name": "GpuShareFit"}]},
                "reserve": {"enabled": [{"name": "GpuShareFit"}]},
                "preScore": {"disabled": [{"name": "*"}]},
                "score": {"disabled": [{"name": "*"}], "enabled": score},
                "postFilter": {"disabled": [{"name": "*"}]}},
                "pluginConfig": [{"name": "GpuShareScore", "args": args}]}]}


class OpenbTieRank(ArrayPlugin):
    """Score = the node's ``openb.tensorsched.io/tie`` label: the openb
    simulator's fixed random node order among equal scores."""

    name = NAME_TIE

    def __init__(self, args, handle):
        self._key = None
        self._ranks = np.zeros(1, np.int64)

    def score(self, ctx, rows):
        st = ctx.state
        key = (id(st), st.epoch, st.n_rows, st.layout_version)
        if key != self._key:
            ranks = np.zeros(max(st.n_rows, 1), np.int64)
            for r in range(st.n_rows):
                nd = st.nodes[r]
                if nd is not None:
                    ranks[r] = int(nd.labels.get(TIE_LABEL, 0))
            self._key, self._ranks = key, ranks
        return self._ranks[rows]


def experiment_registry():
    """The default registry plus ``OpenbTieRank``."""
    reg = default_registry()
    reg.register(NAME_TIE, lambda args, handle: OpenbTieRank(args, handle), frozenset({"score"}))
    return reg


def _typical_of(pods: R.TracePods) -> list[dict]:
    return [{"cpu": c, "gpuCount": n, "gpuMilli": m, "models": s, "weight": f}
            for c, n, m, s, f in R.typical_pods(pods)]


def simulate_replay(nodes: GpuInventory, pods: R.TracePods, policy: str, seed: int = 42,
                    tune: float = 1.3, backend: str = "numba") -> R.ReplayResult:
    """``replay``'s experiment run through ``Simulation`` (module doc)."""
    R._kernels(policy, "numba" if backend not in R.BACKENDS else backend)
    tune = R.check_tune(tune)
    seed = R.check_seed(seed)
    R.check_inputs(nodes, pods)
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    cap = nodes.total_gpus * MILLI
    seq = R.draw_workload(pods, cap, tune, rng)
    rank = rng.permutation(nodes.n_nodes).astype(np.int64)
    tie = (nodes.n_nodes - 1) - rank
    typical = _typical_of(pods)
    random = policy == "Random"
    objs = openb_node_objects(nodes, None if random else tie)
    cfg = openb_config(policy, typical, None if random else nodes.n_nodes + 1)
    n = len(seq)
    annos = []
    for j in seq.tolist():
        num, milli = int(pods.num[j]), int(pods.milli[j])
        if num and milli:
            a = [(ANNO_GPU_MILLI, str(milli)), (ANNO_GPU_COUNT, str(num))]
            if pods.spec[j]:
                a.append((ANNO_GPU_MODEL, pods.spec[j]))
            annos.append(a)
        else:
            annos.append(None)
    table = pa.table({
        "name": pa.array([f"{pods.names[j]}-{i}" for i, j in enumerate(seq.tolist())]),
        "arrival": pa.array(np.arange(1, n + 1, dtype=np.float64)),
        "cpu": pa.array(pods.cpu[seq]), "memory": pa.array(pods.mem[seq] * 1048576),
        # priority 0 written out (what an unset one resolves to, with no
        # PriorityClass loaded): the records then need no resolved copy, so
        # the pods of one shape share their memo (signature, GPU ask, ...)
        "priority": pa.array(np.zeros(n, np.int64)),
        "annotations": pa.array(annos, pa.map_(pa.string(), pa.string()))})
    tracker = GpuTracker(typical)
    last: dict = {}

    def measured(cluster):
        if last.get("v") != cluster.state.version:
            last["v"], last["m"] = cluster.state.version, tracker.measure(cluster)
        return last["m"]

    metrics = {"gpu_used_milli": lambda c: measured(c)[1], "gpu_idle_milli": lambda c: measured(c)[2],
               "gpu_frag_milli": lambda c: measured(c)[3]}
    sim = Simulation(objs, cfg, backend, seed, interval=1.0, metrics=metrics,
                     registry=experiment_registry(),
                     pod_max_in_unschedulable_seconds=float("inf"))
    sim.submit(table)
    sim.run()
    ts = sim.timeseries()
    rows = min(n, ts.num_rows)
    used = ts.column("gpu_used_milli").to_numpy()[:rows]
    frag = ts.column("gpu_frag_milli").to_numpy()[:rows]
    idle = ts.column("gpu_idle_milli").to_numpy()[:rows]
    arrived = np.cumsum(pods.gpu_total[seq])[:rows].astype(np.float64)
    tg = nodes.total_gpus
    return R.ReplayResult(policy, seed, tune, tg, n, int(sim.summary()["scheduled"]),
                          time.perf_counter() - t0,
                          *R._curves((arrived, used, frag, idle), tg), [])
