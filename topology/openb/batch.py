"""The openb experiment's runs as one batched call (``kernels.batch``):
many (trace, policy, seed) runs on the paper's cluster, each equal bit for
bit to ``trace.simulate_replay`` for it -- the experiment through
``Simulation`` under ``openb_config`` with ``OpenbTieRank`` -- without
building a Simulation per run.

What each run is, from the definitions the Simulation's profile uses:

- the arrival sequence and the tie rank: ``replay.draw_workload`` then a
  permutation of the nodes from the same seeded generator (the tie
  score is ``n - 1 - rank``, GpuShareScore's weight ``n + 1`` above it:
  ``openb_config(policy, typical, n + 1)``); Random has neither (every
  feasible node ties);
- pod j of the sequence is the Simulation's pod ``<name>-<j>`` (one pod
  per simulated second, each scheduled at its arrival or never); its tie
  among the top nodes is the Scheduler's seeded rule (``fused.ties``: the
  highest ``tie_rank(seed * 0x9E3779B97F4A7C15, row, pods on the row
  now)``, the lower row on an equal rank; a row is the node's index in the
  node list, as the Simulation adds them), and Random's GPU pick is
  ``key_uniform`` of its key ``default/<name>-<j>``;
- pods are classes of equal (cpu, memory, GPU ask, model mask); the CPU
  the policies score with is kube-scheduler's non-zero request, which for
  an explicit request (the trace's, 0 included) is the request; FGD's
  typical pods are ``trace.typical_of`` with the
  frequencies renormalized as GpuShareScore and ``GpuTracker`` do;
- the curves: ``replay.allocation_curves`` of (arrived, used, fragmentation, idle)
  after each pod, the fragmentation summed over the nodes as
  ``trace.curves_from_outcomes`` sums it (``numpy.sum``'s order).

``replay.replay`` (the experiment's own loop) is not the reference: its
Random draws from the run's generator instead, and its FGD frequencies are
not renormalized, so its curves can differ in the last bits or more; where
the two disagree the Simulation is the truth.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tensorsched.framework.errors import BackendError
from tensorsched.framework.plugins.priority_sort import PrioritySort
from tensorsched.kernels._errors import BackendUnavailable
from tensorsched.kernels.batch import arrays as BA
from tensorsched.kernels.batch.preempt_arrays import BatchPreempt
from tensorsched.kernels.gpu import share as K

from ..gpu import ANNO_GPU_COUNT, ANNO_GPU_MILLI, ANNO_GPU_MODEL, MILLI, GpuInventory
from ..gpu_table import key_uniform
from . import replay as R
from . import trace as T

SEED_MIX = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1
BACKENDS = ("numba", "cuda")
NUMBA_CHUNK = 256           # runs per call of the CPU twin


@dataclass
class Workload:
    """One trace as the batch sees it: ``shape_id`` [P] each pod's class,
    the class table and the typical pods (``kernels.batch.arrays``)."""

    pods: R.TracePods
    shape_id: np.ndarray
    classes: dict
    typical: tuple


def workload_of(inv: GpuInventory, pods: R.TracePods, typical: list | None = None) -> Workload:
    """``pods`` as the batch sees them on ``inv``; ``typical``: GpuShareScore's
    ``typicalPods`` (dicts; default ``trace.typical_of(pods)``), frequencies
    renormalized as the plugin and ``GpuTracker`` do."""
    masks, shape_id, n_shapes = R.pod_shapes(pods, inv)
    first = np.full(n_shapes, -1, np.int64)
    for j in range(len(pods) - 1, -1, -1):
        first[shape_id[j]] = j
    cpu = pods.cpu[first]
    classes = {"c_cpu": cpu, "c_mem": pods.mem[first],
               # the Simulation's pods request their cpu explicitly (0 included), so
               # the non-zero CPU the policies score with is the request itself
               "c_cpu_nz": cpu.copy(),
               "c_num": pods.num[first], "c_milli": pods.milli[first], "c_mask": masks[first]}
    typical = T.typical_of(pods) if typical is None else typical
    return Workload(pods, shape_id, classes, T.tracker_typical(typical, inv))


@dataclass
class Run:
    """One run's inputs: its workload index, policy, seed, the arrival
    sequence (indices into the trace's pods) and the tie score [n]."""

    workload: int
    policy: str
    seed: int
    seq: np.ndarray
    tie: np.ndarray


def arrival_and_ties(inv: GpuInventory, pods: R.TracePods, seed: int, tune: float) -> tuple:
    """(sequence, tie score [n]) of one (trace, seed), as ``simulate_replay``
    draws them."""
    rng = np.random.default_rng(seed)
    seq = R.draw_workload(pods, inv.total_gpus * MILLI, tune, rng)
    rank = rng.permutation(inv.n_nodes).astype(np.int64)
    return seq, (inv.n_nodes - 1) - rank


def batch_arrays(inv: GpuInventory, workloads: list[Workload], runs: list[Run]) -> BA.BatchArrays:
    """The kernel's inputs for ``runs`` on the node set ``inv`` (module doc)."""
    n = inv.n_nodes
    sets = BA.node_sets([{"gpu_count": inv.gpu_count, "model": inv.model, "cpu_cap": inv.cpu_cap,
                          "mem_cap": inv.mem_cap,
                          "pods_cap": np.full(n, int(T.NODE_PODS), np.int64)}])
    w = len(workloads)
    c = max(len(wl.classes["c_cpu"]) for wl in workloads)
    p = max(len(wl.typical[0]) for wl in workloads)
    cl = {k: np.zeros((w, c), np.int64) for k in workloads[0].classes}
    tp = {k: np.zeros((w, p), np.float64 if k == "tp_freq" else np.int64)
          for k in ("tp_cpu", "tp_num", "tp_milli", "tp_mask", "tp_freq")}
    for i, wl in enumerate(workloads):
        for k, v in wl.classes.items():
            cl[k][i, :len(v)] = v
        for k, v in zip(tp, wl.typical):
            tp[k][i, :len(v)] = v
    b = len(runs)
    lens = np.array([len(r.seq) for r in runs], np.int64)
    off = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    cls = np.empty(int(lens.sum()), np.int64)
    u = np.zeros(int(lens.sum()), np.float64)
    static = np.zeros((b, n), np.int64)
    pol = np.empty(b, np.int64)
    weight = np.empty(b, np.int64)
    for k, r in enumerate(runs):
        wl = workloads[r.workload]
        cls[off[k]:off[k] + lens[k]] = wl.shape_id[r.seq]
        pol[k] = K.POLICIES.index(r.policy)
        if r.policy == "Random":
            weight[k] = 1
            names = wl.pods.names
            u[off[k]:off[k] + lens[k]] = [key_uniform(f"default/{names[j]}-{i}")
                                          for i, j in enumerate(r.seq.tolist())]
        else:
            weight[k] = n + 1
            static[k] = r.tie
    return BA.BatchArrays(
        **sets, n_classes=np.array([len(wl.classes["c_cpu"]) for wl in workloads], np.int64),
        **cl, n_typical=np.array([len(wl.typical[0]) for wl in workloads], np.int64), **tp,
        run_set=np.zeros(b, np.int64),
        run_workload=np.array([r.workload for r in runs], np.int64), policy=pol,
        sel=np.array([R.POLICY_SEL[r.policy] for r in runs], np.int64),
        seed_mix=np.array([(r.seed * SEED_MIX) & MASK64 for r in runs], np.uint64),
        gpu_weight=weight, static_total=static, ev_off=off, ev_len=lens, cls=cls, u=u)


def run_kernel(a: BA.BatchArrays, backend: str, workers: int | None,
               preempt: BatchPreempt | None = None,
               victim: np.ndarray | None = None,
               grace: np.ndarray | None = None) -> BA.BatchOutputs:
    """The kernel's outputs for every run of ``a`` (``preempt``:
    DefaultPreemption's inputs, each pod's evictions counted in ``victim``;
    ``grace`` [B] each run's termination grace, seconds, None 0)."""
    if backend == "numba":
        from tensorsched.kernels.batch import cpu
        return cpu.run_batch(a, threads=workers, preempt=preempt, victim=victim, grace=grace)
    if backend == "cuda":
        from tensorsched.kernels.batch import cuda
        return cuda.run_batch(a, preempt=preempt, victim=victim, grace=grace)
    raise ValueError(f"unknown backend {backend!r} for the batched experiment; choose one of "
                     f"{', '.join(BACKENDS)}")


def results_of(inv: GpuInventory, workloads: list[Workload], runs: list[Run],
               a: BA.BatchArrays, out: BA.BatchOutputs, tune: float, seconds: float,
               record_placements: bool = False) -> list:
    """A ``ReplayResult`` per run from the kernel's outputs for ``a``
    (pod k of a run arrives at k + 1 and stays: the state after it is the
    state at that time)."""
    tg = inv.total_gpus
    free0 = float(int(inv.gpu_count.sum()) * MILLI)
    results = []
    popcount = np.array([bin(m).count("1") for m in range(1 << 16)], np.int64)
    for b, r in enumerate(runs):
        k = len(r.seq)
        off = int(a.ev_off[b])
        node = out.node[off:off + k]
        gm = out.gmask[off:off + k]
        pods = workloads[r.workload].pods
        milli = pods.milli[r.seq]
        used = np.cumsum(popcount[gm] * milli).astype(np.float64)
        arrived = np.cumsum(pods.gpu_total[r.seq]).astype(np.float64)
        frag = out.frag_at(a, b, a.arrive[off:off + k])
        records = (arrived, used, frag, free0 - used)
        placements = []
        if record_placements:
            placements = [(pods.names[j], int(node[i]),
                           [g for g in range(16) if (int(gm[i]) >> g) & 1])
                          for i, j in enumerate(r.seq.tolist())]
        results.append(R.ReplayResult(r.policy, r.seed, tune, tg, k, int((node >= 0).sum()),
                                      seconds, *R.allocation_curves(records, tg), placements))
    return results


def replay_batch(nodes: GpuInventory, traces: list[R.TracePods], jobs: list[tuple],
                 tune: float = 1.3, backend: str = "numba", workers: int | None = None,
                 record_placements: bool = False, chunk: int | None = None) -> list:
    """``simulate_replay(nodes, traces[t], policy, seed, tune)`` for every
    ``(t, policy, seed)`` of ``jobs``, in one batched call per ``chunk``
    runs (default: ``NUMBA_CHUNK`` on numba, which bounds the host arrays
    of events and outputs; all on cuda, which chunks to device memory
    itself): [ReplayResult] in job order, ``seconds`` each its call's wall
    time over its runs.  Arguments checked before any run."""
    if not jobs:
        raise ValueError("no runs: jobs is empty")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r} for the batched experiment; choose one "
                         f"of {', '.join(BACKENDS)}")
    tune = R.check_tune(tune)
    if backend == "cuda":
        try:
            from tensorsched.kernels.batch import cuda  # noqa: F401
        except BackendUnavailable as exc:
            raise BackendError(str(exc)) from None
    for t, policy, seed in jobs:
        if policy not in R.POLICY_SEL:
            raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(K.POLICIES)}")
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < len(traces):
            raise ValueError(f"trace index {t!r} outside 0..{len(traces) - 1}")
        R.check_seed(seed)
    for pods in traces:
        R.check_inputs(nodes, pods)
    out = []
    if not chunk:
        chunk = NUMBA_CHUNK if backend == "numba" else len(jobs)
    chunk = max(1, int(chunk))
    workloads = {}
    draws = {}
    for lo in range(0, len(jobs), chunk):
        t0 = time.perf_counter()
        part = jobs[lo:lo + chunk]
        runs = []
        for t, policy, seed in part:
            if t not in workloads:
                workloads[t] = workload_of(nodes, traces[t])
            key = (t, int(seed))
            if key not in draws:
                draws = {key: arrival_and_ties(nodes, traces[t], int(seed), tune)} | (
                    draws if len(draws) < 64 else {})
            seq, tie = draws[key]
            runs.append(Run(t, policy, int(seed), seq, tie))
        order = sorted(workloads)
        index = {t: i for i, t in enumerate(order)}
        wls = [workloads[t] for t in order]
        runs = [Run(index[r.workload], r.policy, r.seed, r.seq, r.tie) for r in runs]
        a = batch_arrays(nodes, wls, runs)
        got = run_kernel(a, backend, workers)
        seconds = (time.perf_counter() - t0) / len(part)
        out.extend(results_of(nodes, wls, runs, a, got, tune, seconds, record_placements))
    return out


