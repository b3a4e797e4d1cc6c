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
  curves, rebuilt after the run from each pod's outcome (the Simulation
  takes no samples; ``curves_from_outcomes``).
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.meta import join_path
from tensorsched.framework.plugins import default_registry
from tensorsched.framework.runtime.user_plugins import ArrayPlugin
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.simulation.trace import Trace, trace_from_table
from tensorsched.kernels.gpu import share as K

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
from ..gpu_table import GpuTable
from ..sim_metrics import GpuTracker
from . import replay as R

TRACE_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time")
MAX_TIME = 10**15
NODE_PODS = "100000"              # openb nodes: no pod-count limit in the simulator
TIE_LABEL = "openb.tensorsched.io/tie"
NAME_TIE = "OpenbTieRank"
TIE_LIMIT = 1 << 24               # OpenbTieRank's ranks: 0 .. this - 1 (the batched kernels')


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
        if c and inv.model[i] >= 0:     # -1: the row names no model (the column is optional)
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
    simulator's fixed random node order among equal scores.  A node
    without the label scores 0; a label that is not an integer
    0..``TIE_LIMIT`` - 1 raises ``ManifestError`` naming the node and the
    label (``tie_rank``)."""

    name = NAME_TIE

    def __init__(self, args, handle):
        self._key = None
        self._ranks = np.zeros(1, np.int64)

    def static_scores(self, st):
        """``StaticScorePlugin``: the rank of every row ([n_rows] int64)."""
        key = (id(st), st.epoch, st.n_rows, st.layout_version)
        if key != self._key:
            ranks = np.zeros(max(st.n_rows, 1), np.int64)
            for r in range(st.n_rows):
                nd = st.nodes[r]
                if nd is not None:
                    ranks[r] = tie_rank(nd.name, nd.labels)
            self._key, self._ranks = key, ranks
        return self._ranks

    def score(self, ctx, rows):
        return self.static_scores(ctx.state)[rows]


def tie_rank(node: str, labels) -> int:
    """OpenbTieRank's score of the node ``node`` of ``labels``: its
    ``openb.tensorsched.io/tie`` label, 0 without; a label that is not
    an integer 0..``TIE_LIMIT`` - 1 raises ``ManifestError``."""
    value = labels.get(TIE_LABEL)
    if value is None:
        return 0
    # decimal digits only: int() would also take ' 3', '+3', '1_000' or
    # other scripts' digits, none of them a label's integer
    digits = isinstance(value, str) and value.isascii() and value.isdigit()
    rank = int(value) if digits and len(value) <= 12 else -1
    if not 0 <= rank < TIE_LIMIT:
        raise ManifestError(f"Node {node}", join_path("metadata.labels", TIE_LABEL),
                            f"{NAME_TIE}'s rank must be an integer 0..{TIE_LIMIT - 1}, "
                            f"got {value!r}")
    return rank


def experiment_registry():
    """The default registry plus ``OpenbTieRank``."""
    reg = default_registry()
    reg.register(NAME_TIE, lambda args, handle: OpenbTieRank(args, handle), frozenset({"score"}))
    return reg


def typical_of(pods: R.TracePods) -> list[dict]:
    """GpuShareScore's ``typicalPods`` (cpu, gpuCount, gpuMilli, models,
    weight) of an openb trace's pods."""
    return [{"cpu": c, "gpuCount": n, "gpuMilli": m, "models": s, "weight": f}
            for c, n, m, s, f in R.typical_pods(pods)]


def simulate_replay(nodes: GpuInventory, pods: R.TracePods, policy: str, seed: int = 42,
                    tune: float = 1.3, backend: str = "numba") -> R.ReplayResult:
    """``replay``'s experiment run through ``Simulation`` (module doc)."""
    R.policy_kernels(policy, "numba" if backend not in R.BACKENDS else backend)
    tune = R.check_tune(tune)
    seed = R.check_seed(seed)
    R.check_inputs(nodes, pods)
    t0 = time.perf_counter()
    records, scheduled = _experiment(nodes, pods, policy, seed, tune, backend)
    tg = nodes.total_gpus
    return R.ReplayResult(policy, seed, tune, tg, len(records[0]), scheduled,
                          time.perf_counter() - t0, *R.allocation_curves(records, tg), [])


