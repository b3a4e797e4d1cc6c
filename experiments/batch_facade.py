"""``ts.simulate_batch``: the facade's router.  A manifest cluster, or openb
nodes without a scenario, go to ``sweep_local.simulate_batch`` (which
hands openb nodes to ``topology.openb.batch_sim``); openb nodes (node CSV
paths, ``GpuInventory``) with a scenario run here on the batched openb
engine with node events (``sweep_openb_events``: one call per cluster, its
node steps as the kernel's events).

The openb scenario form takes ``batch_sim.batch_config``'s configs: a
policy name (the paper experiment's profile: GpuShareScore with the
OpenbTieRank node order, ``batch.tie_of(n, seed)`` on the node list's n
nodes; Random without it) or a KubeSchedulerConfiguration of that profile
(e.g. ``trace.openb_config(policy)``: GpuShareScore alone).  A node a
scenario adds ranks by its own ``openb.tensorsched.io/tie`` label (0
without), as OpenbTieRank reads it.  Its traces: openb pod CSV or generic
trace paths, or ``Trace``s (not a ``TraceWorkload``: the scenario's drains
read the pods' annotations).  The scenario's Pod creates are pods of the
run (``OpenbEventRun.pod_names``: the trace's and the created ones in
arrival order, at one time the created first); its Pod deletes delete
them.  What ``sweep_openb_events.plan_openb`` refuses raises its
``BatchProfileError`` before any run; ``ts.Simulation`` runs it per
cluster.

A config with DefaultPreemption at postFilter (``batch_config``'s
``preemption``) runs here too: the node-event engine's cluster function
preempts for it (``_openb_events``: candidates among the live,
schedulable nodes; a deleted node ends its nominations), its victims'
``preempted`` [P] set and ``evictions`` [P] the times each was evicted
(``why`` ``WHY_PREEMPTED`` where they left by preemption).  ``termination_grace_seconds`` (the Scheduler's) above 0: the
victims stay on their node, holding it, until their first eviction +
grace, then leave (``why`` ``WHY_PREEMPTED``); one that a drain, its
node's removal, a Pod delete or its own departure takes off first leaves
that way then, and its termination finds nothing.  A Pod delete of a
created pod gone before the step (preempted by a pod of the run, evicted
by a drain, deleted with its node, its duration over; with or without
DefaultPreemption) stops that run's Simulation there:
``SimulationError`` ``Pod default/<name>: not found (NotFound): no such
pod pending or bound at <t>s`` (``changes.pod_not_found``).  The batched
call raises that error, type and message, for the first such run in
product order (notes say how the pod left and name the run;
``sweep_openb_events.missed_deletes`` finds them after the kernel, from
the pods' ``why``); when no run's delete misses, every run is returned,
each its Simulation's.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, field

import numpy as np

from tensorsched.framework.arguments import Arguments
from tensorsched.framework.capacity.batch_probe import BatchProfileError as ProbeRefusal
from tensorsched.framework.errors import BackendError, TensorschedError
from tensorsched.framework.simulation.scenario import Scenario, load_scenario
from tensorsched.framework.simulation.trace import Trace
from tensorsched.kernels._errors import BackendUnavailable
from tensorsched.topology.gpu import GpuInventory
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import batch_sim as BS
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.batch_sim import BatchInputError, BatchProfileError

from . import sweep_local
from .sweep_openb_events import EV_ADD, OpenbPlan, missed_deletes, openb_event_runs, plan_openb

__all__ = ["OpenbEventRun", "simulate_batch", "simulate_openb_scenario"]


@dataclass
class OpenbEventRun(B.TraceRunResult):
    """A ``TraceRunResult`` of a run under a scenario's node steps:
    ``node`` [P] each pod's node as an index into ``node_names`` (the node
    list's, then each node a step adds, in step order; -1 never bound),
    ``why`` [P] 0, or how the pod left with its node (``WHY_EVICTED`` a
    drain, ``WHY_DELETED`` a removal: ``openb_events``); the change log
    also holds each node event e as ``log_pod`` = P + e (P the trace's
    pods; ``log_used`` unchanged by it), an evicted or deleted pod's
    leaving as -1 - j; ``pod_names`` [P] each pod's name (the trace's
    rows and the pods the scenario creates, in arrival order; a created
    pod deleted by a step has ``why`` ``WHY_POD_DELETED``)."""

    node_names: list = field(default_factory=list)
    why: np.ndarray | None = None
    pod_names: list = field(default_factory=list)


def simulate_batch(nodes, traces, configs=("FGD",), seeds=(0,), *, backend: str = "numba",
                   workers: int | None = None, max_unsched: float = B.DEFAULT_MAX_UNSCHED,
                   scenario=None, termination_grace_seconds: float = 0.0) -> list:
    """``ts.simulate_batch`` (``sweep_local.simulate_batch`` documents the
    arguments and the manifest form): openb nodes with a ``scenario`` (a
    ``Scenario``, a dict or a YAML / JSON path) run on the node-event
    engine, ``simulate_openb_scenario``; everything else as before.
    ``termination_grace_seconds`` (the Scheduler's, 0 by default): every
    engine honours it (the openb engines with a scenario or without, the
    manifest form's node-local engines with and without node events)."""
    grace = Arguments("simulate_batch").number(
        "termination_grace_seconds", termination_grace_seconds, 0.0, unit="seconds")
    if scenario is None or sweep_local._manifests(nodes):
        return sweep_local.simulate_batch(nodes, traces, configs, seeds, backend=backend,
                                          workers=workers, max_unsched=max_unsched,
                                          scenario=scenario, termination_grace_seconds=grace)
    return simulate_openb_scenario(nodes, traces, configs, seeds, scenario, backend=backend,
                                   workers=workers, max_unsched=max_unsched,
                                   termination_grace_seconds=grace)


_as_list = BS._as_list


def _trace(x, where: str) -> Trace:
    if isinstance(x, Trace):
        return x
    if isinstance(x, (str, os.PathLike)):
        return BS.read_trace_path(Arguments("simulate_batch").path(where, x, exists=True))
    raise Arguments("simulate_batch").error(
        where, f"with a scenario: an openb pod CSV or trace path or a Trace (its annotations: "
        f"a drain leaves static pods), got {x!r}")


def simulate_openb_scenario(nodes, traces, configs, seeds, scenario, *,
                            backend: str = "numba", workers: int | None = None,
                            max_unsched: float = B.DEFAULT_MAX_UNSCHED,
                            termination_grace_seconds: float = 0.0) -> list:
    """Every (cluster, trace, config, seed) of the product of ``nodes``
    (openb node CSV paths or ``GpuInventory``), ``traces``, ``configs``
    and ``seeds`` (each one item or a list) under ``scenario``'s steps, one
    batched call per cluster: an ``OpenbEventRun`` per run in product
    order, each equal to ``Simulation(openb_node_objects(cluster), config
    with the trace's typical pods (trace.typical_of), seed=seed,
    pod_max_in_unschedulable_seconds=max_unsched,
    termination_grace_seconds=termination_grace_seconds)`` given the
    scenario and fed the trace, the nodes labelled ``batch.tie_of(n, seed)`` and the
    registry ``trace.experiment_registry()`` where OpenbTieRank scores
    (module doc: what is refused, and the error a run whose Pod delete
    finds its pod gone raises)."""
    args = Arguments("simulate_batch")
    if backend not in B.BACKENDS:
        raise args.error("backend", f"unknown backend {backend!r} for the batched kernel; "
                         f"choose one of {', '.join(B.BACKENDS)} (ts.Simulation runs per "
                         "cluster on numpy)")
    if backend == "cuda":           # where it cannot run: refused before any work
        try:
            from tensorsched.kernels.batch import openb_events_cuda  # noqa: F401
        except BackendUnavailable as exc:
            raise BackendError(str(exc)) from None
    nodes, traces = _as_list(nodes, "nodes"), _as_list(traces, "traces")
    configs, seeds = _as_list(configs, "configs"), _as_list(seeds, "seeds")
    seeds = [args.seed(s, f"seeds[{i}]") for i, s in enumerate(seeds)]
    max_unsched = args.number("max_unsched", max_unsched, 0.0, infinite=True, unit="seconds")
    grace = args.number("termination_grace_seconds", termination_grace_seconds, 0.0,
                        unit="seconds")
    workers = args.integer("workers", workers, 1, optional=True)
    clusters = [BS._cluster(x, f"nodes[{i}]") for i, x in enumerate(nodes)]
    trs = [_trace(x, f"traces[{i}]") for i, x in enumerate(traces)]
    cfgs = [BS.batch_config(x, f"configs[{i}]", preemption=True)
            for i, x in enumerate(configs)]
    if len({c.backoff for c in cfgs}) > 1:
        raise args.error("configs", "the configs set different pod backoffs; one call "
                         "takes one")
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    # what the Simulation refuses of the steps is bad input, not a kernel limit
    BS.check_scenario(clusters, sc, any(cf.tie_weight for cf in cfgs))
    try:
        tws = [B.trace_workload(t) for t in trs]
        for t, tw in enumerate(tws):
            B.check_times(tw, f"traces[{t}]")
    except TensorschedError:
        raise
    except ValueError as exc:
        raise BatchInputError(f"simulate_batch: {exc}") from None
    plans, pods = [], []
    for c, inv in enumerate(clusters):
        try:
            got = [plan_openb(inv, sc, t) for t in trs]     # refusals before any run
        except ProbeRefusal as exc:        # as the openb form's config refusals
            raise BatchProfileError(f"scenario: {exc}") from None
        plan = got[0]
        if plan.rank_problem and any(cf.tie_weight for cf in cfgs):
            raise BatchProfileError(f"scenario: {plan.rank_problem}; the batched openb engine "
                                    "does not cover it")
        # each trace's pods with the scenario's created ones among them
        mine = [g.workload(tw, t) for g, tw, t in zip(got, tws, trs)]
        wide = _with_models(inv, plan)
        try:
            for tw, _m in mine:
                R.check_inputs(wide, tw.pods)
        except ValueError as exc:
            raise BatchInputError(f"simulate_batch: nodes[{c}]: {exc}") from None
        plans.append(plan)
        pods.append(mine)
    product = list(itertools.product(range(len(clusters)), range(len(trs)),
                                     range(len(cfgs)), seeds))
    out = []
    for c, inv in enumerate(clusters):
        mine = [x for x in product if x[0] == c]
        jobs = [(t, cfgs[k].policy, s) for _c, t, k, s in mine]
        n = inv.n_nodes
        weights = [(n + 1 if cfgs[k].gpu_weight < 0 else cfgs[k].gpu_weight, cfgs[k].tie_weight)
                   for _c, _t, k, _s in mine]
        t0 = time.perf_counter()
        a, ev = openb_event_runs(inv, plans[c], [tw for tw, _m in pods[c]], jobs, backend,
                                 workers, max_unsched, cfgs[0].backoff, weights=weights,
                                 made=[m for _tw, m in pods[c]],
                                 preempt=[cfgs[k].preempt for _c, _t, k, _s in mine],
                                 grace=grace)
        each = (time.perf_counter() - t0) / len(mine)
        missed = missed_deletes(a, ev, plans[c], jobs, [m for _tw, m in pods[c]])
        for b, ((_c, t, k, s), err) in enumerate(zip(mine, missed)):
            if err is not None:
                # the run's Simulation stops at the step: its error, type and message
                err.add_note(f"simulate_batch: run {product.index(mine[b])} (nodes[{c}], "
                             f"traces[{t}], configs[{k}], seed {s})")
                raise err
        for b, (_c, t, k, s) in enumerate(mine):
            res = _result(a, ev, b, plans[c], pods[c][t][0].pods, (c, t, cfgs[k].policy, int(s)),
                          each)
            res.config = k
            if cfgs[k].preempt is not None:
                res.evictions = ev.victim[int(a.ev_off[b]):int(a.ev_off[b] + a.ev_len[b])].copy()
                res.preempted = res.evictions != 0
            out.append(res)
    return out


def _with_models(inv: GpuInventory, plan: OpenbPlan) -> GpuInventory:
    """``inv`` with the GPU models the scenario's added nodes bring."""
    if list(plan.models) == list(inv.models):
        return inv
    wide = inv.copy()
    wide.models = list(plan.models)
    return wide


def _result(a, ev, b: int, plan: OpenbPlan, pods, job: tuple, seconds: float) -> OpenbEventRun:
    """Run ``b``'s ``OpenbEventRun``: each bound pod's local row turned
    into the node then on it, following the log (rows are reused by nodes
    added after a removal)."""
    o, p = int(a.ev_off[b]), int(a.ev_len[b])
    e = plan.events
    log_t, log_pod, log_frag = (x.copy() for x in ev.log(a, b, e.n_events))
    rows = ev.node[o:o + p]
    gm = ev.gmask[o:o + p]
    occupant = np.asarray(e.row0, np.int64).copy()
    node = np.full(p, -1, np.int64)
    step = np.zeros(log_pod.shape[0], np.int64)
    milli = np.asarray(pods.milli, np.int64)
    for m, k in enumerate(log_pod.tolist()):
        if k >= p:
            x = k - p
            if int(e.ev_kind[x]) == EV_ADD:
                occupant[int(e.ev_row[x])] = int(e.ev_x[x])
            continue
        j = k if k >= 0 else -1 - k
        if k >= 0:
            node[j] = occupant[int(rows[j])]
        step[m] = (1 if k >= 0 else -1) * int(gm[j]).bit_count() * int(milli[j])
    return OpenbEventRun(*job, node,
                         [tuple(g for g in range(16) if (int(x) >> g) & 1) for x in gm.tolist()],
                         ev.bind[o:o + p].copy(), ev.tries[o:o + p].copy(), log_t, log_pod,
                         log_frag, np.cumsum(step).astype(np.float64), float(ev.frag0[b]),
                         seconds, end=float(ev.end[b]), node_names=list(plan.names),
                         why=ev.why[o:o + p].copy(), pod_names=list(pods.names))