def sweep(nodes_path, pods_paths, policies=K.POLICIES, seeds=(42,), tune=1.3, workers=None,
          backend="numba", output=None, progress=None):
    """``replay.sweep``'s sweep (same arguments, checks, results and CSV)
    with every run in one batched call on numba (the CPU twin on
    ``workers`` threads, default all cores) or cuda (chunked to device
    memory): each run equals ``trace.simulate_replay`` for it; ``seconds``
    is its call's wall time over its runs.  On numpy: ``replay.sweep``,
    a process per run."""
    if backend == "numpy":
        return R.sweep(nodes_path, pods_paths, policies, seeds, tune, workers, backend, output,
                       progress)
    nodes, pods_paths, policies, seeds, tune = R.sweep_inputs(
        nodes_path, pods_paths, policies, seeds, tune, workers, backend, BACKENDS + ("numpy",))
    traces = [R.load_cached("pods", pp) for pp in pods_paths]
    runs = [(t, pol, int(sd)) for t in range(len(pods_paths)) for pol in policies
            for sd in seeds]
    got = replay_batch(nodes, traces, runs, tune=tune, backend=backend, workers=workers)
    out = [(R.workload_name(pods_paths[t]), res) for (t, _p, _s), res in zip(runs, got)]
    if progress:
        for wl, res in out:
            progress(wl, res)
    if output:
        R.write_sweep(out, output)
    return out


