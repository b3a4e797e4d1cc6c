"""``Simulation``: a discrete-event driver over the Scheduler on its
simulated clock.

Events live in an ``Agenda``, a heap of ``(time, priority, counter, kind,
payload)`` (SimPy's layout): at equal times departures and deletions
(priority 0) go before node changes (1) and arrivals (2), and ties are
first-in first-out by the counter, so a run is a pure function of its
inputs and seed.  At an
event time every event due is applied (pods added to the scheduling queue,
deleted, nodes added, cordoned, drained, deleted: each a cluster event that
moves the unschedulable pool exactly as the Scheduler's embedding API does),
then the Scheduler runs until idle without its clock passing the next event
time (its backoff, permit and termination timers fire on the way; a pod it
binds that is due to leave sooner moves that limit down).  Bound pods with a
departure (an absolute time, or a duration counted from the binding) leave
then and free what they took; a pod still pending at its departure is
deleted from the queue.  A departure belongs to the pod it was given with
(``lifetimes``), not to its name: one that outlived its pod (deleted, and
another submitted under the name) does nothing.  Sample times and
``step``/``run`` boundaries are not events: the scheduler's run paused
there resumes as if never paused, so they change nothing that happens.

A trace is read row by row as the clock reaches it (``trace.Trace``): pod
records exist only for pods that arrived and are still alive, and nothing
is kept per departed pod, so memory follows the pods alive.  Trace pods
that arrive one at a time, MIN_BLOCK or more of them before the next other
event, sample or departure, go to the scheduler as one block
(``Scheduler.schedule_arrivals``, when the profile has a block form and
the scheduler is idle): the same outcomes, events and times as one arrival
after another, counted in bulk.

This module is the event drive and the calls that feed it; its
collaborators, each in its own module: ``agenda.Agenda`` (the pending
events), ``arrivals.TraceArrivals`` (traces and arrival blocks),
``changes.ClusterChanges`` (what an event does to the cluster),
``lifetimes.Lifetimes`` (which pod a departure belongs to),
``listeners.Listeners`` (who hears the events), ``series.TimeSeries``
(rows, totals, latencies) and ``snapshot`` (the Arrow form of the calls).

``timeseries()`` has one row per ``interval`` seconds (the state at the end
of each interval, and counts over it); ``metrics={name: fn(cluster) ->
float}`` adds columns (the GPU plugin set registers GPU allocation and
fragmentation this way; the framework knows nothing of GPUs).

``snapshot()`` is an Arrow table of the inputs (cluster, configuration,
options, every call that fed the simulation, with its arguments and time,
traces as Arrow IPC) and a digest of the state reached; ``Simulation.
restore(snapshot)`` replays those calls deterministically and checks the
digest, so a restored simulation continues exactly as the original would
(its cost is the run so far).
"""

from __future__ import annotations

import copy
import inspect
import math
import os
from collections.abc import Callable
from contextlib import contextmanager
from functools import partial

import pyarrow as pa

from tensorsched.framework.arguments import MAX_LISTED_PODS, MAX_OBJECTS, Arguments, shown
from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.parsing.manifests import (
    load_objects,
    parse_node,
    parse_yaml_documents,
    read_text,
)
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.runtime.gc_pacing import few_collections
from tensorsched.framework.runtime.registry import Registry
from tensorsched.framework.scheduler.cluster import (
    Cluster,
    build_cluster,
    check_cluster_inputs,
    check_feature_gates,
    pod_from,
)
from tensorsched.framework.scheduler.events import EVENTS as SCHEDULER_EVENTS
from tensorsched.framework.scheduler.scheduler import Scheduler

