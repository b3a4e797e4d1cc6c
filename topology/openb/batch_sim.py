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

from tensorsched.framework.arguments import Arguments
from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.config.plugin_args import DefaultPreemptionArgs
from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.simulation.trace import Trace, read_trace
from tensorsched.kernels.gpu import share as K

from ..gpu import GpuInventory, read_openb_nodes
from . import batch as B
from . import trace as T

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
    cfg = load_config(config, reg.plugin_points())
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


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _cluster(x, where: str) -> GpuInventory:
    if isinstance(x, GpuInventory):
        return x
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
            with open(path, newline="", encoding="utf-8") as f:
                header = [h.strip() for h in f.readline().split(",")]
        except (OSError, UnicodeDecodeError):
            header = []         # read_trace says what is wrong with it
        if "creation_time" in header:
            return T.read_openb_trace(path)
    return read_trace(path)


def _trace(x, where: str) -> B.TraceWorkload:
    if isinstance(x, B.TraceWorkload):
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
    clusters = [_cluster(x, f"nodes[{i}]") for i, x in enumerate(_as_list(nodes))]
    tws = [_trace(x, f"traces[{i}]") for i, x in enumerate(_as_list(traces))]
    cfgs = [batch_config(x, f"configs[{i}]", preemption=True)
            for i, x in enumerate(_as_list(configs))]
    seeds = [args.seed(s, f"seeds[{i}]") for i, s in enumerate(_as_list(seeds))]
    max_unsched = args.number("max_unsched", max_unsched, 0.0, infinite=True, unit="seconds")
    workers = args.integer("workers", workers, 1, optional=True)
    grace = args.number("termination_grace_seconds", termination_grace_seconds, 0.0,
                        unit="seconds")
    for name, v in (("nodes", clusters), ("traces", tws), ("configs", cfgs), ("seeds", seeds)):
        if not v:
            raise args.error(name, "empty: at least one")
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
