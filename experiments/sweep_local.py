"""``simulate`` jobs on a manifest cluster under default-profile
configurations as batched calls of the node-local kernel's trace form
(``kernels.batch.local_cpu.run_local_trace``: the CPU twin, a ``prange``
over runs), each row equal to the row ``experiments.sweep`` makes from
the job's ``Simulation`` (``sweep_batch.simulate_row``) but
``wall_seconds``.

``trace_runs(objects, config, trace, seeds)`` runs one configuration and
one trace under every seed in one call; ``batched_local(jobs, inputs,
workers, done)`` runs a sweep's covered jobs of one (cluster, trace,
interval), every configuration and seed, as one call (``run_setups``:
the configurations' pod classes side by side, each run scoring with its
own profile's arguments), and falls back (returns them) where the kernel
does not cover a job.

Covered (else ``BatchProfileError`` naming the plugin or the field, before
any run): what the capacity probes' kernel covers of the profile and the
pods (``framework.capacity.batch_probe``: NodeResourcesFit with any
strategy and its resources and weights, BalancedAllocation,
TaintToleration, NodeAffinity, NodeUnschedulable, NodeName,
ImageLocality, InterPodAffinity where no queued pod's terms select another
queued pod (bound pods' terms, a pending pod whose terms select itself
alone), their score weights, percentageOfNodesToScore), and of the
clock what the openb engine's queue reproduces (``kernels/batch/_queue``):
pods arriving at their ``arrival`` and leaving at their ``departure`` or
``duration`` seconds after their binding, attempted in PrioritySort's
order (priority, then creation time, then first-in first-out; the
manifests' pending pods arrive at time 0 before the trace's); a pod that
fits nowhere waits in the unschedulable pool until a bound pod leaves
(NodeResourcesFit's event) or the pool's flush.
A pod that fails has NodeResourcesFit among its rejectors as long as a
usage-independent filter (taints, affinity, unschedulable, nodeName,
InterPodAffinity's constants) passes one node for it, so a departure moves
it as ``_queue`` moves every waiting pod.  A scenario's node steps
(cordon, uncordon, drain, addNodes, Node deletes, removeNodes) run in the
kernel as timed node events and its Pod steps too (creates as trace rows,
deletes as events; ``event_plan``, ``sweep_events``, ``kernels.batch.
local_events``): each failed pod then keeps the cluster events its
rejecting plugins listen to and a departure or a node event moves only
the pods listening to it, as the Simulation's queue does; so does a job
whose trace pod those filters reject on every node (it waits for a node
event or the pool's flush).  A job where a pod could preempt (unequal
priorities with DefaultPreemption in the profile) runs DefaultPreemption
inside the kernel's queue (``sweep_preempt``, ``kernels.batch.
local_preempt``: PostFilter's candidates, victims and pick, the victims'
deletion, the preemptor's nomination counted in the cycles of pods of
lower or equal priority, PodDisruptionBudgets; with a termination grace
above 0, ``simulate_batch``'s ``termination_grace_seconds``, the victims
terminating on their node until their grace ends), its rows counting the
preemptions; where it also has node events (a scenario's steps, a pod
those filters reject on every node) both run in one call
(``kernels.batch.local_preempt_events``: the manifests' bound pods one by
one, candidates among the live nodes, a deleted node's nominations
forgotten); a scenario's Pod delete of a pod gone before it (its
duration over, its node drained or removed, preempted) stops that run's
Simulation with NotFound (``sweep_events.missed_delete``, after the
run): ``simulate_batch`` raises that error, type and message, for the
first such run in product order, a sweep reports the job as its per-job
path does.  Refused:
``until``, a scenario step ``event_plan`` refuses (named by the step's
field: a Pod delete of a manifests' bound pod whose node left before,
...); what
``sweep_preempt`` refuses where a pod could preempt (InterPodAffinity terms, a
terminating bound pod, a pod nominated in its manifest, NodeResourcesFit
before a usage-independent filter); pods whose
InterPodAffinity terms select each other (the probes' kernel refuses
them).
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pyarrow as pa

from tensorsched.framework.arguments import MAX_OBJECTS, Arguments
from tensorsched.framework.capacity.batch_probe import BatchProfileError, LocalProber
from tensorsched.framework.capacity.common import bound_pods
from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.errors import BackendError, ConfigError, TensorschedError
from tensorsched.framework.parsing.manifests import (
    DocumentError,
    load_objects,
    parse_yaml_documents,
    read_text,
)
from tensorsched.framework.runtime.framework import num_feasible_nodes_to_find
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.queue import DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS
from tensorsched.framework.simulation.scenario import Scenario, load_scenario
from tensorsched.framework.simulation.trace import Trace
from tensorsched.kernels._errors import BackendUnavailable
from tensorsched.kernels.batch.local_cpu import LocalProfiles, LocalTrace, run_local_trace
from tensorsched.kernels.batch.local_events import (
    EV_ADD,
    EV_DELETE,
    EV_EVICT,
    LocalEvents,
    run_local_events,
)
from tensorsched.kernels.batch.local_preempt import LocalPreempt, log_start, run_local_preempt
from tensorsched.kernels.batch.local_preempt_events import (
    LocalPreemptEvents,
    run_local_preempt_events,
)
from tensorsched.registry_slot import default_registry
from tensorsched.topology.openb.batch_sim import simulate_batch as openb_batch

from . import simulate_run as run
from .event_plan import NodeEvents, plan_events
from .sweep_batch import simulate_row
from .sweep_preempt import (
    PreemptingProber,
    PreemptSetup,
    departed_terminating,
    pdb_columns,
    preempt_event_arrays,
    preempt_event_row,
    preempt_row,
    preempt_setup,
)
from .sweep_events import (
    RowSteps,
    event_row,
    missed_delete,
    rejector_codes,
    row_steps,
    scenario_trace,
)

__all__ = ["BatchProfileError", "LocalRun", "TraceSetup", "batched_local", "run_setups", "share_call",
           "simulate_batch", "trace_runs", "trace_setup"]


@dataclass
class LocalRun:
    """One run's outcome in ``sweep_batch.simulate_row``'s terms: per pod
    (trace order) ``node`` (the node's row in the cluster, -1 never bound),
    ``bind`` (seconds, NaN), ``tries``; the changes ``log_t`` / ``log_pod``
    (j bound, -1 - j left); ``end`` the clock when nothing was left; no
    GPUs (``log_used`` / ``log_frag`` zeros)."""

    node: np.ndarray
    bind: np.ndarray
    tries: np.ndarray
    log_t: np.ndarray
    log_pod: np.ndarray
    end: float
    frag0: float = 0.0
    trace: int = 0          # simulate_batch: the indices of the run's trace and config
    config: int = 0
    seed: int = 0
    node_names: list | None = None
    why: np.ndarray | None = None   # node events: how each pod left with its node (0: it did not)
    # preemption (a pod could preempt; else None): per pod, then per bound
    # pod of the manifests, the times it was evicted (0 never; it left at
    # its log entry) and its first eviction's time (seconds, NaN never)
    victim: np.ndarray | None = None
    evicted_at: np.ndarray | None = None

    @property
    def log_used(self) -> np.ndarray:
        return np.zeros(self.log_t.shape[0], np.int64)

    @property
    def log_frag(self) -> np.ndarray:
        return np.zeros(self.log_t.shape[0], np.float64)


def _refuse(what: str, why: str) -> BatchProfileError:
    return BatchProfileError(f"{what}: {why}; the batched node-local trace kernel does not "
                             "cover it")


@dataclass
class TraceSetup:
    """A (cluster, config, trace)'s kernel inputs but the seeds, and what
    its rows need: the cluster's cpu / memory allocatable and requested at
    the start (millicores, bytes), its bound pods."""

    prober: LocalProber
    arrive: np.ndarray
    depart: np.ndarray
    duration: np.ndarray        # seconds bound before leaving (inf: stays)
    rank: np.ndarray            # activeQ's order before the push order (``_queue``)
    backoff: tuple
    caps: tuple
    base: tuple
    names: list
    bound: int          # the manifests' bound pods (they keep running)
    unprofiled: int = 0     # the manifests' pending pods of no profile (never queued)
    events: "EventSetup | None" = None      # node events (``sweep_events``), or None
    preempt: PreemptSetup | None = None     # DefaultPreemption's inputs (``sweep_preempt``), or None


def _queued(cl):
    """The manifests' pending pods of a profile and the pending pods of
    no profile (never queued)."""
    names = {p.scheduler_name for p in cl.config.profiles}
    pending = [p for p in cl.objects.pods if not p.node_name]
    return [p for p in pending if p.scheduler_name in names], len(pending)


def _objects(function: str, objects) -> list:
    """``objects`` (manifests) as a list, read through ``function``'s
    argument check: an endless generator is refused, not listed."""
    return Arguments(function).sequence("objects", objects, items="object dicts",
                                        limit=MAX_OBJECTS)


def trace_setup(objects, config, trace, scenario=None) -> TraceSetup:
    """The checks and inputs of ``trace_runs`` (module doc); ``scenario``
    (a ``Scenario``) its node steps as the kernel's node events
    (``sweep_events``)."""
    objects = _objects("trace_setup", objects)
    trace = scenario_trace(trace, scenario)     # its created pods among the trace's rows
    cl = build_cluster(copy.deepcopy(objects), copy.deepcopy(config))
    # the manifests' pending pods arrive at time 0 and stay; those of no
    # profile are never queued (the rows count them arrived, ``unprofiled``)
    early, n_pending = _queued(cl)
    records = list(trace.records(0, len(trace)))
    pods = [cl.resolve(p) for p in early + records]
    nodes = list(cl.objects.nodes)
    plan = None
    if scenario is not None and scenario.steps:
        plan = plan_events(objects, cl, scenario, pods)
    preempt = None
    if plan is None:
        # a pod that could preempt: the kernel's queue preempts (``sweep_preempt``)
        prober = PreemptingProber(cl, nodes, bound_pods(cl), pods, 0)
        preempt = preempt_setup(prober, cl.objects, pods, [n.name for n in nodes])
    else:
        probers = []
        for objs in plan.variants:
            cv = build_cluster(copy.deepcopy(objs), copy.deepcopy(config))
            if [n.name for n in cv.objects.nodes] != plan.names:
                raise _refuse("scenario", "its nodes do not keep the cluster's order")
            ev_early, _ = _queued(cv)
            # a pod that could preempt: the kernel's queue preempts with the
            # node events (``sweep_preempt``, ``local_preempt_events``)
            probers.append(PreemptingProber(cv, list(cv.objects.nodes), bound_pods(cv),
                                            [cv.resolve(p) for p in ev_early + records], 0))
        prober = probers[0]
        preempt = preempt_setup(prober, cl.objects, pods, [n.name for n in nodes])
    # activeQ's order before the push order: the queue's own sort key
    # (PrioritySort: higher priority first, then the earlier creation)
    keys = [prober.sort_key(p) for p in pods]
    dense = {k: i for i, k in enumerate(sorted(set(keys)))}
    rank = np.array([dense[k] for k in keys], np.int64)
    n0 = len(nodes)
    static = prober.base["static_bits"][:, :n0]
    waits = bool(static.shape[1]) and bool((static != 0).all(axis=1).any())
    if waits and plan is None:
        # a pod the usage-independent filters reject on every node waits
        # for a node event (or the pool's flush): the node-event form
        # keeps each failed pod's rejectors
        plan = plan_events(objects, cl, Scenario([]), pods)
        probers = [prober]
    sched_cfg = cl.config
    cols = prober.cols
    state = prober.universe.state
    ci, mi = state.resources.index["cpu"], state.resources.index["memory"]
    k = len(early)
    arrive = np.concatenate([np.zeros(k), np.asarray(trace.arrival, np.float64)])
    depart = np.concatenate([np.full(k, np.inf),
                             np.where(np.isnan(trace.departure), np.inf, trace.departure)])
    duration = np.concatenate([np.full(k, np.inf),
                               np.where(np.isnan(trace.duration), np.inf, trace.duration)])
    base = (int(cols.requested[:n0, ci].sum()), int(cols.requested[:n0, mi].sum()))
    caps = (int(cols.allocatable[:n0, ci].sum()), int(cols.allocatable[:n0, mi].sum()))
    setup = TraceSetup(prober, arrive, depart.astype(np.float64), duration.astype(np.float64),
                       rank,
                       (float(sched_cfg.pod_initial_backoff_seconds),
                        float(sched_cfg.pod_max_backoff_seconds)),
                       caps, base, [n.name for n in nodes], len(prober.universe.objects.pods),
                       n_pending - len(early), preempt=preempt)
    if plan is not None:
        setup.events = event_setup(plan, probers, pods, cols, ci, mi, base)
    return setup


@dataclass
class EventSetup:
    """A setup's node events (``sweep_events``): ``plan``; ``probers`` one
    per variant of the cluster (the classes alike); ``rej`` [C, V x n_all]
    the rejector codes, ``fit_interest``; ``korder`` the pods in key
    order; ``find0`` / ``find`` the nodes to find at the start and after
    each event; ``steps`` what the rows read."""

    plan: NodeEvents
    probers: list
    rej: np.ndarray
    fit_interest: int
    korder: np.ndarray
    find0: int
    find: np.ndarray
    steps: RowSteps
    used: np.ndarray        # [E, R] what each event leaves requested on its node
    nz: np.ndarray          # [E, 2] its non-zero cpu, memory


def event_setup(plan: NodeEvents, probers: list, pods: list, cols, ci: int, mi: int,
                base: tuple) -> EventSetup:
    """``EventSetup`` of ``plan`` over ``probers``; refused (module doc of
    ``sweep_events``) where the kernel's answers would not hold."""
    p0 = probers[0]
    for pv in probers[1:]:
        if not (np.array_equal(pv.class_of, p0.class_of)
                and all(np.array_equal(pv.base[f], p0.base[f]) for f in (
                    "c_request", "c_nonzero", "c_active", "c_weights", "alloc", "used0"))):
            raise _refuse("scenario", "a cordoned node changes the pods' classes")
    moves = [t for t, kind in zip(plan.t, plan.kind) if kind in (EV_ADD, EV_DELETE)]
    if moves and any(e for e in p0.images if e):
        raise _refuse("ImageLocality", f"a node added or removed at {moves[0]:g}s changes "
                      "its scores (they count the nodes holding an image)")
    ipa_rows = set(np.asarray(p0._ipa_rows).tolist())
    for t, kind, node in zip(plan.t, plan.kind, plan.uid):
        if kind in (EV_DELETE, EV_EVICT) and node in ipa_rows:
            raise _refuse("InterPodAffinity", f"node {plan.names[node]!r} leaves at {t:g}s "
                          "with bound pods its terms read")
    codes = [rejector_codes(pv) for pv in probers]
    pct = p0.fw.percentage if p0.fw is not None else None
    keys = [p.key for p in pods]
    korder = np.asarray(sorted(range(len(keys)), key=keys.__getitem__), np.int64)
    return EventSetup(plan, probers, np.concatenate([c[0] for c in codes], axis=1),
                      codes[0][1], korder, num_feasible_nodes_to_find(pct, plan.n0),
                      np.asarray([num_feasible_nodes_to_find(pct, n) for n in plan.live],
                                 np.int64),
                      row_steps(plan, cols.allocatable, ci, mi, base),
                      *plan.left_usage(list(p0.universe.state.resources.names),
                                       cols.requested.shape[1]))


def trace_runs(objects, config, trace, seeds, threads: int | None = None) -> list[LocalRun]:
    """The Simulation of ``objects`` (manifests) under ``config`` (a
    KubeSchedulerConfiguration dict, None: the default) fed ``trace`` (a
    ``Trace``), once per seed, as one call; raises ``BatchProfileError``
    when not covered (module doc)."""
    s = trace_setup(_objects("trace_runs", objects), config, trace)
    return run_setups([s], [seeds], threads)[0]


_PROFILE_FIELDS = ("strategy", "fit_res", "fit_kind", "fit_weights", "shape_util",
                   "shape_score", "bal_res", "bal_kind")
_CLASS_FIELDS = ("c_request", "c_nonzero", "c_anything", "c_ignored", "c_fit_filter",
                 "c_active", "c_norm", "c_weights", "static_bits", "static_raw")


def share_call(setups: list[TraceSetup]) -> bool:
    """Whether setups (one cluster and trace, their configurations) share
    one call: the same node columns, resources and backoff."""
    a = setups[0]
    sa = a.prober.universe.state
    for s in setups[1:]:
        st = s.prober.universe.state
        if (s.backoff != a.backoff or s.names != a.names
                or list(st.resources.names) != list(sa.resources.names)
                or not np.array_equal(s.prober.cols.allocatable, a.prober.cols.allocatable)
                or not np.array_equal(s.prober.cols.requested, a.prober.cols.requested)
                or (s.events is None) != (a.events is None)
                or (s.events is not None and (
                    s.events.plan.names != a.events.plan.names
                    or len(s.events.probers) != len(a.events.probers)
                    or s.events.plan.t != a.events.plan.t
                    or s.events.plan.kind != a.events.plan.kind
                    or s.events.plan.node != a.events.plan.node))):
            return False
    return True


def run_setups(setups: list[TraceSetup], seeds: list, threads=None,
               max_unsched: float = DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS,
               backend: str = "numba", grace: float = 0.0) -> list[list[LocalRun]]:
    """Each setup (one cluster and trace, its configuration) under each of
    its ``seeds[k]``; setups that share the node columns run as one call
    (their classes side by side, each run scoring with its own profile);
    ``max_unsched``: the Scheduler's pod_max_in_unschedulable_seconds;
    ``backend``: numba (the CPU twin, ``threads``) or cuda (a block per
    run; ``BackendError`` without a device); ``grace``: the Scheduler's
    termination_grace_seconds (where a pod could preempt: its victims
    terminate that long on their node)."""
    if len(setups) > 1 and (not share_call(setups)
                            or len({s.preempt is None for s in setups}) > 1):
        return [run_setups([s], [sd], threads, max_unsched, backend, grace)[0]
                for s, sd in zip(setups, seeds)]
    if any(s.events is not None for s in setups):
        return _run_event_setups(setups, seeds, threads, max_unsched, backend, grace)
    parts = []
    for s in setups:
        b, _orders = s.prober.batch([s.names], [list(range(len(s.prober.pods)))])
        parts.append(b)
    offsets = np.cumsum([0] + [b.c_request.shape[0] for b in parts])
    first = parts[0]
    cat = {f: np.concatenate([getattr(b, f) for b in parts]) for f in _CLASS_FIELDS}
    # every run has every node: one ImageLocality group per configuration
    image_raw = np.concatenate([b.image_raw[b.image_group[0]][None] for b in parts], axis=1)
    pod_cls, node_rows, arrive, depart, dur, rank, to_find, profile, run_seeds = (
        [] for _ in range(9))
    for k, (s, b) in enumerate(zip(setups, parts)):
        for seed in seeds[k]:
            # the trace's order, not the queue's: the kernel's queue orders the attempts
            pod_cls.append(s.prober.class_of + offsets[k])
            node_rows.append(b.node_rows)
            arrive.append(s.arrive)
            depart.append(s.depart)
            dur.append(s.duration)
            rank.append(s.rank)
            to_find.append(int(b.num_to_find[0]))
            profile.append(k)
            run_seeds.append(int(seed))
    n = len(run_seeds)
    node_ptr = np.concatenate([[0], np.cumsum([r.shape[0] for r in node_rows])])
    pod_ptr = np.concatenate([[0], np.cumsum([c.shape[0] for c in pod_cls])])
    batch = first._replace(
        **cat, image_raw=image_raw, node_ptr=node_ptr.astype(np.int64),
        node_rows=np.concatenate(node_rows) if n else np.zeros(0, np.int64),
        pod_ptr=pod_ptr.astype(np.int64),
        pod_cls=np.concatenate(pod_cls) if n else np.zeros(0, np.int64),
        image_group=np.zeros(n, np.int64), num_to_find=np.asarray(to_find, np.int64),
        s_key=None, key_first=None)
    profiles = LocalProfiles.of([{f: getattr(b, f) for f in _PROFILE_FIELDS} for b in parts],
                                profile)
    lt = LocalTrace(batch, np.concatenate(arrive) if n else np.zeros(0),
                    np.concatenate(depart) if n else np.zeros(0),
                    np.asarray(run_seeds, np.int64), setups[0].backoff[0],
                    setups[0].backoff[1], float(max_unsched), profiles,
                    np.concatenate(dur) if n else np.zeros(0),
                    # all equal: activeQ first-in first-out (a ring, not a heap)
                    np.concatenate(rank) if n and any(r.any() for r in rank) else None)
    victim = vic_ptr = None
    log0 = 2 * pod_ptr[:-1]     # where each run's log rows start
    if setups[0].preempt is not None:
        got, victim, evicted_at, vic_ptr, log0 = _run_preempt(lt, setups, seeds, threads,
                                                              backend, grace)
    elif backend == "cuda":
        try:
            # the cuda kernel's module raises BackendUnavailable on import
            # where no device (or simulator) is there
            from tensorsched.kernels.batch.local_trace_cuda import run_local_trace_cuda
        except BackendUnavailable as exc:
            raise BackendError(str(exc)) from exc
        got = run_local_trace_cuda(lt)
    else:
        got = run_local_trace(lt, threads)
    out: list[list[LocalRun]] = [[] for _ in setups]
    for b in range(n):
        p0, p1 = int(pod_ptr[b]), int(pod_ptr[b + 1])
        m = int(got.n_log[b])
        g0 = int(log0[b])
        out[profile[b]].append(LocalRun(
            got.node[p0:p1].copy(), got.bind[p0:p1].copy(), got.tries[p0:p1].copy(),
            got.log_t[g0:g0 + m].copy(), got.log_pod[g0:g0 + m].copy(),
            float(got.end[b]), victim=None if victim is None
            else victim[vic_ptr[b]:vic_ptr[b + 1]].copy(),
            evicted_at=None if victim is None
            else evicted_at[vic_ptr[b]:vic_ptr[b + 1]].copy()))
    return out


def _run_preempt(lt: LocalTrace, setups: list[TraceSetup], seeds: list, threads,
                 backend: str, grace: float = 0.0):
    """``lt`` with DefaultPreemption in the kernel's queue
    (``kernels.batch.local_preempt``; cuda: ``local_preempt_cuda.
    run_local_preempt_cuda``): (``TraceResult``, victim and evicted_at
    [sum (P + B)], each run's rows of them [runs + 1], each run's first log
    row [runs]); ``grace`` the termination grace."""
    p = _preempt_call(lt, setups, seeds)._replace(grace=float(grace))
    vic_ptr = p.vic_ptr
    starts = np.asarray([log_start(p, b) for b in range(p.pct.shape[0])], np.int64)
    if backend == "cuda":
        try:
            from tensorsched.kernels.batch.local_preempt_cuda import run_local_preempt_cuda
        except BackendUnavailable as exc:
            raise BackendError(str(exc)) from exc
        return (*run_local_preempt_cuda(p), vic_ptr, starts)
    return (*run_local_preempt(p, threads), vic_ptr, starts)


def _preempt_call(lt: LocalTrace, setups: list[TraceSetup], seeds: list) -> LocalPreempt:
    """The ``LocalPreempt`` of ``lt``: each setup's preemption rows once per seed."""
    fields = ("prio", "may", "krank", "pstart", "preq", "pnz", "bnode")
    cols: dict = {f: [] for f in fields}
    pct, least, sizes = [], [], [0]
    for s, sd in zip(setups, seeds):
        for _seed in sd:
            for f in fields:
                cols[f].append(getattr(s.preempt, f))
            pct.append(s.preempt.pct)
            least.append(s.preempt.least)
            sizes.append(s.preempt.prio.shape[0])
    width = lt.batch.alloc.shape[1]
    empty = {"preq": np.zeros((0, width), np.int64), "pnz": np.zeros((0, 2), np.int64)}
    cat = {f: np.concatenate(v) if v else empty.get(f, np.zeros(0, np.int64))
           for f, v in cols.items()}
    vic_ptr = np.cumsum(sizes).astype(np.int64)
    return LocalPreempt(lt, vic_ptr, cat["prio"], cat["may"], cat["krank"], cat["pstart"],
                        cat["preq"], cat["pnz"], cat["bnode"], np.asarray(pct, np.int64),
                        np.asarray(least, np.int64),
                        **pdb_columns([s.preempt for s, sd in zip(setups, seeds) for _ in sd]))


def _run_event_setups(setups: list[TraceSetup], seeds: list, threads, max_unsched: float,
                      backend: str, grace: float = 0.0) -> list[list[LocalRun]]:
    """``run_setups`` of setups with node events (alike: ``share_call``):
    the universe holds each variant of the cluster's nodes side by side
    (``EventSetup.probers``), every run's local nodes are variant 0's rows,
    an event swaps a node's answers for another variant's row."""
    ev0 = setups[0].events
    n_all = ev0.plan.n_all                  # the universe's nodes (per variant)
    n_loc = len(ev0.plan.local_rows)        # each run's local rows
    parts = []
    for s in setups:
        pods = list(range(len(s.prober.pods)))
        parts.append([pv.batch([s.events.plan.names], [pods])[0] for pv in s.events.probers])
    offsets = np.cumsum([0] + [bs[0].c_request.shape[0] for bs in parts])
    first = parts[0][0]
    cat = {f: np.concatenate([getattr(bs[0], f) for bs in parts]) for f in _CLASS_FIELDS}
    cat["static_bits"] = np.concatenate(
        [np.concatenate([b.static_bits for b in bs], axis=1) for bs in parts])
    cat["static_raw"] = np.concatenate(
        [np.concatenate([b.static_raw for b in bs], axis=1) for bs in parts])
    image_raw = np.concatenate(
        [np.concatenate([b.image_raw[b.image_group[0]] for b in bs], axis=1)[None]
         for bs in parts], axis=1)
    rej = np.concatenate([s.events.rej for s in setups])
    universe = {f: np.concatenate([getattr(b, f) for b in parts[0]])
                for f in ("alloc", "used0", "nz0")}
    cols = {f: [] for f in ("pod_cls", "arrive", "depart", "dur", "rank", "find", "korder",
                            "ev_t", "ev_kind", "ev_node", "ev_x", "ev_find", "ev_bound",
                            "ev_used", "ev_nz")}
    profile, run_seeds, ev_ptr = [], [], [0]
    width = first.alloc.shape[1]
    valid0 = np.arange(n_loc) < ev0.plan.n0
    for k, s in enumerate(setups):
        e, plan = s.events, s.events.plan
        arrays = {"ev_t": np.asarray(plan.t, np.float64),
                  "ev_kind": np.asarray(plan.kind, np.int64),
                  "ev_node": np.asarray(plan.node, np.int64),
                  "ev_x": np.asarray(plan.variant, np.int64) * n_all
                  + np.asarray(plan.uid, np.int64),
                  "ev_find": e.find, "ev_bound": np.asarray(plan.bound, np.int64),
                  "ev_used": e.used, "ev_nz": e.nz}
        if s.preempt is not None:
            # the bound pods one by one (``sweep_preempt.preempt_event_arrays``)
            arrays = preempt_event_arrays(arrays, plan, s.prober.bound, s.preempt.bnode,
                                          len(s.prober.pods))
        for seed in seeds[k]:
            cols["pod_cls"].append(s.prober.class_of + offsets[k])
            cols["arrive"].append(s.arrive)
            cols["depart"].append(s.depart)
            cols["dur"].append(s.duration)
            cols["rank"].append(s.rank)
            cols["korder"].append(e.korder)
            cols["find"].append(e.find0)
            for name, v in arrays.items():
                cols[name].append(v)
            ev_ptr.append(ev_ptr[-1] + arrays["ev_t"].shape[0])
            profile.append(k)
            run_seeds.append(int(seed))
    n = len(run_seeds)
    cat_or = lambda name, dtype: (np.concatenate(cols[name]).astype(dtype) if n  # noqa: E731
                                  else np.zeros(0, dtype))
    pod_ptr = np.concatenate([[0], np.cumsum([c.shape[0] for c in cols["pod_cls"]])])
    batch = first._replace(
        **cat, **universe, image_raw=image_raw,
        node_ptr=np.arange(n + 1, dtype=np.int64) * n_loc,
        node_rows=np.tile(np.asarray(ev0.plan.local_rows, np.int64), n),
        pod_ptr=pod_ptr.astype(np.int64), pod_cls=cat_or("pod_cls", np.int64),
        image_group=np.zeros(n, np.int64), num_to_find=np.asarray(cols["find"], np.int64),
        s_key=None, key_first=None)
    profiles = LocalProfiles.of([{f: getattr(bs[0], f) for f in _PROFILE_FIELDS}
                                 for bs in parts], profile)
    rank = cat_or("rank", np.int64)
    lt = LocalTrace(batch, cat_or("arrive", np.float64), cat_or("depart", np.float64),
                    np.asarray(run_seeds, np.int64), setups[0].backoff[0],
                    setups[0].backoff[1], float(max_unsched), profiles,
                    cat_or("dur", np.float64), rank if rank.any() else None)
    ev = LocalEvents(lt, np.tile(valid0, n), rej, int(ev0.fit_interest),
                     cat_or("korder", np.int64), np.asarray(ev_ptr, np.int64),
                     cat_or("ev_t", np.float64), cat_or("ev_kind", np.int64),
                     cat_or("ev_node", np.int64), cat_or("ev_x", np.int64),
                     cat_or("ev_find", np.int64), cat_or("ev_bound", np.int64),
                     np.concatenate(cols["ev_used"]) if n else np.zeros((0, width), np.int64),
                     np.concatenate(cols["ev_nz"]) if n else np.zeros((0, 2), np.int64))
    if setups[0].preempt is not None:
        return _run_preempt_events(ev, setups, seeds, profile, threads, backend, grace)
    if backend == "cuda":
        try:
            from tensorsched.kernels.batch.local_trace_cuda import run_local_events_cuda
        except BackendUnavailable as exc:
            raise BackendError(str(exc)) from exc
        got, why = run_local_events_cuda(ev)
    else:
        got, why = run_local_events(ev, threads)
    out: list[list[LocalRun]] = [[] for _ in setups]
    for b in range(n):
        p0, p1 = int(pod_ptr[b]), int(pod_ptr[b + 1])
        m = int(got.n_log[b])
        out[profile[b]].append(LocalRun(
            # a local row may hold another node later: the node at the binding
            ev0.plan.occupants(got.node[p0:p1], got.bind[p0:p1]), got.bind[p0:p1].copy(),
            got.tries[p0:p1].copy(), got.log_t[2 * p0:2 * p0 + m].copy(),
            got.log_pod[2 * p0:2 * p0 + m].copy(), float(got.end[b]), why=why[p0:p1].copy()))
    return out


def _run_preempt_events(ev: LocalEvents, setups: list[TraceSetup], seeds: list, profile: list,
                        threads, backend: str, grace: float = 0.0) -> list[list[LocalRun]]:
    """``_run_event_setups``' call where a pod could preempt
    (``kernels.batch.local_preempt_events``; cuda: ``local_preempt_events_cuda``):
    each run's ``why``, ``victim`` and ``evicted_at`` per queue pod then
    per bound pod of the manifests."""
    p = _preempt_call(ev.trace, setups, seeds)._replace(grace=float(grace))
    pe = LocalPreemptEvents(ev, p)
    if backend == "cuda":
        try:
            from tensorsched.kernels.batch.local_preempt_events_cuda import (
                run_local_preempt_events_cuda,
            )
        except BackendUnavailable as exc:
            raise BackendError(str(exc)) from exc
        got, why, victim, evicted_at = run_local_preempt_events_cuda(pe)
    else:
        got, why, victim, evicted_at = run_local_preempt_events(pe, threads)
    plan = setups[0].events.plan
    pod_ptr, vic_ptr = ev.trace.batch.pod_ptr, p.vic_ptr
    out: list[list[LocalRun]] = [[] for _ in setups]
    for b in range(len(profile)):
        p0, p1 = int(pod_ptr[b]), int(pod_ptr[b + 1])
        v0, v1 = int(vic_ptr[b]), int(vic_ptr[b + 1])
        m = int(got.n_log[b])
        g0 = log_start(p, b)
        out[profile[b]].append(LocalRun(
            plan.occupants(got.node[p0:p1], got.bind[p0:p1]), got.bind[p0:p1].copy(),
            got.tries[p0:p1].copy(), got.log_t[g0:g0 + m].copy(),
            got.log_pod[g0:g0 + m].copy(), float(got.end[b]), why=why[v0:v1].copy(),
            victim=victim[v0:v1].copy(), evicted_at=evicted_at[v0:v1].copy()))
    return out


def _missed_delete(s: TraceSetup, res, grace: float = 0.0):
    """The error ``res``'s Simulation stops with at a scenario's Pod delete
    of a pod gone before it (``sweep_events.missed_delete``), else None;
    ``grace`` the run's termination grace (seconds)."""
    if s.events is None:
        return None
    keys = [p.key for p in s.prober.pods]
    rows = None if s.preempt is None else {b.key: len(keys) + k
                                           for k, b in enumerate(s.prober.bound)}
    if res.victim is not None and res.why is not None and grace > 0:
        # a victim a step took while it terminated left as that step says,
        # one that departed while terminating left so, not at its preemption
        gone = (res.why != 0) | departed_terminating(res, s.depart, s.duration, grace)
        if (gone & (res.victim > 0)).any():
            res = SimpleNamespace(why=res.why, log_t=res.log_t, log_pod=res.log_pod,
                                  victim=np.where(gone, 0, res.victim))
    return missed_delete(s.events.plan, keys, res, rows)


def _row_trace(s: TraceSetup, trace):
    """What ``simulate_row`` reads of the trace: times, and each pod's cpu
    and memory request as the cluster accounts it."""
    req = s.prober.base["c_request"][s.prober.class_of]
    if s.preempt is not None:
        # the manifests' bound pods after the queue's: a preempted one leaves the log
        req = s.preempt.preq
    state = s.prober.universe.state
    ci, mi = state.resources.index["cpu"], state.resources.index["memory"]
    return SimpleNamespace(arrival=s.arrive, departure=np.where(np.isinf(s.depart), np.nan,
                                                                s.depart),
                           duration=np.where(np.isinf(s.duration), np.nan, s.duration),
                           table=pa.table({"cpu": req[:, ci], "memory": req[:, mi]}))


def agenda_spans(s: TraceSetup, res, horizon: float) -> np.ndarray:
    """[E, 2] when each of a run's events is on the Simulation's agenda
    (pushed, due; seconds): the arrivals and absolute departures cover
    [0, ``horizon``], a departure after a duration is pushed at the
    binding."""
    timed = (res.node >= 0) & np.isfinite(s.duration)
    pushed = np.concatenate([[0.0], res.bind[timed]])
    due = np.concatenate([[horizon], res.bind[timed] + s.duration[timed]])
    return np.stack([pushed, due], axis=1)


def samples_follow(spans: np.ndarray, interval: float, horizon: float) -> bool:
    """Whether the time series' rows after ``horizon`` are the states at
    their times: no sample time falls where the agenda is empty and the
    scheduler goes on to bind a pod that leaves later (the Simulation
    then samples the state of that binding, not of the sample time)."""
    spans = spans[np.argsort(spans[:, 0], kind="stable")]
    covered = float(spans[0, 1])
    t = interval
    for start, stop in spans[1:].tolist():
        if start > covered:
            # empty from ``covered`` until this push
            while t < covered:
                t = t + interval
            if t < start:
                return False
        covered = max(covered, stop)
    return True


def batchable(job, inputs: dict) -> bool:
    """A simulate job this path may take: manifests, no ``until``, on
    numba (the CPU twin) or cuda (a scenario's node steps: ``sweep_events``)."""
    return (job.kind == "simulate" and job.batch and job.backend in ("numba", "cuda")
            and bool(job.cluster) and not job.nodes and not job.policy
            and job.until is None and inputs.get(("typical", job.trace)) is None)


def batched_local(jobs, inputs: dict, workers: int | None, done) -> list:
    """The jobs ``batchable`` takes, grouped by (cluster, trace, interval,
    backend, scenario, termination grace, pod_max_in_unschedulable_seconds),
    each group one call (``run_setups``' ``grace`` and ``max_unsched``; a
    refused configuration goes back); ``done(i, row, None)`` per row.
    Returns the indices of the other jobs."""
    groups: dict = {}
    rest = []
    for i, job in enumerate(jobs):
        if batchable(job, inputs):
            groups.setdefault((job.cluster, job.trace, job.interval, job.backend,
                               job.scenario, float(job.termination_grace_seconds),
                               float(job.pod_max_in_unschedulable_seconds)),
                              {}).setdefault(job.config, []).append(i)
        else:
            rest.append(i)
    for key, by_config in groups.items():
        cluster, trace_path, interval, backend, sc_path, grace, max_unsched = key
        trace = inputs[("trace", trace_path)]
        scenario = inputs[("scenario", sc_path)] if sc_path else None
        t0 = time.perf_counter()
        setups, idxs = [], []
        for config, idx in by_config.items():
            cfg = copy.deepcopy(inputs[("config", config)]) if config else None
            try:
                setups.append(trace_setup(inputs[("cluster", cluster)], cfg, trace,
                                          scenario))
                idxs.append(idx)
            except (TensorschedError, ValueError):
                # refused (BatchProfileError), or inputs the per-run path reports
                rest.extend(idx)
        if not setups:
            continue
        try:
            runs = run_setups(setups, [[jobs[i].seed for i in idx] for idx in idxs], workers,
                              max_unsched=max_unsched, backend=backend, grace=grace)
        except BackendError:
            rest.extend(i for idx in idxs for i in idx)     # the per-run path says why
            continue
        each = (time.perf_counter() - t0) / sum(len(idx) for idx in idxs)
        horizon = run.horizon(trace, scenario, None)
        for s, idx, got in zip(setups, idxs, runs):
            rt = _row_trace(s, trace)
            for i, res in zip(idx, got):
                job = jobs[i]
                err = _missed_delete(s, res, grace)
                if err is not None:
                    # its Simulation stops at the delete: the per-job path's report
                    done(i, None, f"{job.label}: {err}")
                    continue
                spans = agenda_spans(s, res, horizon)
                if not samples_follow(spans, interval, horizon):
                    rest.append(i)          # the per-run path samples it
                    continue
                # a victim that left at its own departure while terminating departed
                departed = None if res.victim is None else departed_terminating(
                    res, s.depart, s.duration, grace)
                row = {"trace": job.trace_name, "config": job.config_name, "seed": job.seed}
                if s.events is not None and s.preempt is not None:
                    row.update(preempt_event_row(res, rt, s.events.steps, s.caps, s.base,
                                                 s.bound, interval, horizon,
                                                 float(spans[:, 1].max()), departed))
                elif s.events is not None:
                    row.update(event_row(res, res.why, rt, s.events.steps, s.caps, s.base,
                                         s.bound, interval, horizon,
                                         float(spans[:, 1].max())))
                else:
                    row.update(simulate_row(res, rt, s.caps[0], s.caps[1], 0, interval,
                                            horizon, False, base=s.base,
                                            last_event=float(spans[:, 1].max())))
                    if res.victim is not None:
                        row = preempt_row(row, res, rt, departed)
                    row["running"] += s.bound
                row["arrived"] += s.unprofiled      # never queued: not pending either
                row["wall_seconds"] = each
                done(i, row, None)
    return sorted(rest)


def _read_config(path) -> dict | None:
    """A KubeSchedulerConfiguration file's first document (a file that
    cannot be read: ``ConfigError`` naming it)."""
    try:
        docs = [d for _, d in parse_yaml_documents(read_text(str(path))) if d is not None]
    except DocumentError as exc:
        raise ConfigError("", exc.problem, str(path)) from None
    if docs and not isinstance(docs[0], dict):
        raise ConfigError("", f"must hold one object (a mapping), got "
                          f"{type(docs[0]).__name__}", str(path))
    return dict(docs[0]) if docs else None


def _manifests(x) -> bool:
    """Whether ``simulate_batch``'s ``nodes`` is a manifest cluster: object
    dicts, or a YAML / JSON file or a directory."""
    if isinstance(x, (list, tuple)):
        return bool(x) and all(isinstance(o, dict) for o in x)
    if isinstance(x, (str, os.PathLike)):
        path = str(x)
        return os.path.isdir(path) or path.lower().endswith((".yaml", ".yml", ".json"))
    return False


def simulate_batch(nodes, traces, configs=("FGD",), seeds=(0,), *, backend: str = "numba",
                   workers: int | None = None,
                   max_unsched: float = DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS,
                   scenario=None, termination_grace_seconds: float = 0.0) -> list:
    """``ts.simulate_batch``: on openb nodes (CSV paths, ``GpuInventory``)
    ``topology.openb.batch_sim.simulate_batch``; on a manifest cluster
    (``nodes``: object dicts, a YAML / JSON file or a directory) every
    (trace, config, seed) of the product of ``traces`` (``Trace``s or
    trace paths), ``configs`` (KubeSchedulerConfiguration dicts or paths,
    None the default profile; left at its default: the default profile)
    and ``seeds`` (each one item or a list) on the node-local kernel in one
    call (numba: the CPU twin, ``workers`` threads; cuda: a thread block
    per run, tested under the simulator): a ``LocalRun`` per
    run in product order (``trace``, ``config`` the indices, ``seed``;
    ``node`` per pod of the manifests' pending pods (of a profile) then the trace's, a
    row of the cluster's nodes, ``node_names`` its names; where a pod could
    preempt, ``victim`` per pod then per bound pod of the manifests, its
    evictions: 0 never, and ``evicted_at`` its first eviction's time,
    seconds, NaN never), each equal to
    ``ts.Simulation(objects, config, seed=seed,
    pod_max_in_unschedulable_seconds=max_unsched)`` given ``scenario``
    (manifests only: a ``Scenario``, a dict or a YAML path; its node
    steps run in the kernel, ``sweep_events``) and fed the trace.  What
    the kernel does not cover raises ``BatchProfileError`` (module doc)
    before any run; ``ts.Simulation`` runs it per cluster.
    ``termination_grace_seconds`` (seconds >= 0): the Scheduler's; on
    openb nodes the openb engine's (``batch_sim``); on a manifest cluster,
    where a pod could preempt, its victims terminate that long on their
    node (holding its resources; a victim chosen again keeps its first
    deadline) before they leave, and ``victim`` counts each pod's
    evictions (as the Simulation's Preempted events)."""
    if not _manifests(nodes):
        if scenario is not None:
            raise Arguments("simulate_batch").error(
                "scenario", "on a manifest cluster only; ts.Simulation runs it per cluster")
        return openb_batch(nodes, traces, configs, seeds, backend=backend, workers=workers,
                           max_unsched=max_unsched,
                           termination_grace_seconds=termination_grace_seconds)
    args = Arguments("simulate_batch")
    grace = args.number("termination_grace_seconds", termination_grace_seconds, 0.0,
                        unit="seconds")
    if backend not in ("numba", "cuda"):
        raise args.error("backend", f"{backend!r}: the node-local kernel's trace form runs on "
                         "numba (the CPU twin) or cuda; ts.Simulation runs per cluster")
    objects = (load_objects(nodes) if isinstance(nodes, (str, os.PathLike))
               else copy.deepcopy(list(nodes)))
    if configs == ("FGD",):
        configs = [None]
    traces, configs = args.items("traces", traces), args.items("configs", configs)
    seeds = [args.seed(x, f"seeds[{i}]") for i, x in enumerate(args.items("seeds", seeds))]
    max_unsched = args.number("max_unsched", max_unsched, 0.0, infinite=True, unit="seconds")
    workers = args.integer("workers", workers, 1, optional=True)
    for i, c in enumerate(configs):
        if isinstance(c, (str, os.PathLike)) and os.path.isfile(c) or c is None \
                or isinstance(c, dict):
            continue
        got = f"{os.fspath(c)!r} is not a file" if isinstance(c, (str, os.PathLike)) \
            else f"got {c!r}"
        raise args.error(f"configs[{i}]", f"{got}: on a manifest cluster a config is a "
                         "KubeSchedulerConfiguration dict, the path of a file of one or None "
                         "(policy names go with openb nodes)")
    traces = [run.read_trace_file(str(t)) if isinstance(t, (str, os.PathLike)) else t
              for t in traces]
    for i, t in enumerate(traces):
        if not isinstance(t, Trace):
            raise args.error(f"traces[{i}]", f"a Trace (read_trace) or a trace path, got {t!r}")
    cfgs = [_read_config(c) if isinstance(c, (str, os.PathLike)) else c for c in configs]
    points = default_registry().plugin_points()       # build_cluster's, as trace_setup's
    for i, (given, c) in enumerate(zip(configs, cfgs)):
        try:                # before any run, its errors naming the file or the argument
            load_config(c, points)
        except ConfigError as exc:
            raise exc.with_source(os.fspath(given) if isinstance(given, (str, os.PathLike))
                                  else f"configs[{i}]") from None
    sc = None if scenario is None else (scenario if isinstance(scenario, Scenario)
                                        else load_scenario(scenario))
    setups = [[trace_setup(objects, c, t, sc) for c in cfgs] for t in traces]
    out = []
    for ti, per_trace in enumerate(setups):
        got = run_setups(per_trace, [seeds] * len(per_trace), workers, max_unsched, backend,
                         grace)
        for ci, runs in enumerate(got):
            for seed, r in zip(seeds, runs):
                r.trace, r.config, r.seed = ti, ci, seed
                err = _missed_delete(per_trace[ci], r, grace)
                if err is not None:
                    # the run's Simulation stops at the delete: its error
                    err.add_note(f"simulate_batch: run {len(out)} (traces[{ti}], "
                                 f"configs[{ci}], seed {seed})")
                    raise err
                ev = per_trace[ci].events
                r.node_names = per_trace[ci].names if ev is None else ev.plan.names
                out.append(r)
    return out