from .agenda import PRIO_ARRIVE, PRIO_LEAVE, PRIO_NODE, Agenda
from .arrivals import BLOCK_ROWS, CHUNK, FIRST_BLOCK_ROWS, MIN_BLOCK, TraceArrivals
from .changes import ClusterChanges, pod_not_found
from .dra_series import DRA_BEFORE, dra_metrics, has_dra_objects
from .errors import SimulationError
from .lifetimes import Lifetimes
from .listeners import Listeners
from .node_slices import checked_slices
from .scenario import Scenario, check_steps, load_scenario
from . import series as series_rules
from .series import TIMESERIES_COLUMNS, TimeSeries, check_rows
from .snapshot import (
    SNAPSHOT_VERSION,
    freeze,
    read_snapshot,
    replay_call,
    snapshot_table,
    thawed,
    trace_blob,
)
from .snapshot import digest as state_digest
from .trace import MAX_SECONDS, Trace, trace_from_table

__all__ = ["BLOCK_ROWS", "CHUNK", "EVENTS", "FIRST_BLOCK_ROWS", "MIN_BLOCK", "PRIO_ARRIVE",
           "PRIO_LEAVE", "PRIO_NODE", "SIM_EVENTS", "SNAPSHOT_VERSION", "TIMESERIES_COLUMNS",
           "HorizonClock", "Simulation", "SimulationError"]

#: Events of a simulation: the Scheduler's, and the simulation's own.
SIM_EVENTS = ("Arrived", "Departed", "Deleted", "Evicted", "NodeAdded", "NodeUpdated",
              "NodeDeleted")
EVENTS = SCHEDULER_EVENTS + SIM_EVENTS


def check_scheduler_options(args: Arguments, options: dict) -> None:
    """Refuse (``ArgumentError`` naming it) a keyword the Scheduler does not
    take, before anything is built (Python's TypeError named neither the
    function the user called nor the arguments it takes)."""
    known = [p.name for p in inspect.signature(Scheduler.__init__).parameters.values()
             if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "clock"]
    for name in options:
        if name not in known:
            raise args.error(name, f"unknown keyword argument (the Scheduler's are "
                             f"{', '.join(known)})")


class _PastHorizon(Exception):
    """The scheduler wanted its clock past the next event (internal)."""


class HorizonClock(SimulatedClock):
    """A simulated clock that refuses to be ``set`` past ``horizon``: the
    Scheduler's run-until-idle jumps to its next timer through ``set``, and
    the simulation stops it there when an event comes first."""

    def __init__(self, start: float = 0.0):
        super().__init__(start)
        self.horizon = math.inf

    def set(self, t: float) -> None:
        if t > self.horizon:
            raise _PastHorizon
        super().set(t)