# ------------------------------------------------------------------------
# traces with departures: pods arrive at their time, leave at theirs (or
# a duration after their binding), and the ones that fit nowhere retry as
# the Simulation's scheduling queue lets them (``kernels.batch._queue``)

DEFAULT_MAX_UNSCHED = 300.0     # podMaxInUnschedulablePodsDuration (s)
TRACE_FIELDS = frozenset({"name", "arrival", "departure", "duration", "cpu", "memory",
                          "annotations", "priority"})
MIB = 1048576


@dataclass
class TraceWorkload:
    """A trace as the batch takes it: its pods in arrival order (trace
    order among equal times), ``arrival`` and ``departure`` [P] seconds
    (``departure`` inf: no absolute departure), ``duration`` [P] seconds
    a pod stays bound before it leaves, counted from its binding (inf or
    None: it stays; never with a finite ``departure``: the Simulation's
    trace reader refuses a row with both); ``rank`` [P] int64 each pod's
    place in activeQ's order before the push order (PrioritySort's key,
    densely ranked; None: all equal, first in first out); ``typical``
    GpuShareScore's ``typicalPods`` its runs use (None:
    ``trace.typical_of(pods)``); ``priority`` [P] int64 each pod's
    priority, which DefaultPreemption compares (None: ``-rank``, the
    priorities that rank the pods so, or 0 without a rank)."""

    pods: R.TracePods
    arrival: np.ndarray
    departure: np.ndarray
    typical: list | None = None     # typicalPods (default: ``trace.typical_of(pods)``)
    duration: np.ndarray | None = None
    rank: np.ndarray | None = None
    priority: np.ndarray | None = None

    def __post_init__(self):
        self.duration = np.full(len(self.arrival), np.inf) if self.duration is None \
            else np.asarray(self.duration, np.float64)
        if self.priority is None:
            self.priority = np.zeros(len(self.arrival), np.int64) if self.rank is None \
                else -np.asarray(self.rank, np.int64)
        else:
            self.priority = np.asarray(self.priority, np.int64)