def _experiment(nodes: GpuInventory, pods: R.TracePods, policy: str, seed: int, tune: float,
                backend: str, sampled: bool = False, outcomes: bool = False,
                **scheduler_options) -> tuple:
    """((arrived, used, frag, idle) [pods] GPU milli after each pod of the
    arrival sequence, scheduled pods) of the experiment's ``Simulation``.

    The curves come from each pod's outcome after the run
    (``curves_from_outcomes``): with one pod arriving per simulated second,
    each scheduled at its arrival or never (no departures, no retry), the
    state after pod t is the initial one plus the placements of pods 0..t.
    ``sampled``: the Simulation samples the GPU metrics (``GpuTracker``)
    every second instead (~12 % of the run; the tests check both agree).  ``outcomes``: (those records, scheduled, the sequence,
    ``_outcomes``) instead.  ``scheduler_options``: more of the
    Scheduler's (``batch``: runs of alike pods in one call or not, the same
    placements either way).
    The arguments as ``simulate_replay`` checked them."""
    rng = np.random.default_rng(seed)
    cap = nodes.total_gpus * MILLI
    seq = R.draw_workload(pods, cap, tune, rng)
    rank = rng.permutation(nodes.n_nodes).astype(np.int64)
    tie = (nodes.n_nodes - 1) - rank
    typical = typical_of(pods)
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
    names = [f"{pods.names[j]}-{i}" for i, j in enumerate(seq.tolist())]
    table = pa.table({
        "name": pa.array(names),
        "arrival": pa.array(np.arange(1, n + 1, dtype=np.float64)),
        "cpu": pa.array(pods.cpu[seq]), "memory": pa.array(pods.mem[seq] * 1048576),
        # priority 0 written out (what an unset one resolves to, with no
        # PriorityClass loaded): the records then need no resolved copy, so
        # the pods of one shape share their memo (signature, GPU ask, ...)
        "priority": pa.array(np.zeros(n, np.int64)),
        "annotations": pa.array(annos, pa.map_(pa.string(), pa.string()))})
    metrics = _sampled_metrics(typical) if sampled else None
    sim = Simulation(objs, cfg, backend, seed, interval=1.0 if sampled else None,
                     metrics=metrics, registry=experiment_registry(),
                     pod_max_in_unschedulable_seconds=float("inf"), **scheduler_options)
    sim.submit(table)
    sim.run()
    scheduled = int(sim.summary()["scheduled"])
    arrived = np.cumsum(pods.gpu_total[seq]).astype(np.float64)
    if sampled:
        ts = sim.timeseries()
        rows = min(n, ts.num_rows)
        return (arrived[:rows],
                *(ts.column(c).to_numpy()[:rows]
                  for c in ("gpu_used_milli", "gpu_frag_milli", "gpu_idle_milli"))), scheduled
    where, gpu_idx, milli = _outcomes(sim, nodes, names)
    inv = nodes.copy()
    used, frag, idle = curves_from_outcomes(inv, tracker_typical(typical, inv), seq, pods,
                                             where, gpu_idx, milli)
    if outcomes:
        return (arrived, used, frag, idle), scheduled, seq, (where, gpu_idx, milli)
    return (arrived, used, frag, idle), scheduled