class Simulation:
    """A cluster and its scheduler in simulated time (see the module doc).

    ``cluster``: a ``Cluster`` (``build_cluster``), a list of object dicts or
    a path of manifests; ``config`` (with objects or a path) a
    KubeSchedulerConfiguration (dict, path or None).  ``interval``: seconds
    per ``timeseries`` row (None: no rows).  ``metrics``: extra time-series
    columns, ``{name: fn(cluster) -> float}`` (more later with
    ``series.add_metrics``); once the cluster has DRA objects (when made,
    or when nodes join with slices) the device columns of ``dra_series``
    follow, the rows before reading none published.  ``registry``: the plugin registry (default:
    the installed ``default_registry()``).  ``feature_gates``: gate name ->
    on, with objects or a path (``build_cluster``'s).  Other keyword arguments go to
    the ``Scheduler`` (``batch``, ``termination_grace_seconds``,
    ``pod_max_in_unschedulable_seconds``, ...).  Pending pods of the loaded
    objects arrive at time 0.

    Public collaborators: ``agenda`` (the pending events; ``len`` is how
    many), ``series`` (the time series and totals), ``clock``,
    ``scheduler`` and ``cluster``."""

    def __init__(self, cluster, config=None, backend: str = "numba", seed: int = 0, *,
                 interval: float | None = 60.0, metrics: dict | None = None, registry=None,
                 feature_gates=None, **scheduler_options):
        args = Arguments("Simulation")
        check_scheduler_options(args, scheduler_options)
        if isinstance(cluster, (str, os.PathLike)):
            cluster = args.path("cluster", cluster)
        elif not isinstance(cluster, Cluster):
            cluster = args.sequence("cluster", cluster, items="object dicts (or a Cluster, "
                                    "or a path of manifests)", limit=MAX_OBJECTS)
        if not isinstance(cluster, Cluster):
            check_cluster_inputs(args, [], config, registry)
        backend, seed = args.backend(backend), args.seed(seed)
        interval = args.number("interval", interval, 0.0, above=True, optional=True,
                               unit="seconds")
        metrics = args.mapping("metrics", metrics, optional=True,
                               what="a mapping of column names to functions of the cluster")
        for name, fn in (metrics or {}).items():
            args.text("metrics", name)
            args.callback(f"metrics[{name!r}]", fn)
        args.instance("registry", registry, Registry, "a Registry (default_registry()) or None",
                      optional=True)
        self._init = {"backend": backend, "seed": seed, "interval": interval,
                      "options": dict(scheduler_options), "objects": None, "config": None}
        feature_gates = check_feature_gates(args, feature_gates, config)
        if isinstance(cluster, Cluster):
            if config is not None or feature_gates is not None:
                raise SimulationError("config and feature_gates go with objects; a Cluster "
                                      "has its own")
            self.cluster = cluster
        else:
            objects = load_objects(cluster) if isinstance(cluster, (str, os.PathLike)) \
                else list(cluster)
            self.cluster = build_cluster(objects, config, registry, feature_gates)
            cfg = _read_config(config) if isinstance(config, (str, os.PathLike)) else config
            # the caller's dicts as they are now: changed later, they would
            # make a snapshot that restores another simulation
            self._init["objects"] = objects if isinstance(cluster, (str, os.PathLike)) \
                else freeze(objects, "the objects")
            self._init["config"] = thawed(cfg, "config") if cfg is not None else None
            if feature_gates is not None:
                self._init["feature_gates"] = feature_gates
        self.clock = HorizonClock()
        self.scheduler = Scheduler(self.cluster, backend, seed, clock=self.clock,
                                   **scheduler_options)
        for ev in ("Bound", "FailedScheduling", "Preempted"):
            self.scheduler.subscribe(ev, self._on_scheduler_event)
        self.interval = float(interval) if interval is not None else None
        self.series = TimeSeries(metrics, seed)
        # device use over time, from when the cluster first has DRA objects
        # (now, or when slices or claims arrive later); the rows before have
        # no device published; a column of the caller's own name is kept
        self.series.add_metrics_when(has_dra_objects, dra_metrics(), DRA_BEFORE)
        self.series.start_ready(self.cluster)
        self.metrics = self.series.metrics          # name -> fn(cluster), the metric columns
        self.totals = self.series.totals
        self._window = self.series.window
        self.agenda = Agenda()
        self.listeners = Listeners(self.clock)
        self._pending: dict[str, float] = {}        # pending pod -> arrival time
        self._durations: dict[str, float] = {}      # pod with a duration -> seconds
        # a departure leaves the pod it was scheduled for, not a later one of its name
        self._lifetimes = Lifetimes()
        self.changes = ClusterChanges(
            cluster=self.cluster, scheduler=self.scheduler, clock=self.clock,
            pending=self._pending, durations=self._durations, series=self.series,
            listeners=self.listeners, push=self._push, lifetimes=self._lifetimes)
        self.arrivals = TraceArrivals(
            agenda=self.agenda, push=self._push, add_pods=self.changes.add_pods,
            pending=self._pending, durations=self._durations, cluster=self.cluster,
            scheduler=self.scheduler, scheduler_event=self._on_scheduler_event,
            series=self.series, clock=self.clock, min_block=MIN_BLOCK, lifetimes=self._lifetimes)
        self._arrived = partial(self.listeners.event, "Arrived")
        self._driving = False
        self._fresh = True            # an event was applied since the last drive
        self._log: list[tuple] = []                  # (call, at, payload, blob)
        self._replaying = False
        self._next_sample = self.interval if self.interval is not None else math.inf
        pending = list(self.cluster.pending)
        if pending:
            self._push(0.0, PRIO_ARRIVE, "pods", (pending, None))

    # ------------------------------------------------------------ inputs
    def _push(self, t: float, prio: int, kind: str, payload) -> None:
        self.agenda.push(t, prio, kind, payload)
        if self._driving and t < self.clock.horizon:
            # the scheduler stops there (_drive), or at the next sample
            # first: a drive with nothing left to come runs to no horizon,
            # and the pod it binds must not carry the clock past a sample
            self.clock.horizon = float(min(t, max(self._next_sample, self.clock.now())))

    def _when(self, at, function: str, name: str = "at") -> float:
        """The time ``at`` (argument ``name`` of method ``function``) as
        seconds, now when None; never before now."""
        now = self.clock.now()
        if at is None:
            return now
        args = Arguments(f"Simulation.{function}")
        t = args.number(name, at, 0.0, MAX_SECONDS, unit="seconds")   # as traces' and steps'
        if t < now:
            # a bad time for this simulation, not a bad value
            raise SimulationError(f"Simulation.{function}: {name}: {at:g} is before the "
                                  f"simulation's time {now:g}")
        return t

    def _logged(self, call: str, at, payload=None, blob: bytes | None = None) -> None:
        if not self._replaying:
            # frozen now: the caller may change its dicts after the call
            when = f" at {at:g}s" if at is not None else ""
            self._log.append((call, at, freeze(payload, f"the {call} call{when}"), blob))

    def submit(self, pods, at=None, *, duration: float | None = None, templates=None) -> int:
        """Pods arrive: Pod dicts or records (all at ``at``, default now;
        with ``duration`` each leaves that long after being bound), or a
        trace (an Arrow table of the trace schema, or a ``Trace``): its rows
        arrive at their ``arrival`` (plus ``at`` when given) and leave at
        their ``departure`` / after their ``duration``.  Returns the number
        of pods submitted."""
        if isinstance(pods, (pa.Table, pa.RecordBatch, Trace)):
            if not isinstance(pods, Trace):
                templates = Arguments("Simulation.submit").sequence(
                    "templates", templates, item="a pod spec", items="pod specs",
                    optional=True, limit=MAX_LISTED_PODS)
            trace = pods if isinstance(pods, Trace) else trace_from_table(pods, templates)
            offset = 0.0 if at is None else self._when(at, "submit")
            if trace.arrival[0] + offset < self.clock.now():
                raise SimulationError(f"{trace.where(0)}: arrival {trace.arrival[0]:g} is before "
                                      f"the simulation's time {self.clock.now():g}")
            if not self._replaying:
                self._logged("submit_trace", offset, {"source": trace.source,
                                                      "lines": trace.lines,
                                                      "templates": trace.templates},
                             trace_blob(trace))
            self.arrivals.add(trace, offset)
            return len(trace)
        args = Arguments("Simulation.submit")
        if isinstance(pods, (dict, PodRecord)):
            pods = [pods]
        pods = args.sequence("pods", pods, items="Pod dicts or PodRecords (or a trace: an "
                             "Arrow table or read_trace's Trace)", limit=MAX_LISTED_PODS)
        t = self._when(at, "submit")
        duration = args.number("duration", duration, 0.0, MAX_SECONDS, optional=True,
                               unit="seconds")
        recs = [pod_from(p) for p in pods]
        seen: dict[str, int] = {}
        for i, r in enumerate(recs):    # known now: refused now, not when they arrive
            if r.key in seen:
                raise args.error(f"pods[{i}]", f"Pod {r.key} is given twice (also "
                                 f"pods[{seen[r.key]}])")
            seen[r.key] = i
        self._logged("submit", t, {"pods": [r.obj for r in recs], "duration": duration})
        self._push(t, PRIO_ARRIVE, "pods", (recs, duration))
        return len(recs)

    def delete(self, pod_key: str, at=None) -> None:
        """Delete a pod (``namespace/name``) at ``at``, bound or pending.
        A pod that is neither in the simulation nor due to arrive before
        ``at`` is refused now (NotFound); one gone by then (departed,
        deleted) stops the run at ``at`` with the same error."""
        Arguments("Simulation.delete").text("pod_key", pod_key)
        t = self._when(at, "delete")
        key = _pod_key(pod_key)
        if not self._pod_by(key, t):
            raise pod_not_found(key, t)
        self._logged("delete", t, key)
        self._push(t, PRIO_LEAVE, "delete", key)

    def add_node(self, node: dict, at=None, *, slices=None) -> None:
        """Add a Node (a dict, validated now) at ``at``; a node of that name
        in the cluster, not deleted before ``at``, is AlreadyExists.
        ``slices``: ResourceSlice dicts local to the node, published as it
        joins (its DRA devices)."""
        args = Arguments("Simulation.add_node")
        args.mapping("node", node, what="a Node dict")
        node = copy.deepcopy(node)      # applied at ``at``: the caller may change its dict
        t = self._when(at, "add_node")
        name = parse_node(node).name
        if slices is not None:
            slices = checked_slices(args, slices, name)
        if name in self.cluster.state.node_rows and not any(
                kind == "delete_node" and when <= t and payload == name
                for when, kind, payload in self.agenda):
            raise SimulationError(f"Node {name}: already exists (AlreadyExists) in the "
                                  f"cluster at {t:g}s")
        if slices:
            self._logged("add_node_slices", t, {"node": node, "slices": slices})
            # first in the agenda at that time: the devices are there when the node joins
            self._push(t, PRIO_NODE, "add_slices", slices)
        else:
            self._logged("add_node", t, node)
        self._push(t, PRIO_NODE, "add_node", node)

    def delete_node(self, name: str, at=None) -> None:
        """Delete a node at ``at``; its pods are deleted with it (Deleted)."""
        self._node_call("delete_node", name, at)

    def cordon(self, name: str, at=None) -> None:
        """Mark a node unschedulable at ``at`` (``spec.unschedulable`` and the
        ``node.kubernetes.io/unschedulable`` taint, as Kubernetes keeps them)."""
        self._node_call("cordon", name, at)

    def uncordon(self, name: str, at=None) -> None:
        """Make a node schedulable again at ``at`` (both the field and the taint cleared)."""
        self._node_call("uncordon", name, at)

    def drain(self, name: str, at=None) -> None:
        """Cordon a node and evict its pods (Evicted; they are not
        recreated), except what ``kubectl drain`` leaves: DaemonSet and
        static (mirror) pods (``objects.node_lifecycle.drain_exemption``)."""
        self._node_call("drain", name, at)

    def _node_call(self, call: str, name, at) -> None:
        Arguments(f"Simulation.{call}").text("name", name)
        t = self._when(at, call)
        if not self._node_by(name, t):
            raise SimulationError(f"Node {name}: not found (NotFound): no such node in the "
                                  f"cluster at {t:g}s")
        self._logged(call, t, name)
        self._push(t, PRIO_NODE, call, name)

    def _node_by(self, name: str, t: float) -> bool:
        """Whether node ``name`` is in the cluster now or added by ``t`` (a
        later deletion is caught when the call is applied)."""
        if name in self.cluster.state.node_rows:
            return True
        return any(kind == "add_node" and when <= t
                   and (payload.get("metadata") or {}).get("name") == name
                   for when, kind, payload in self.agenda)

    def _pod_by(self, key: str, t: float) -> bool:
        """Whether pod ``key`` is in the simulation now or arrives before
        ``t`` (arrivals at ``t`` come after deletions at ``t``)."""
        sched = self.scheduler
        if key in self.cluster.state.pods or key in sched.queue or key in sched.waiting:
            return True
        for when, kind, payload in self.agenda:
            if kind == "pods" and when < t and any(r.key == key for r in payload[0]):
                return True
        return self.arrivals.arrives_before(key, t)

    def scenario(self, scenario) -> int:
        """Schedule the steps of a scenario (a ``Scenario``, a dict or a
        YAML path; see ``scenario.py``).  Node names are checked against the
        cluster and the scenario's own node steps in time order, and so are
        the pods a step deletes (the cluster's, the traces' and the
        scenario's own: an unknown one is NotFound).  Nothing is scheduled
        when a step is refused.  Returns the number of steps."""
        sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        check_steps(sc, self.cluster.state.node_rows, self.clock.now(), self._pod_by)
        for st in sc.steps:
            if st.action in ("create", "addNodes"):
                if st.kind == "Pod":
                    self.submit(st.objects, at=st.at, duration=st.duration)
                else:
                    for i, o in enumerate(st.objects):
                        self.add_node(o, at=st.at,
                                      slices=st.slices[i] if st.slices else None)
            elif st.action in ("delete", "removeNodes"):
                for name in st.names:
                    if st.kind == "Pod":
                        self.delete(name, at=st.at)
                    else:
                        self.delete_node(name, at=st.at)
            else:
                for name in st.names:
                    getattr(self, st.action)(name, at=st.at)
        return len(sc.steps)

    # ------------------------------------------------------------ events
    def on(self, event: str, callback: Callable) -> Callable:
        """Call ``callback(dict)`` on each ``event`` (one of ``EVENTS``, or
        "*"); returns a function that unsubscribes.  Each dict has event,
        pod, node, message, time (and the Scheduler's extras)."""
        args = Arguments("Simulation.on")
        if not isinstance(event, str) or event not in EVENTS and event != "*":
            raise args.error("event", f"unknown event {shown(event)}; known: "
                             f"{', '.join(EVENTS)}, *")
        args.callback("callback", callback)
        self.listeners.hear(self.scheduler)
        return self.listeners.subscribe(event, callback)

    def _on_scheduler_event(self, e: dict) -> None:
        ev = e["event"]
        key = e["pod"]
        if ev == "Bound":
            now = self.clock.now()
            t0 = self._pending.pop(key, None)
            if t0 is not None:
                self.series.latencies.append(now - t0)
            self._window["scheduled"] += 1
            d = self._durations.pop(key, None)
            if d is not None:
                self._push(now + d, PRIO_LEAVE, "depart", (key, self._lifetimes.of(key)))
        elif ev == "FailedScheduling":
            self._window["failed_attempts"] += 1
        elif ev == "Preempted":
            self._window["preemptions"] += 1
            self._pending.pop(key, None)
            self._durations.pop(key, None)
            self.scheduler.outcomes.pop(key, None)

    # -------------------------------------------------------------- loop
    def _drive(self, horizon: float) -> None:
        """Run the scheduler until idle, its clock at most ``horizon``, or
        less when a pod it binds is due to leave sooner (``_push`` lowers
        the horizon then); the clock then stands at that horizon (when
        finite)."""
        clock = self.clock
        # A drive after no event continues the paused pass, so sample times
        # and ``step``/``run`` boundaries change nothing that happens.
        resume, self._fresh = not self._fresh, False
        clock.horizon = horizon
        self._driving = True
        try:
            self.scheduler.run_until_idle(resume=resume, collect=False)
        except _PastHorizon:
            pass
        finally:
            self._driving = False
            stop, clock.horizon = clock.horizon, math.inf
        if math.isfinite(stop) and clock.now() < stop:
            SimulatedClock.set(clock, stop)

    def step(self, until: float | None = None) -> list[dict]:
        """Run to time ``until`` (default: through the next event time) and
        return the events that happened, in order."""
        if until is not None:
            until = self._when(until, "step", "until")
        self._check_rows("step", self.agenda.next_time() if until is None else until)
        self._logged("step", until)
        self.listeners.hear(self.scheduler)
        self.listeners.collected = []
        try:
            with self._failure_logged():
                if until is None:
                    t = self.agenda.next_time()
                    if math.isfinite(t):
                        self._run(t, once=True)
                else:
                    self._run(until)
            return self.listeners.collected
        finally:
            self.listeners.collected = None

    def run(self, until: float | None = None) -> dict:
        """Run until the trace is exhausted and nothing can change any more
        (or until ``until``); returns ``summary()``."""
        if until is not None:
            until = self._when(until, "run", "until")
        self._check_rows("run", self._known_end() if until is None else until)
        self._logged("run", until)
        with self._failure_logged():
            self._run(math.inf if until is None else until)
        if until is None and self.interval is not None and (
                self.series.last_time is None or self.series.last_time < self.clock.now()):
            self.series.sample(self.clock.now(), self.cluster, self.scheduler)
        return self.summary()

    @contextmanager
    def _failure_logged(self):
        """A step or run that stops with an error is logged with it: the
        snapshot's replay expects the same error there, and goes on."""
        try:
            yield
        except TensorschedError as exc:
            if not self._replaying and self._log:
                call, at, _, blob = self._log[-1]
                self._log[-1] = (call, at, freeze({"failed": str(exc)}, call), blob)
            raise

    def _known_end(self) -> float:
        """The latest time known now to come: pending events, trace
        arrivals and departures (a run to the end samples at least to it;
        departures after durations are known at their bindings)."""
        return max([self.clock.now(), self.arrivals.last_time()]
                   + [t for t, _, _ in self.agenda])

    def _check_rows(self, function: str, end: float) -> None:
        """Refuse (before anything changes) a ``step``/``run`` that would
        sample more than ``MAX_ROWS`` rows up to ``end``."""
        check_rows(self.interval, self._next_sample, end,
                   f"Simulation.{function}: interval", self.series.rows)

    def _run(self, until: float, once: bool = False) -> None:
        """Events, samples and scheduling in time order up to ``until``
        (events at ``until`` included; ``inf``: until nothing is left to
        come and the scheduler is idle); ``once``: stop after the first
        event time."""
        agenda, arrivals, changes = self.agenda, self.arrivals, self.changes
        with few_collections():
            while True:
                nxt = min(agenda.next_time(), self._next_sample, until)
                last_row_due = self._next_sample == self.clock.now()
                if not agenda and not math.isfinite(until) and not last_row_due:
                    # nothing left to come: the scheduler's own timers only
                    # (after the row due at the last event's time, which a
                    # ``run(until=...)`` ending there takes too)
                    self._drive(math.inf)
                    if agenda:
                        continue        # it bound pods that leave later
                    break
                self._drive(nxt)
                if agenda and agenda.next_time() <= self.clock.now():
                    # events due now (or sooner than ``nxt``: a pod bound in that
                    # pass leaves first), before the scheduler runs again
                    t_ev, kind, payload = agenda.head()
                    if not once and kind == "trace" and arrivals.block(
                            payload, t_ev, agenda.later_time(), self._next_sample, until,
                            self._arrived if self.listeners.active else None):
                        self._fresh = True
                        continue
                    while agenda and agenda.next_time() == t_ev:
                        entry = agenda.pop_entry()
                        kind, payload = entry[3], entry[4]
                        self._fresh = True
                        try:
                            if kind == "trace":
                                arrivals.arrive(payload)
                            else:
                                changes.apply(kind, payload)
                        except TensorschedError:
                            # refused before it changed anything: it stays
                            # due, the run stops before it (a later run
                            # meets it again, it is not dropped)
                            agenda.put_back(entry)
                            raise
                    if once:
                        self._drive(t_ev)
                        return
                    continue
                if self._next_sample <= nxt:
                    if self.series.rows >= series_rules.MAX_ROWS:
                        # pods bound on the way leave later than anything known
                        # at the start (durations): stop, not sample for ages
                        raise SimulationError(
                            f"Simulation: interval: a time-series row every "
                            f"{self.interval:g} s reached {series_rules.MAX_ROWS:,} rows at "
                            f"{nxt:g} s; the run stopped there (a larger interval)")
                    self.series.sample(nxt, self.cluster, self.scheduler)
                    self._next_sample = nxt + self.interval
                    continue
                break                   # at ``until``

    # ------------------------------------------------------------ metrics
    def timeseries(self) -> pa.Table:
        """One row per interval: ``TIMESERIES_COLUMNS`` then the metric
        columns (see the README's Simulation section)."""
        self.series.start_ready(self.cluster)
        return self.series.table()

    def summary(self) -> dict:
        """Totals of the run so far."""
        state = self.cluster.state
        return {"time": self.clock.now(), "nodes": state.num_nodes, "running": len(state.pods),
                "pending": len(self.scheduler.queue) + len(self.scheduler.waiting),
                **self.series.counts(), "rows": self.series.rows}

    @property
    def now(self) -> float:
        return self.clock.now()

    # ------------------------------------------------------ snapshot/restore
    def digest(self) -> str:
        """sha256 of the state reached: time, bound pods and their nodes,
        pending pods, pending events."""
        return state_digest(self.clock.now(), self.cluster.state, self.scheduler.queue.infos,
                            len(self.agenda), self.summary())

    def snapshot(self) -> pa.Table:
        """The simulation as an Arrow table (see the module doc)."""
        return snapshot_table(self._init, self._log, self.clock.now(), self.digest())

    @classmethod
    def restore(cls, snapshot, cluster=None, *, metrics=None, registry=None) -> Simulation:
        """A simulation equal to the one ``snapshot`` was taken of (its calls
        replayed, its digest checked).  ``cluster``: a fresh Cluster equal
        to the original's, needed when the simulation was made from a
        Cluster; ``metrics`` and ``registry`` as given to the original."""
        args = Arguments("Simulation.restore")
        source = "snapshot"
        if isinstance(snapshot, (str, os.PathLike)):
            path = source = args.path("snapshot", snapshot, exists=True)
            try:
                snapshot = pa.ipc.open_file(path).read_all()
            except (OSError, pa.ArrowException) as exc:
                raise args.error("snapshot", f"{path}: not an Arrow IPC file ({exc})") from None
        args.instance("snapshot", snapshot, pa.Table,
                      "a snapshot (the pyarrow.Table of snapshot()) or the path of one")
        args.instance("cluster", cluster, Cluster, "a Cluster or None", optional=True)
        meta, objects, calls = read_snapshot(snapshot, source)
        init = meta["init"]
        if objects is None:
            if cluster is None:
                raise SimulationError("the snapshot's simulation was made from a Cluster: "
                                      "pass cluster= (a fresh, equal one)")
            source = cluster
        else:
            source = objects
        sim = cls(source, init["config"] if objects is not None else None, init["backend"],
                  init["seed"], interval=init["interval"], metrics=metrics, registry=registry,
                  feature_gates=init.get("feature_gates") if objects is not None else None,
                  **init["options"])
        for call, at, arg, blob in calls:
            sim._log.append((call, at, arg, blob))
            sim._replaying = True
            try:
                replay_call(sim, call, at, arg, blob)
            finally:
                sim._replaying = False
        if sim.digest() != meta["digest"]:
            raise SimulationError("restored simulation differs from the snapshot (digest "
                                  "mismatch): the cluster, registry or code changed")
        return sim


def _pod_key(key) -> str:
    """A pod key ``namespace/name`` (a bare name: namespace ``default``)."""
    if not isinstance(key, str) or not key or key.startswith("/") or key.endswith("/") \
            or key.count("/") > 1:
        raise SimulationError(f"a pod key is 'namespace/name' (or a name in namespace "
                              f"default), got {key!r}")
    return key if "/" in key else f"default/{key}"


def _read_config(path) -> dict:
    """A configuration file as a dict (validated by ``build_cluster``
    through its path first, so errors name the file)."""
    docs = [d for _, d in parse_yaml_documents(read_text(os.fspath(path))) if d is not None]
    return docs[0] if docs else None