def trace_workload(trace) -> TraceWorkload:
    """The ``TraceWorkload`` of an openb trace as ``trace.read_openb_trace``
    reads it, or of a generic trace (``read_trace``) of the same columns
    with ``duration`` (a ``Trace``: rows in arrival order, memory in bytes,
    a whole number of MiB, the GPU ask in its annotations)."""
    table = trace.table
    extra = sorted(set(table.column_names) - TRACE_FIELDS)
    if extra:
        raise ValueError(f"{trace.source or 'trace'}: column {extra[0]!r} is outside what the "
                         f"batched kernel takes ({', '.join(sorted(TRACE_FIELDS))}: pods "
                         "in the default namespace leaving at a fixed time or a duration "
                         "after their binding); ts.Simulation runs it per cluster")
    for column in ("cpu", "memory"):
        # a pod without the request: its non-zero default scores, not the 0 it fits with
        if column not in table.column_names or table.column(column).null_count:
            raise ValueError(f"{trace.source or 'trace'}: column {column!r}: every pod's "
                             "request is what the batched kernel takes; ts.Simulation runs it "
                             "per cluster")
    names = table.column("name").to_pylist()
    cpu = table.column("cpu").to_numpy().astype(np.int64)
    mem_bytes = table.column("memory").to_numpy().astype(np.int64)
    odd = np.flatnonzero(mem_bytes % MIB)
    if odd.shape[0]:
        r = int(odd[0])
        where = trace.where(r) if trace.source else f"trace: row {r}"
        raise ValueError(f"{where}: memory: {int(mem_bytes[r])} bytes is not a whole "
                         "number of MiB, the unit the batched kernel counts the nodes' memory "
                         "in; ts.Simulation runs it per cluster")
    mem = mem_bytes // MIB
    num = np.zeros(len(names), np.int64)
    milli = np.zeros(len(names), np.int64)
    spec = [""] * len(names)
    annos = table.column("annotations").to_pylist() if "annotations" in table.column_names \
        else [None] * len(names)
    for j, pairs in enumerate(annos):
        if pairs:
            d = dict(pairs)
            num[j] = int(d.get(ANNO_GPU_COUNT, 0))
            milli[j] = int(d.get(ANNO_GPU_MILLI, 0))
            spec[j] = d.get(ANNO_GPU_MODEL, "")
    dep = np.where(np.isnan(trace.departure), np.inf, trace.departure)
    dur = np.where(np.isnan(trace.duration), np.inf, trace.duration)
    rank, priority = _ranks(trace)
    return TraceWorkload(R.TracePods(names, cpu, mem, num, milli, spec, trace.source),
                         trace.arrival.astype(np.float64), dep.astype(np.float64),
                         duration=dur.astype(np.float64), rank=rank, priority=priority)


