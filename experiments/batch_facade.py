"""``ts.simulate_batch``: the facade's router.  A manifest cluster, or openb
nodes without a scenario, go to ``sweep_local.simulate_batch`` (which
hands openb nodes to ``topology.openb.batch_sim``); openb nodes (node CSV
paths, ``GpuInventory``) with a scenario run here on the batched openb
engine with node events (``sweep_openb_events``: one call per cluster, its
node steps as the kernel's events).

The openb scenario form takes the configs the node-event engine covers:
``batch_sim.batch_config``'s, without OpenbTieRank (the policy name
``Random``, or a KubeSchedulerConfiguration whose score plugin is
GpuShareScore alone, e.g. ``trace.openb_config(policy)``); a policy name
other than Random is the paper experiment's profile, whose OpenbTieRank
labels the kernel's node events do not carry, and is refused naming the
config.  Its traces: openb pod CSV or generic trace paths, or ``Trace``s
(not a ``TraceWorkload``: the scenario's drains read the pods'
annotations).  What ``sweep_openb_events.plan_openb`` refuses raises its
``BatchProfileError`` before any run; ``ts.Simulation`` runs it per
cluster.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, field

import numpy as np

from tensorsched.framework.arguments import Arguments
from tensorsched.framework.capacity.batch_probe import BatchProfileError as ProbeRefusal
from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.simulation.scenario import Scenario, load_scenario
from tensorsched.framework.simulation.trace import Trace
from tensorsched.topology.gpu import GpuInventory
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import batch_sim as BS
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.batch_sim import BatchInputError, BatchProfileError

from . import sweep_local
from .sweep_openb_events import EV_ADD, OpenbPlan, openb_event_runs, plan_openb

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
    leaving as -1 - j."""

    node_names: list = field(default_factory=list)
    why: np.ndarray | None = None


def simulate_batch(nodes, traces, configs=("FGD",), seeds=(0,), *, backend: str = "numba",
                   workers: int | None = None, max_unsched: float = B.DEFAULT_MAX_UNSCHED,
                   scenario=None) -> list:
    """``ts.simulate_batch`` (``sweep_local.simulate_batch`` documents the
    arguments and the manifest form): openb nodes with a ``scenario`` (a
    ``Scenario``, a dict or a YAML / JSON path) run on the node-event
    engine, ``simulate_openb_scenario``; everything else as before."""
    if scenario is None or sweep_local._manifests(nodes):
        return sweep_local.simulate_batch(nodes, traces, configs, seeds, backend=backend,
                                          workers=workers, max_unsched=max_unsched,
                                          scenario=scenario)
    return simulate_openb_scenario(nodes, traces, configs, seeds, scenario, backend=backend,
                                   workers=workers, max_unsched=max_unsched)


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _trace(x, where: str) -> Trace:
    if isinstance(x, Trace):
        return x
    if isinstance(x, (str, os.PathLike)):
        return BS.read_trace_path(Arguments("simulate_batch").path(where, x, exists=True))
    raise Arguments("simulate_batch").error(
        where, f"with a scenario: an openb pod CSV or trace path or a Trace (its annotations: "
        f"a drain leaves static pods), got {x!r}")


def _config(x, where: str) -> BS.BatchConfig:
    cfg = BS.batch_config(x, where)
    if cfg.tie_weight:
        raise BatchProfileError(
            f"{where}: OpenbTieRank scores (a policy name other than Random is the experiment's "
            "profile with it); the batched openb engine with node events runs GpuShareScore "
            "alone (e.g. trace.openb_config(policy)); ts.Simulation runs it per cluster")
    return cfg


def simulate_openb_scenario(nodes, traces, configs, seeds, scenario, *,
                            backend: str = "numba", workers: int | None = None,
                            max_unsched: float = B.DEFAULT_MAX_UNSCHED) -> list:
    """Every (cluster, trace, config, seed) of the product of ``nodes``
    (openb node CSV paths or ``GpuInventory``), ``traces``, ``configs``
    and ``seeds`` (each one item or a list) under ``scenario``'s steps, one
    batched call per cluster: an ``OpenbEventRun`` per run in product
    order, each equal to ``Simulation(openb_node_objects(cluster), config
    with the trace's typical pods (trace.typical_of), seed=seed,
    pod_max_in_unschedulable_seconds=max_unsched)`` given the scenario and
    fed the trace (module doc: what is refused)."""
    args = Arguments("simulate_batch")
    if backend not in B.BACKENDS:
        raise args.error("backend", f"unknown backend {backend!r} for the batched kernel; "
                         f"choose one of {', '.join(B.BACKENDS)} (ts.Simulation runs per "
                         "cluster on numpy)")
    clusters = [BS._cluster(x, f"nodes[{i}]") for i, x in enumerate(_as_list(nodes))]
    trs = [_trace(x, f"traces[{i}]") for i, x in enumerate(_as_list(traces))]
    cfgs = [_config(x, f"configs[{i}]") for i, x in enumerate(_as_list(configs))]
    seeds = [args.seed(s, f"seeds[{i}]") for i, s in enumerate(_as_list(seeds))]
    max_unsched = args.number("max_unsched", max_unsched, 0.0, infinite=True, unit="seconds")
    workers = args.integer("workers", workers, 1, optional=True)
    for name, v in (("nodes", clusters), ("traces", trs), ("configs", cfgs), ("seeds", seeds)):
        if not v:
            raise args.error(name, "empty: at least one")
    if len({c.backoff for c in cfgs}) > 1:
        raise args.error("configs", "the configs set different pod backoffs; one call "
                         "takes one")
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    try:
        tws = [B.trace_workload(t) for t in trs]
        for t, tw in enumerate(tws):
            B.check_times(tw, f"traces[{t}]")
    except TensorschedError:
        raise
    except ValueError as exc:
        raise BatchInputError(f"simulate_batch: {exc}") from None
    plans = []
    for c, inv in enumerate(clusters):
        try:
            got = [plan_openb(inv, sc, t) for t in trs]     # refusals before any run
        except ProbeRefusal as exc:        # as the openb form's config refusals
            raise BatchProfileError(f"scenario: {exc}") from None
        plan = got[0]
        wide = _with_models(inv, plan)
        try:
            for tw in tws:
                R.check_inputs(wide, tw.pods)
        except ValueError as exc:
            raise BatchInputError(f"simulate_batch: nodes[{c}]: {exc}") from None
        plans.append(plan)
    product = list(itertools.product(range(len(clusters)), range(len(trs)),
                                     range(len(cfgs)), seeds))
    out = []
    for c, inv in enumerate(clusters):
        mine = [x for x in product if x[0] == c]
        jobs = [(t, cfgs[k].policy, s) for _c, t, k, s in mine]
        weights = [(cfgs[k].gpu_weight, 0) for _c, _t, k, _s in mine]
        t0 = time.perf_counter()
        a, ev = openb_event_runs(inv, plans[c], tws, jobs, backend, workers, max_unsched,
                                 cfgs[0].backoff, weights=weights)
        each = (time.perf_counter() - t0) / len(mine)
        for b, (_c, t, k, s) in enumerate(mine):
            res = _result(a, ev, b, plans[c], tws[t].pods, (c, t, cfgs[k].policy, int(s)), each)
            res.config = k
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
                         why=ev.why[o:o + p].copy())