def _outcomes(sim: Simulation, nodes: GpuInventory, names: list) -> tuple:
    """(node index [P] int64, -1 failed; GPU indices per pod; milli per GPU
    [P] int64) of the Simulation's pods ``names`` in order."""
    n = len(names)
    state = sim.cluster.state
    gt = GpuTable.attached(state)
    alloc = gt.alloc if gt is not None else {}
    placed = state.pods
    # node index of each state row (the Simulation adds the nodes in order)
    node_of_row = np.full(max(state.n_rows, 1), -1, np.int64)
    for i, name in enumerate(nodes.names):
        node_of_row[state.node_rows[name]] = i
    where = np.full(n, -1, np.int64)
    gpu_idx: list = [()] * n
    milli = np.zeros(n, np.int64)
    for t, name in enumerate(names):
        key = "default/" + name
        if key not in placed:
            continue
        where[t] = node_of_row[placed.row_of(key)]
        a = alloc.get(key)
        if a is not None and a.indices:
            gpu_idx[t], milli[t] = a.indices, a.milli
    return where, gpu_idx, milli


def _sampled_metrics(typical: list[dict]) -> dict:
    """Used, idle and fragmented GPU milli as ``Simulation`` metrics."""
    tracker = GpuTracker(typical)
    last: dict = {}

    def measured(cluster):
        if last.get("v") != cluster.state.version:
            last["v"], last["m"] = cluster.state.version, tracker.measure(cluster)
        return last["m"]

    return {"gpu_used_milli": lambda c: measured(c)[1], "gpu_idle_milli": lambda c: measured(c)[2],
            "gpu_frag_milli": lambda c: measured(c)[3]}


def tracker_typical(typical: list[dict], inv: GpuInventory) -> tuple:
    """The typical pods as ``K.node_frag``'s arrays over ``inv``'s models,
    the frequencies computed as ``GpuTracker`` does (bit for bit)."""
    tot = sum(p["weight"] for p in typical) or 1.0
    return (np.array([p["cpu"] for p in typical], np.int64),
            np.array([p["gpuCount"] for p in typical], np.int64),
            np.array([p["gpuMilli"] for p in typical], np.int64),
            np.array([inv.model_mask((p.get("models") or "").split("|")) for p in typical],
                     np.int64),
            np.array([p["weight"] / tot for p in typical], np.float64))


def curves_from_outcomes(inv: GpuInventory, typical: tuple, seq: np.ndarray,
                          pods: R.TracePods, where: np.ndarray, gpu_idx: list,
                          milli: np.ndarray) -> tuple:
    """(used, frag, idle) [len(seq)] GPU milli after each pod of ``seq``,
    replaying the outcomes on ``inv`` (modified; reset to empty first):
    pod t went to node ``where[t]`` (-1: failed) on GPUs ``gpu_idx[t]``,
    ``milli[t]`` each.  Fragmentation as ``GpuTracker`` measures it (node
    rows in inventory order): per node, recomputed for the node a pod lands
    on, and the cluster's the sum over the nodes."""
    n = len(seq)
    count, model, left, cpu_left = inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left
    left[:] = np.where(np.arange(left.shape[1])[None, :] < count[:, None], MILLI, 0)
    cpu_left[:] = inv.cpu_cap
    node_frag = K.cluster_frag(count, model, left, cpu_left, *typical, np.zeros(inv.n_nodes))
    frag0 = float(node_frag.sum())
    gpu_milli = np.fromiter((len(g) for g in gpu_idx), np.int64, n) * milli
    used = np.cumsum(gpu_milli)
    idle = int(left.sum()) - used
    placed = np.flatnonzero(where >= 0)
    fr = np.empty(len(placed) + 1)
    fr[0] = frag0
    frag_of = K.node_frag
    cpu = pods.cpu[seq]
    for q, t in enumerate(placed.tolist(), 1):
        i = int(where[t])
        m = int(milli[t])
        row = left[i]
        for g in gpu_idx[t]:
            row[g] -= m
        cpu_left[i] -= cpu[t]
        node_frag[i] = frag_of(int(count[i]), int(model[i]), row, int(cpu_left[i]), *typical)
        fr[q] = node_frag.sum()
    # after pod t: as after the last pod placed at or before t (none: the start)
    frag = fr[np.cumsum(where >= 0)]
    return used.astype(np.float64), frag, idle.astype(np.float64)


# the names the curve tests were written against
_tracker_typical, _curves_from_outcomes = tracker_typical, curves_from_outcomes