def _ranks(trace) -> tuple:
    """(rank, priority): the dense rank of each row's PrioritySort key
    (-priority, creation time) as the Simulation's queue computes it from
    the row's pod, None when every row ties (no ``priority`` column, or
    one value); each row's priority (int64 [P], 0 without one)."""
    if "priority" not in trace.table.column_names:
        return None, np.zeros(len(trace), np.int64)
    records = trace.records(0, len(trace))
    keys = PrioritySort.sort_keys(records)
    priority = np.array([-k[0] for k in keys], np.int64)
    dense = {k: i for i, k in enumerate(sorted(set(keys)))}
    rank = None if len(dense) < 2 else np.array([dense[k] for k in keys], np.int64)
    return rank, priority


@dataclass
class TraceRunResult:
    """One run of ``trace_batch``: ``node`` [P] the node index each pod was
    bound to (-1 never), ``gpus`` its GPU indices, ``bind`` [P] when
    (seconds, NaN never), ``tries`` [P] its scheduling attempts; the
    cluster's changes in order: ``log_t`` (seconds), ``log_pod`` (pod j
    bound: j; left: -1 - j), ``log_frag`` and ``log_used`` (GPU milli
    fragmented and allocated after it); ``frag0`` the empty cluster's
    fragmentation; ``end`` the run's clock when nothing was left to do
    (its last event or scheduling attempt, seconds)."""

    cluster: int
    trace: int
    policy: str
    seed: int
    node: np.ndarray
    gpus: list
    bind: np.ndarray
    tries: np.ndarray
    log_t: np.ndarray
    log_pod: np.ndarray
    log_frag: np.ndarray
    log_used: np.ndarray
    frag0: float
    seconds: float
    config: int = -1            # ``batch_sim.simulate_batch``'s config index
    end: float = float("nan")   # the clock when nothing was left to do (seconds)
    # [P] bool: the pods DefaultPreemption evicted (their eviction is in the
    # log as their departure); None when the run does not preempt
    preempted: np.ndarray | None = None
    # [P] int64: the times DefaultPreemption evicted each pod (the
    # Simulation's Preempted events; above 1 where a victim terminating
    # under a grace was chosen again); None when the run does not preempt
    evictions: np.ndarray | None = None

    @property
    def scheduled(self) -> int:
        return int((self.node >= 0).sum())

    def at(self, times) -> tuple:
        """(GPU milli allocated, fragmented) [len(times)] at each time
        (seconds): after every change at or before it."""
        k = np.searchsorted(self.log_t, np.asarray(times, np.float64), side="right")
        used = np.concatenate([[0.0], self.log_used])[k]
        frag = np.concatenate([[self.frag0], self.log_frag])[k]
        return used, frag


def tie_of(n: int, seed: int) -> np.ndarray:
    """A run's fixed node order among equal scores (OpenbTieRank's label):
    ``n - 1 - rank`` of a permutation drawn from ``seed``."""
    rank = np.random.default_rng(seed).permutation(n).astype(np.int64)
    return (n - 1) - rank


def default_weights(n: int, policy: str) -> tuple:
    """(GpuShareScore's weight, OpenbTieRank's) of the experiment's profile
    on ``n`` nodes: the tie rank below every GpuShareScore step; Random
    without it."""
    return (1, 0) if policy == "Random" else (n + 1, 1)


