"""``simulate_batch`` (``ts.simulate_batch``): many (cluster, trace, config,
seed) runs of openb-style GPU clusters in one batched call
(``batch.trace_batch``: the CPU twin, a ``prange`` over clusters, on
``numba``; a thread block per cluster on ``cuda``), each run bit for bit
the ``Simulation`` of that cluster and trace (arrivals, departures at a
time or a duration after the binding, the scheduling queue's order and
retries), with its placements, GPU indices and the
cluster's GPU allocation and fragmentation after every change.

A config is a GpuShareScore policy name (the openb profile:
``trace.openb_config(policy)``, with the OpenbTieRank node order unless
the policy is Random) or a KubeSchedulerConfiguration (a dict or a YAML
path) whose one profile is that profile up to the score weights of
GpuShareScore and OpenbTieRank (present or not) and GpuShareScore's
policy; GpuShareScore's typical pods are always the trace's own
(``trace.typical_of``).  Anything else (another plugin, other plugin
arguments, percentageOfNodesToScore below 100, preemption) is refused
with ``BatchProfileError`` naming the plugin or field; ``ts.Simulation``
runs such a profile per cluster.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

import numpy as np

from tensorsched.framework.arguments import Arguments
from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.config.plugin_args import DefaultPreemptionArgs
from tensorsched.framework.errors import ConfigError, ManifestError, TensorschedError
from tensorsched.framework.simulation.scenario import Scenario, ScenarioError, check_steps
from tensorsched.framework.simulation.trace import Trace, read_trace
from tensorsched.kernels.gpu import share as K

from ..gpu import (
    MAX_CPU_MILLI,
    MAX_MEMORY_MIB,
    MAX_NODE_GPUS,
    MILLI,
    GpuInventory,
    read_openb_nodes,
)
from . import batch as B
from . import replay as R
from . import trace as T

MAX_SECONDS = 1e15          # the traces' bound (``framework.simulation.trace``)

#: score plugins the batched kernel covers (GpuShareScore required)
SCORES = ("GpuShareScore", T.NAME_TIE)
#: postFilter plugins it covers (optional)
POST_FILTERS = ("DefaultPreemption",)


class BatchProfileError(TensorschedError):
    """A configuration the batched kernel does not cover."""


class BatchInputError(TensorschedError):
    """Inputs the batched kernel cannot run (no node with a GPU, a trace
    column it does not take, ...): the problem, naming the input."""


@dataclass(frozen=True)
class BatchConfig:
    """A config as the kernel takes it: the policy and the two score
    weights (``tie_weight`` 0: no OpenbTieRank), the queue's backoff;
    ``preempt`` DefaultPreemption's (minCandidateNodesPercentage,
    minCandidateNodesAbsolute), None without it."""

    policy: str
    gpu_weight: int
    tie_weight: int
    backoff: tuple
    preempt: tuple | None = None


def _covered_profile():
    reg = T.experiment_registry()
    return reg, load_config(T.openb_config("FGD", None, 2), reg.plugin_points()).profiles[0]


def batch_config(config, where: str, preemption: bool = False) -> BatchConfig:
    """The ``BatchConfig`` of a policy name, a KubeSchedulerConfiguration
    dict or a path of one (``where`` names it in errors); ``preemption``:
    DefaultPreemption at postFilter is taken (the caller's engine runs it:
    ``simulate_batch``'s), else refused like any other plugin there."""
    if isinstance(config, str) and config in K.POLICIES:
        tie = 0 if config == "Random" else 1
        return BatchConfig(config, 1 if config == "Random" else -1, tie, (1.0, 10.0))
    if not isinstance(config, (dict, str, os.PathLike)) or (
            isinstance(config, (str, os.PathLike)) and not os.path.isfile(config)):
        raise Arguments("simulate_batch").error(
            where, f"a GpuShareScore policy ({', '.join(K.POLICIES)}), a "
            f"KubeSchedulerConfiguration dict or the path of a file of one, got {config!r}")
    reg, covered = _covered_profile()
    try:
        cfg = load_config(config, reg.plugin_points())
    except ConfigError as exc:          # a dict's errors name the argument (a file's, the file)
        raise exc.with_source(where) from None
    if len(cfg.profiles) != 1:
        raise BatchProfileError(f"{where}: {len(cfg.profiles)} profiles; the batched kernel "
                                "runs one")
    prof = cfg.profiles[0]
    pct = prof.percentage_of_nodes_to_score
    pct = cfg.percentage_of_nodes_to_score if pct is None else pct
    if pct != 100:
        raise BatchProfileError(f"{where}: percentageOfNodesToScore {pct}: the batched kernel "
                                "scores every node (100)")
    for point, refs in prof.plugins.items():
        names = [r.name for r in refs]
        want = [r.name for r in covered.plugins[point]]
        allowed = SCORES if point == "score" else \
            (POST_FILTERS if preemption else want) if point == "postFilter" else want
        for name in names:
            if name not in allowed:
                raise BatchProfileError(
                    f"{where}: plugin {name} at {point} is not covered by the batched kernel "
                    f"(it runs {', '.join(allowed) or 'nothing'} there); ts.Simulation runs "
                    "this profile per cluster")
            if name not in ("GpuShareScore", "DefaultPreemption") \
                    and prof.args.get(name) != covered.args.get(name):
                raise BatchProfileError(f"{where}: plugin {name}: arguments other than its "
                                        "defaults are not covered by the batched kernel")
        needed = ["GpuShareScore"] if point == "score" else want
        for name in needed:
            if name not in names:
                raise BatchProfileError(f"{where}: plugin {name} at {point} is disabled; the "
                                        "batched kernel runs the openb profile with it")
    args = prof.args["GpuShareScore"]
    if args.typical_pods:
        raise BatchProfileError(f"{where}: plugin GpuShareScore: typicalPods given; the batched "
                                "kernel uses the trace's own (trace.typical_of)")
    w = prof.score_weights()
    preempt = None
    if "DefaultPreemption" in [r.name for r in prof.plugins.get("postFilter", ())]:
        pa = prof.args.get("DefaultPreemption") or DefaultPreemptionArgs()
        preempt = (int(pa.min_candidate_nodes_percentage), int(pa.min_candidate_nodes_absolute))
    return BatchConfig(args.policy, w["GpuShareScore"], w.get(T.NAME_TIE, 0),
                       (float(cfg.pod_initial_backoff_seconds),
                        float(cfg.pod_max_backoff_seconds)), preempt)


def _as_list(x, name: str = "") -> list:
    """``simulate_batch``'s one item or list of items (``Arguments.items``:
    a range, an array or a generator too), refused when empty."""
    return Arguments("simulate_batch").items(name, x)


def _column(inv: GpuInventory, field: str, shape: tuple, lo: int, hi: int, where: str,
            args: Arguments):
    """``inv.<field>`` checked: an integer array of ``shape`` in lo..hi."""
    a = getattr(inv, field)
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "iu":
        raise args.error(f"{where}.{field}", f"must be an integer NumPy array, got "
                         f"{type(a).__name__}" + (f" of {a.dtype}" if hasattr(a, "dtype") else ""))
    if a.shape != shape:
        raise args.error(f"{where}.{field}", f"shape {a.shape}, expected {shape} (one row per "
                         "node of names)")
    bad = np.flatnonzero(((a < lo) | (a > hi)).reshape(a.shape[0], -1).any(axis=1))
    if bad.size:
        r = int(bad[0])
        raise args.error(f"{where}.{field}", f"node {inv.names[r]!r} (row {r}): must be "
                         f"{lo}..{hi}, got {a[r].tolist()}")
    return a


def check_inventory(inv: GpuInventory, where: str,
                    function: str = "simulate_batch") -> GpuInventory:
    """A ``GpuInventory`` the batched kernels can run (``read_openb_nodes``
    makes one; one built by hand is checked as its CSV would be): unique
    non-empty node names, per node an integer GPU count 0..16, a GPU model
    index into ``models`` (-1: none), GPU milli free 0..1000 on its GPUs
    (0 past its count), cpu and memory free within their capacities;
    ``ArgumentError`` of ``function`` naming ``where``'s field and the node."""
    args = Arguments(function)
    names = args.names(f"{where}.names", inv.names, nonempty=True)
    seen: dict = {}
    for i, nm in enumerate(names):
        if nm in seen:
            raise args.error(f"{where}.names[{i}]", f"duplicate node {nm!r} (also at "
                             f"{seen[nm]})")
        seen[nm] = i
    models = args.names(f"{where}.models", inv.models)
    if len(set(models)) != len(models):
        raise args.error(f"{where}.models", f"duplicate GPU models in {models!r}")
    n = len(names)
    count = _column(inv, "gpu_count", (n,), 0, MAX_NODE_GPUS, where, args)
    _column(inv, "model", (n,), -1, len(models) - 1, where, args)
    left = inv.gpu_left
    g = left.shape[1] if isinstance(left, np.ndarray) and left.ndim == 2 else -1
    _column(inv, "gpu_left", (n, max(g, 0)), 0, MILLI, where, args)
    _column(inv, "gpu_mem", (n, g), 0, MAX_MEMORY_MIB, where, args)
    if n and int(count.max()) > g:
        raise args.error(f"{where}.gpu_left", f"{g} GPU columns for a node of "
                         f"{int(count.max())} GPUs")
    past = np.arange(g)[None, :] >= count[:, None]
    if (left[past] != 0).any():
        r = int(np.flatnonzero((left * past).any(axis=1))[0])
        raise args.error(f"{where}.gpu_left", f"node {names[r]!r} (row {r}): GPU milli free "
                         f"past its {int(count[r])} GPUs")
    for cap_f, left_f, hi in (("cpu_cap", "cpu_left", MAX_CPU_MILLI),
                              ("mem_cap", "mem_left", MAX_MEMORY_MIB)):
        cap = _column(inv, cap_f, (n,), 0, hi, where, args)
        free = _column(inv, left_f, (n,), 0, hi, where, args)
        over = np.flatnonzero(free > cap)
        if over.size:
            r = int(over[0])
            raise args.error(f"{where}.{left_f}", f"node {names[r]!r} (row {r}): "
                             f"{int(free[r])} free of {int(cap[r])} ({cap_f})")
    return inv


def _vector(args: Arguments, name: str, a, n: int, kinds: str, lo, hi, names: list):
    """``a`` checked: a 1-D NumPy array of ``n`` of dtype ``kinds`` in lo..hi
    (never NaN), the first bad pod named."""
    if not isinstance(a, np.ndarray) or a.dtype.kind not in kinds:
        what = "an integer" if kinds == "iu" else "a numeric"
        raise args.error(name, f"must be {what} NumPy array, got {type(a).__name__}"
                         + (f" of {a.dtype}" if hasattr(a, "dtype") else ""))
    if a.shape != (n,):
        raise args.error(name, f"shape {a.shape}, expected ({n},) (one per pod)")
    bad = np.flatnonzero(np.isnan(a) | (a < lo) | (a > hi)) if a.dtype.kind == "f" \
        else np.flatnonzero((a < lo) | (a > hi))
    if bad.size:
        j = int(bad[0])
        raise args.error(name, f"pod {names[j]!r} (row {j}): must be {lo:g}..{hi:g}, "
                         f"got {a[j]!r}")
    return a


def check_pods(pods: R.TracePods, where: str, function: str = "simulate_batch") -> None:
    """A ``TracePods`` the batched kernels can run (``read_openb_pods``
    makes one; one built by hand is checked as its CSV would be): names,
    per pod integer cpu (millicores) and memory (MiB) 0..2^40, GPUs 0..16,
    GPU milli 0..1000 (a share of one GPU), a model string; else
    ``ArgumentError`` naming ``where``'s field and the pod."""
    args = Arguments(function)
    names = args.names(f"{where}.names", pods.names, nonempty=True)
    n = len(names)
    _vector(args, f"{where}.cpu", pods.cpu, n, "iu", 0, MAX_CPU_MILLI, names)
    _vector(args, f"{where}.mem", pods.mem, n, "iu", 0, MAX_MEMORY_MIB, names)
    num = _vector(args, f"{where}.num", pods.num, n, "iu", 0, MAX_NODE_GPUS, names)
    milli = _vector(args, f"{where}.milli", pods.milli, n, "iu", 0, MILLI, names)
    share = np.flatnonzero((num > 1) & (milli > 0) & (milli < MILLI))
    if share.size:
        j = int(share[0])
        raise args.error(f"{where}.num", f"pod {names[j]!r} (row {j}): a GPU share "
                         f"({int(milli[j])} milli) asks for exactly one GPU, not {int(num[j])}")
    spec = args.sequence(f"{where}.spec", pods.spec, str, "a model string ('' any)",
                         "model strings")
    if len(spec) != n:
        raise args.error(f"{where}.spec", f"{len(spec)} entries, expected {n} (one per pod)")


def check_workload(tw: B.TraceWorkload, where: str, function: str = "simulate_batch") -> None:
    """A ``TraceWorkload`` built by hand checked as ``trace_workload``
    makes one: its pods (``check_pods``, each name once), ``arrival`` [P]
    seconds 0..1e15 in arrival order, ``departure`` [P] at or after the
    arrival (inf: none), ``duration`` [P] >= 0 (inf: stays), not both;
    else ``ArgumentError`` naming ``where``'s field and the pod."""
    args = Arguments(function)
    check_pods(tw.pods, f"{where}.pods", function)
    names = list(tw.pods.names)
    seen: dict = {}
    for j, nm in enumerate(names):
        if nm in seen:
            raise args.error(f"{where}.pods.names[{j}]", f"duplicate pod {nm!r} (also at "
                             f"{seen[nm]})")
        seen[nm] = j
    n = len(names)
    arrive = _vector(args, f"{where}.arrival", tw.arrival, n, "iuf", 0, MAX_SECONDS, names)
    back = np.flatnonzero(np.diff(arrive) < 0)
    if back.size:
        j = int(back[0]) + 1
        raise args.error(f"{where}.arrival", f"pod {names[j]!r} (row {j}) arrives at "
                         f"{float(arrive[j]):g}, before the row above it: rows in arrival order")
    depart = _vector(args, f"{where}.departure", tw.departure, n, "iuf", 0, np.inf, names)
    early = np.flatnonzero(depart < arrive)
    if early.size:
        j = int(early[0])
        raise args.error(f"{where}.departure", f"pod {names[j]!r} (row {j}): "
                         f"{float(depart[j]):g} is before its arrival {float(arrive[j]):g}")
    _vector(args, f"{where}.duration", tw.duration, n, "iuf", 0, np.inf, names)
    try:
        B.check_times(tw, where)
    except ValueError as exc:
        raise args.error(where, str(exc).removeprefix(f"{where}: ")) from None


def check_scenario(clusters: list, scenario: Scenario, ranked: bool) -> None:
    """What ``ts.Simulation`` refuses of ``scenario`` on each of
    ``clusters`` (``GpuInventory``) as ``Simulation.scenario`` does before
    the trace is submitted (``check_steps``: a node absent then or added
    while present, a pod delete finding no pod: the trace's are not
    submitted yet), and with ``ranked`` (OpenbTieRank scores) an added
    node's ``openb.tensorsched.io/tie`` label that is not a rank
    (``trace.tie_rank``): ``ScenarioError`` naming the step's field."""
    for c, inv in enumerate(clusters):
        try:
            check_steps(scenario, inv.names, 0.0, lambda key, t: False)
        except ScenarioError as exc:
            if len(clusters) == 1:
                raise
            raise ScenarioError(exc.source, exc.field, f"{exc.problem} (on nodes[{c}])") from None
    if not ranked:
        return
    for st in scenario.steps:
        if st.kind != "Node" or st.action not in ("create", "addNodes"):
            continue
        for o in st.objects:
            meta = o.get("metadata") or {}
            try:
                T.tie_rank(meta.get("name", ""), meta.get("labels") or {})
            except ManifestError as exc:
                raise ScenarioError(scenario.source, f"{st.field}: {exc.obj}: {exc.field}",
                                    exc.problem) from None


def _cluster(x, where: str) -> GpuInventory:
    if isinstance(x, GpuInventory):
        return check_inventory(x, where)
    if isinstance(x, (str, os.PathLike)):
        return read_openb_nodes(Arguments("simulate_batch").path(where, x, exists=True))
    raise Arguments("simulate_batch").error(
        where, f"an openb node CSV path or a GpuInventory, got {x!r}")


def read_trace_path(path) -> Trace:
    """The trace of an openb pod CSV (``read_openb_trace``: its header
    names ``creation_time``) or of a generic trace file (``read_trace``:
    CSV or Parquet, pods leaving at a ``departure`` or a ``duration``
    after their binding)."""
    if str(path).lower().endswith(".csv"):
        try:
            with open(path, newline="", encoding="utf-8-sig") as f:
                header = [h.strip() for h in f.readline().split(",")]
        except (OSError, UnicodeDecodeError):
            header = []         # read_trace says what is wrong with it
        if "creation_time" in header:
            return T.read_openb_trace(path)
    return read_trace(path)


def _trace(x, where: str) -> B.TraceWorkload:
    if isinstance(x, B.TraceWorkload):
        check_workload(x, where)
        return x
    try:
        if isinstance(x, (str, os.PathLike)):
            path = Arguments("simulate_batch").path(where, x, exists=True)
            return B.trace_workload(read_trace_path(path))
        if isinstance(x, Trace):
            return B.trace_workload(x)
    except TensorschedError:
        raise
    except ValueError as exc:
        raise BatchInputError(f"simulate_batch: {where}: {exc}") from None
    raise Arguments("simulate_batch").error(
        where, f"an openb pod CSV path, a Trace (read_openb_trace) or a TraceWorkload, got {x!r}")


def simulate_batch(nodes, traces, configs=("FGD",), seeds=(0,), *, backend: str = "numba",
                   workers: int | None = None,
                   max_unsched: float = B.DEFAULT_MAX_UNSCHED,
                   termination_grace_seconds: float = 0.0) -> list:
    """Every (cluster, trace, config, seed) of the product of ``nodes``,
    ``traces``, ``configs`` and ``seeds`` (each one item or a list) in one
    batched call: a ``batch.TraceRunResult`` per run, in product order
    (``cluster``, ``trace``, ``config`` the indices; ``node``, ``gpus``,
    ``bind``, ``tries`` per pod in the trace's arrival order; the change
    log; ``at(times)`` the GPU milli allocated and fragmented then).

    ``nodes``: openb node CSV paths or ``GpuInventory``; ``traces``: openb
    pod CSV paths (``creation_time`` / ``deletion_time``), generic trace
    paths or ``Trace``s (``read_trace``: ``name``, ``arrival``,
    ``departure`` or ``duration``, ``cpu``, ``memory`` in whole MiB,
    ``annotations``, ``priority``: activeQ in PrioritySort's order, and
    what DefaultPreemption compares; no other column), ``Trace``s of
    ``read_openb_trace``
    or ``batch.TraceWorkload``; ``configs``: see the
    module doc; ``backend``: ``numba`` (the CPU twin, ``workers`` threads,
    default all cores) or ``cuda``; ``max_unsched``: the scheduler's
    ``pod_max_in_unschedulable_seconds``.  Each run equals
    ``Simulation(openb_node_objects(cluster, tie), config with the trace's
    typical pods, seed=seed, registry=experiment_registry(),
    pod_max_in_unschedulable_seconds=max_unsched)`` fed the trace, where
    ``tie`` is ``batch.tie_of(n, seed)`` when OpenbTieRank scores, and
    ``termination_grace_seconds`` the Scheduler's: DefaultPreemption's
    victims stay on their node, terminating, that long (0: they leave at
    once; the default)."""
    args = Arguments("simulate_batch")
    if backend not in B.BACKENDS:
        raise args.error("backend", f"unknown backend {backend!r} for the batched kernel; "
                         f"choose one of {', '.join(B.BACKENDS)} (ts.Simulation runs per "
                         "cluster on numpy)")
    # the cheap checks first: nothing is read before every argument's form is right
    nodes, traces = _as_list(nodes, "nodes"), _as_list(traces, "traces")
    configs, seeds = _as_list(configs, "configs"), _as_list(seeds, "seeds")
    seeds = [args.seed(s, f"seeds[{i}]") for i, s in enumerate(seeds)]
    max_unsched = args.number("max_unsched", max_unsched, 0.0, infinite=True, unit="seconds")
    workers = args.integer("workers", workers, 1, optional=True)
    grace = args.number("termination_grace_seconds", termination_grace_seconds, 0.0,
                        unit="seconds")
    clusters = [_cluster(x, f"nodes[{i}]") for i, x in enumerate(nodes)]
    tws = [_trace(x, f"traces[{i}]") for i, x in enumerate(traces)]
    cfgs = [batch_config(x, f"configs[{i}]", preemption=True)
            for i, x in enumerate(configs)]
    if len({c.backoff for c in cfgs}) > 1:
        raise args.error("configs", "the configs set different pod backoffs; one call "
                         "takes one")
    product = list(itertools.product(range(len(clusters)), range(len(tws)),
                                     range(len(cfgs)), seeds))
    jobs = [(c, t, cfgs[k].policy, s) for c, t, k, s in product]
    weights = []
    for c, _t, k, _s in product:
        cf = cfgs[k]
        n = clusters[c].n_nodes
        weights.append((n + 1 if cf.gpu_weight < 0 else cf.gpu_weight, cf.tie_weight))
    try:
        got = B.trace_batch(clusters, tws, jobs, backend=backend, workers=workers,
                            max_unsched=max_unsched, backoff=cfgs[0].backoff, weights=weights,
                            preempt=[cfgs[k].preempt for _c, _t, k, _s in product],
                            termination_grace_seconds=grace)
    except TensorschedError:
        raise
    except ValueError as exc:       # the inputs' own checks (no GPU, no pods, ...)
        raise BatchInputError(f"simulate_batch: {exc}") from None
    for (_c, _t, k, _s), res in zip(product, got):
        res.config = k
    return got