def trace_arrays(sets: list, workloads: list, wl_key: dict, jobs: list, max_unsched: float,
                 backoff: tuple, weights: list | None = None) -> BA.BatchArrays:
    """The kernel's inputs for ``jobs`` ((cluster, trace, policy, seed))
    on the node sets ``sets`` (GpuInventory each): ``workloads`` the
    (Workload, TraceWorkload) of each (cluster, trace) in ``wl_key``;
    ``weights`` per job (GpuShareScore's, OpenbTieRank's; default
    ``default_weights``)."""
    nodes = BA.node_sets([{"gpu_count": inv.gpu_count, "model": inv.model,
                           "cpu_cap": inv.cpu_cap, "mem_cap": inv.mem_cap,
                           "pods_cap": np.full(inv.n_nodes, int(T.NODE_PODS), np.int64)}
                          for inv in sets])
    n = nodes["gpu_count"].shape[1]
    wls = [wl for wl, _tw in workloads]
    w = len(wls)
    c = max(len(wl.classes["c_cpu"]) for wl in wls)
    p = max(len(wl.typical[0]) for wl in wls)
    cl = {k: np.zeros((w, c), np.int64) for k in wls[0].classes}
    tp = {k: np.zeros((w, p), np.float64 if k == "tp_freq" else np.int64)
          for k in ("tp_cpu", "tp_num", "tp_milli", "tp_mask", "tp_freq")}
    for i, wl in enumerate(wls):
        for k, v in wl.classes.items():
            cl[k][i, :len(v)] = v
        for k, v in zip(tp, wl.typical):
            tp[k][i, :len(v)] = v
    b = len(jobs)
    lens = np.array([len(workloads[wl_key[(ci, t)]][1].arrival) for ci, t, _p, _s in jobs],
                    np.int64)
    off = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    e = int(lens.sum())
    cls, u = np.empty(e, np.int64), np.zeros(e, np.float64)
    arrive, depart, duration = (np.empty(e, np.float64) for _ in range(3))
    ranked = any(workloads[wl_key[(ci, t)]][1].rank is not None for ci, t, _p, _s in jobs)
    rank = np.zeros(e if ranked else 0, np.int64)
    static = np.zeros((b, n), np.int64)
    pol, weight = np.empty(b, np.int64), np.empty(b, np.int64)
    for k, (ci, t, policy, seed) in enumerate(jobs):
        wl, tw = workloads[wl_key[(ci, t)]]
        sl = slice(off[k], off[k] + lens[k])
        cls[sl] = wl.shape_id
        arrive[sl] = tw.arrival
        depart[sl] = tw.departure
        duration[sl] = tw.duration
        if tw.rank is not None:
            rank[sl] = tw.rank
        pol[k] = K.POLICIES.index(policy)
        m = sets[ci].n_nodes
        weight[k], tie_weight = weights[k] if weights else default_weights(m, policy)
        if tie_weight:
            static[k, :m] = tie_weight * tie_of(m, seed)
        if policy == "Random":
            u[sl] = [key_uniform(f"default/{name}") for name in tw.pods.names]
    return BA.BatchArrays(
        **nodes, n_classes=np.array([len(wl.classes["c_cpu"]) for wl in wls], np.int64),
        **cl, n_typical=np.array([len(wl.typical[0]) for wl in wls], np.int64), **tp,
        run_set=np.array([ci for ci, _t, _p, _s in jobs], np.int64),
        run_workload=np.array([wl_key[(ci, t)] for ci, t, _p, _s in jobs], np.int64),
        policy=pol, sel=np.array([R.POLICY_SEL[p] for _c, _t, p, _s in jobs], np.int64),
        seed_mix=np.array([(int(s) * SEED_MIX) & MASK64 for _c, _t, _p, s in jobs], np.uint64),
        gpu_weight=weight, static_total=static, ev_off=off, ev_len=lens, cls=cls, u=u,
        arrive=arrive, depart=depart, duration=duration, rank=rank,
        backoff0=np.full(b, float(backoff[0])), backoff_max=np.full(b, float(backoff[1])),
        max_unsched=np.full(b, float(max_unsched)))


def preempt_arrays(workloads: list, wl_key: dict, jobs: list, preempt: list | None,
                   a: BA.BatchArrays, key_ranks: bool = False) -> BatchPreempt:
    """DefaultPreemption's inputs for ``jobs`` (``trace_arrays``' runs ``a``):
    per job ``preempt[k]`` (minCandidateNodesPercentage,
    minCandidateNodesAbsolute) or None (no DefaultPreemption); per pod its
    priority and its key's rank (``default/<name>``, the victim table's
    order among equal priorities).  ``key_ranks``: the per-pod arrays even
    when no job preempts (the node-event engine takes a drained node's
    pods off in key order)."""
    b = len(jobs)
    if not key_ranks and (not preempt or all(p is None for p in preempt)):
        return BatchPreempt.off(b)
    e = a.cls.shape[0]
    pct = np.full(b, -1, np.int64)
    least = np.zeros(b, np.int64)
    prio = np.zeros(e, np.int64)
    krank = np.zeros(e, np.int64)
    for k, (ci, t, _p, _s) in enumerate(jobs):
        if preempt and preempt[k] is not None:
            pct[k], least[k] = preempt[k]
        tw = workloads[wl_key[(ci, t)]][1]
        sl = slice(int(a.ev_off[k]), int(a.ev_off[k] + a.ev_len[k]))
        prio[sl] = tw.priority
        order = np.argsort(np.array(tw.pods.names, dtype=object), kind="stable")
        krank[sl][order] = np.arange(order.shape[0])
    return BatchPreempt(pct, least, prio, krank)


def trace_batch(clusters: list[GpuInventory], traces: list[TraceWorkload], jobs: list[tuple],
                backend: str = "numba", workers: int | None = None,
                max_unsched: float = DEFAULT_MAX_UNSCHED, backoff: tuple = (1.0, 10.0),
                chunk: int | None = None, weights: list | None = None,
                preempt: list | None = None,
                termination_grace_seconds: float = 0.0) -> list[TraceRunResult]:
    """Every ``(cluster, trace, policy, seed)`` of ``jobs`` in one batched
    call per ``chunk`` runs: each run equal to the ``Simulation`` of
    ``openb_node_objects(clusters[c], tie_of(n, seed))`` under
    ``openb_config(policy, typical_of(pods), n + 1)`` (Random: no tie rank,
    weight 1; ``weights`` per job: other (GpuShareScore, OpenbTieRank)
    weights, 0 none) with ``experiment_registry()``, its seed ``seed``, the
    trace's pods submitted as a trace (arrival, departure or duration,
    priority: activeQ in PrioritySort's order), the queue's timers
    ``backoff`` (initial, max) and ``max_unsched`` seconds; ``preempt``
    per job: (minCandidateNodesPercentage, minCandidateNodesAbsolute) when
    the profile has DefaultPreemption at postFilter, None when not
    (default: no job preempts); ``termination_grace_seconds`` the
    Scheduler's (``ts.Simulation``'s): a victim stays on its node,
    terminating, that long after its eviction (0: it leaves at once).
    Arguments checked before any run."""
    if not jobs:
        raise ValueError("no runs: jobs is empty")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r} for the batched simulation; choose one "
                         f"of {', '.join(BACKENDS)}")
    if backend == "cuda":
        try:
            from tensorsched.kernels.batch import cuda  # noqa: F401
        except BackendUnavailable as exc:
            raise BackendError(str(exc)) from None
    for job in jobs:
        ci, t, policy, seed = job
        if policy not in R.POLICY_SEL:
            raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(K.POLICIES)}")
        for name, v, hi in (("cluster", ci, len(clusters)), ("trace", t, len(traces))):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < hi:
                raise ValueError(f"{name} index {v!r} outside 0..{hi - 1}")
        R.check_seed(seed)
    grace = float(termination_grace_seconds)
    if not (np.isfinite(grace) and grace >= 0):
        raise ValueError(f"termination_grace_seconds: {termination_grace_seconds!r}, expected "
                         "seconds >= 0 (finite)")
    if weights is not None and len(weights) != len(jobs):
        raise ValueError(f"weights: one (GpuShareScore, OpenbTieRank) pair per job, got "
                         f"{len(weights)} for {len(jobs)}")
    if preempt is not None:
        if len(preempt) != len(jobs):
            raise ValueError(f"preempt: one (percentage, absolute) pair or None per job, got "
                             f"{len(preempt)} for {len(jobs)}")
        for p in preempt:
            if p is not None and not (len(p) == 2 and 0 <= p[0] <= 100 and p[1] >= 0
                                      and p[0] + p[1] > 0):
                raise ValueError(f"preempt: {p!r}: (minCandidateNodesPercentage 0..100, "
                                 "minCandidateNodesAbsolute >= 0), not both 0")
    for inv in clusters:
        for tw in traces:
            R.check_inputs(inv, tw.pods)
    for t, tw in enumerate(traces):
        check_times(tw, f"traces[{t}]")
    workloads, wl_key = job_workloads(clusters, traces, jobs)
    chunk = max(1, int(chunk or (NUMBA_CHUNK if backend == "numba" else len(jobs))))
    out = []
    for lo in range(0, len(jobs), chunk):
        t0 = time.perf_counter()
        part = jobs[lo:lo + chunk]
        a = trace_arrays(clusters, workloads, wl_key, part, max_unsched, backoff,
                         weights[lo:lo + chunk] if weights else None)
        pre_part = preempt[lo:lo + chunk] if preempt else None
        pre = preempt_arrays(workloads, wl_key, part, pre_part, a)
        victim = np.zeros(a.cls.shape[0], np.int64)
        got = run_kernel(a, backend, workers, pre, victim, np.full(len(part), grace))
        seconds = (time.perf_counter() - t0) / len(part)
        for b, (ci, t, policy, seed) in enumerate(part):
            res = _trace_result(a, got, b, (ci, t, policy, int(seed)), traces[t].pods, seconds)
            if pre_part and pre_part[b] is not None:
                o, e = int(a.ev_off[b]), int(a.ev_len[b])
                res.evictions = victim[o:o + e].copy()
                res.preempted = res.evictions != 0
            out.append(res)
    return out


def job_workloads(clusters: list[GpuInventory], traces: list[TraceWorkload],
                  jobs: list[tuple]) -> tuple[list, dict]:
    """The (``Workload``, trace) pairs ``trace_arrays`` takes for ``jobs``
    (``trace_batch``'s ``(cluster, trace, policy, seed)``): one per
    (cluster, trace) the jobs name, in first-named order, and the index of
    each pair in that list."""
    workloads, wl_key = [], {}
    for ci, t, _p, _s in jobs:
        if (ci, t) not in wl_key:
            wl_key[(ci, t)] = len(workloads)
            workloads.append((workload_of(clusters[ci], traces[t].pods, traces[t].typical),
                              traces[t]))
    return workloads, wl_key


def check_times(tw: TraceWorkload, where: str) -> None:
    """``tw``'s departures, durations and ranks as the Simulation takes them, else
    ValueError naming ``where``, the column and the pod."""
    p = len(tw.arrival)
    dur = tw.duration
    for name, v in (("departure", tw.departure), ("duration", dur)):
        if np.shape(v) != (p,):
            raise ValueError(f"{where}: {name}: shape {np.shape(v)}, expected ({p},)")
    bad = np.flatnonzero(np.isnan(dur) | (dur < 0))
    if bad.shape[0]:
        j = int(bad[0])
        raise ValueError(f"{where}: duration: pod {tw.pods.names[j]!r}: {dur[j]!r}, expected "
                         "seconds >= 0 after its binding (inf: it stays)")
    both = np.flatnonzero(np.isfinite(dur) & np.isfinite(tw.departure))
    if both.shape[0]:
        j = int(both[0])
        raise ValueError(f"{where}: duration: pod {tw.pods.names[j]!r}: give departure or "
                         "duration, not both")
    if tw.rank is not None:
        rank = np.asarray(tw.rank)
        if rank.shape != (p,) or rank.dtype.kind not in "iu" or (rank < 0).any() \
                or (rank >= 1 << 30).any():
            raise ValueError(f"{where}: rank: ({p},) integers in [0, 2^30) expected "
                             "(activeQ's order of the pods)")


def _trace_result(a: BA.BatchArrays, got: BA.BatchOutputs, b: int, job: tuple,
                  pods: R.TracePods, seconds: float) -> TraceRunResult:
    o, e = int(a.ev_off[b]), int(a.ev_len[b])
    gm = got.gmask[o:o + e]
    log_t, log_pod, log_frag = (x.copy() for x in got.log(a, b))
    j = np.where(log_pod >= 0, log_pod, -1 - log_pod)
    popcount = np.array([bin(int(m)).count("1") for m in gm[j]], np.int64)
    step = np.where(log_pod >= 0, 1, -1) * popcount * pods.milli[j]
    return TraceRunResult(*job, got.node[o:o + e].copy(),
                          [tuple(g for g in range(16) if (int(m) >> g) & 1) for m in gm.tolist()],
                          got.bind[o:o + e].copy(), got.tries[o:o + e].copy(), log_t, log_pod,
                          log_frag, np.cumsum(step).astype(np.float64), float(got.frag0[b]),
                          seconds, end=float(got.end[b]))
