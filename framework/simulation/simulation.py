"""``Simulation``: a discrete-event driver over the Scheduler on its
simulated clock.

Events live in a heap of ``(time, priority, counter, kind, payload)``
(SimPy's layout): at equal times departures and deletions (priority 0) go
before node changes (1) and arrivals (2), and ties are first-in first-out
by the counter, so a run is a pure function of its inputs and seed.  At an
event time every event due is applied (pods added to the scheduling queue,
deleted, nodes added, cordoned, drained, deleted: each a cluster event that
moves the unschedulable pool exactly as the Scheduler's embedding API does),
then the Scheduler runs until idle without its clock passing the next event
time (its backoff, permit and termination timers fire on the way; a pod it
binds that is due to leave sooner moves that limit down).  Bound pods with a
departure (an absolute time, or a duration counted from the binding) leave
then and free what they took; a pod still pending at its departure is
deleted from the queue.  Sample times and ``step``/``run`` boundaries are
not events: the scheduler's run paused there resumes as if never paused,
so they change nothing that happens.

A trace is read row by row as the clock reaches it (``trace.Trace``): pod
records exist only for pods that arrived and are still alive, and nothing
is kept per departed pod, so memory follows the pods alive.  Trace pods
that arrive one at a time, MIN_BLOCK or more of them before the next other
event, sample or departure, go to the scheduler as one block
(``Scheduler.schedule_arrivals``, when the profile has a block form and
the scheduler is idle): the same outcomes, events and times as one arrival
after another, counted in bulk.

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

import hashlib
import heapq
import json
import math
import os
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from tensorsched.framework.arguments import Arguments, shown
from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.parsing.manifests import (
    load_objects,
    parse_node,
    parse_yaml_documents,
    read_text,
)
from tensorsched.framework.parsing.node_lifecycle import drain_exemption, set_unschedulable
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.runtime.gc_pacing import few_collections
from tensorsched.framework.runtime.registry import Registry
from tensorsched.framework.scheduler.cluster import (
    Cluster,
    build_cluster,
    check_cluster_inputs,
    pod_from,
)
from tensorsched.framework.scheduler.events import EVENTS as SCHEDULER_EVENTS
from tensorsched.framework.scheduler.scheduler import Scheduler

from .scenario import Scenario, ScenarioError, load_scenario
from .trace import Trace, trace_from_table

#: Events of a simulation: the Scheduler's, and the simulation's own.
SIM_EVENTS = ("Arrived", "Departed", "Deleted", "Evicted", "NodeAdded", "NodeUpdated",
              "NodeDeleted")
EVENTS = SCHEDULER_EVENTS + SIM_EVENTS
PRIO_LEAVE, PRIO_NODE, PRIO_ARRIVE = 0, 1, 2
SNAPSHOT_VERSION = 1
#: Columns every ``timeseries()`` has (metric columns follow).
TIMESERIES_COLUMNS = ("time", "nodes", "running", "pending", "arrived", "scheduled", "departed",
                      "failed_attempts", "preemptions", "cpu_alloc_pct", "memory_alloc_pct",
                      "latency_p50", "latency_p99")
_KEEP_LATENCIES = 100_000      # Scheduler latency lists are trimmed to this many entries
CHUNK = 4096                   # trace rows made into pod records at a time
BLOCK_ROWS = 16384             # trace arrivals offered to the scheduler as one block, at most
FIRST_BLOCK_ROWS = 64          # ... at first and after a block the scheduler refused
MIN_BLOCK = 8                  # fewer arrivals go one at a time (a block's setup costs more)


class SimulationError(TensorschedError, ValueError):
    """A simulation input that cannot be applied."""


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


def _pct(values: list, q: float):
    """``numpy.percentile(values, q)`` (linear interpolation) of a short
    list, without numpy's per-call overhead (one call per time-series row)."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q / 100.0
    f = math.floor(k)
    if f + 1 >= len(v):
        return float(v[-1])
    return float(v[f] + (v[f + 1] - v[f]) * (k - f))


class Simulation:
    """A cluster and its scheduler in simulated time (see the module doc).

    ``cluster``: a ``Cluster`` (``build_cluster``), a list of object dicts or
    a path of manifests; ``config`` (with objects or a path) a
    KubeSchedulerConfiguration (dict, path or None).  ``interval``: seconds
    per ``timeseries`` row (None: no rows).  ``metrics``: extra time-series
    columns, ``{name: fn(cluster) -> float}``.  ``registry``: the plugin
    registry (default: ``default_registry()``).  Other keyword arguments go
    to the ``Scheduler`` (``batch``, ``termination_grace_seconds``,
    ``pod_max_in_unschedulable_seconds``, ...).  Pending pods of the loaded
    objects arrive at time 0."""

    def __init__(self, cluster, config=None, backend: str = "numba", seed: int = 0, *,
                 interval: float | None = 60.0, metrics: dict | None = None, registry=None,
                 **scheduler_options):
        args = Arguments("Simulation")
        if isinstance(cluster, (str, os.PathLike)):
            cluster = args.path("cluster", cluster)
        elif not isinstance(cluster, Cluster):
            cluster = args.sequence("cluster", cluster, items="object dicts (or a Cluster, "
                                    "or a path of manifests)")
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
        if isinstance(cluster, Cluster):
            if config is not None:
                raise SimulationError("config goes with objects; a Cluster has its own")
            self.cluster = cluster
        else:
            objects = load_objects(cluster) if isinstance(cluster, (str, os.PathLike)) \
                else list(cluster)
            self.cluster = build_cluster(objects, config, registry)
            cfg = _read_config(config) if isinstance(config, (str, os.PathLike)) else config
            self._init["objects"] = objects
            self._init["config"] = cfg
        self._registry = registry
        self.clock = HorizonClock()
        self.scheduler = Scheduler(self.cluster, backend, seed, clock=self.clock,
                                   **scheduler_options)
        for ev in ("Bound", "FailedScheduling", "Preempted"):
            self.scheduler.subscribe(ev, self._on_scheduler_event)
        self._forwarding = False        # the Scheduler's events to ours: see _forward
        self.interval = float(interval) if interval is not None else None
        self.metrics = dict(metrics or {})
        for name in self.metrics:
            if name in TIMESERIES_COLUMNS:
                raise SimulationError(f"metric {name!r} would replace a built-in column")
        self._heap: list = []
        self._driving = False
        self._fresh = True            # an event was applied since the last drive
        self._counter = 0
        self._traces: list[Trace] = []
        self._cursor: list[int] = []
        self._offset: list[float] = []
        self._buffer: dict[int, tuple] = {}          # trace -> (start, stop, records)
        self._trace_keys: dict[int, dict] = {}       # trace -> {pod key: row}, when asked
        self._arrived_at: dict[str, float] = {}      # pending pod -> arrival time
        self._duration: dict[str, float] = {}        # pod with a duration -> seconds
        self._subs: dict[str, list] = {}
        self._collect: list | None = None
        self._log: list[tuple] = []                  # (call, at, payload, blob)
        self._replaying = False
        self._next_sample = self.interval if self.interval is not None else math.inf
        self._series: dict[str, list] = {c: [] for c in TIMESERIES_COLUMNS}
        for name in self.metrics:
            self._series[name] = []
        self._win = {"arrived": 0, "scheduled": 0, "departed": 0, "failed_attempts": 0,
                     "preemptions": 0}
        self._win_lat: list[float] = []
        self.totals = dict(self._win)
        self.totals.update(deleted=0, evicted=0)
        self._lat_all: list[float] = []              # bounded sample for the summary
        self._lat_seen = 0
        self._rng = np.random.default_rng(seed)
        self._block_rows = FIRST_BLOCK_ROWS
        pending = list(self.cluster.pending)
        if pending:
            self._push(0.0, PRIO_ARRIVE, "pods", (pending, None))

    # ------------------------------------------------------------ inputs
    def _push(self, t: float, prio: int, kind: str, payload) -> None:
        self._counter += 1
        heapq.heappush(self._heap, (float(t), prio, self._counter, kind, payload))
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
        t = args.number(name, at, 0.0, unit="seconds")
        if t < now:
            # a bad time for this simulation, not a bad value
            raise SimulationError(f"Simulation.{function}: {name}: {at:g} is before the "
                                  f"simulation's time {now:g}")
        return t

    def _logged(self, call: str, at, payload=None, blob: bytes | None = None) -> None:
        if not self._replaying:
            self._log.append((call, at, payload, blob))

    def submit(self, pods, at=None, *, duration: float | None = None, templates=None) -> int:
        """Pods arrive: Pod dicts or records (all at ``at``, default now;
        with ``duration`` each leaves that long after being bound), or a
        trace (an Arrow table of the trace schema, or a ``Trace``): its rows
        arrive at their ``arrival`` (plus ``at`` when given) and leave at
        their ``departure`` / after their ``duration``.  Returns the number
        of pods submitted."""
        if isinstance(pods, (pa.Table, pa.RecordBatch, Trace)):
            trace = pods if isinstance(pods, Trace) else trace_from_table(pods, templates)
            offset = 0.0 if at is None else self._when(at, "submit")
            if trace.arrival[0] + offset < self.clock.now():
                raise SimulationError(f"{trace.where(0)}: arrival {trace.arrival[0]:g} is before "
                                      f"the simulation's time {self.clock.now():g}")
            if not self._replaying:
                self._logged("submit_trace", offset, {"source": trace.source,
                                                      "lines": trace.lines,
                                                      "templates": trace.templates},
                             _ipc(trace))
            self._traces.append(trace)
            self._cursor.append(0)
            self._offset.append(offset)
            i = len(self._traces) - 1
            self._push(trace.arrival[0] + offset, PRIO_ARRIVE, "trace", i)
            return len(trace)
        args = Arguments("Simulation.submit")
        if isinstance(pods, (dict, PodRecord)):
            pods = [pods]
        pods = args.sequence("pods", pods, items="Pod dicts or PodRecords (or a trace: an "
                             "Arrow table or read_trace's Trace)")
        t = self._when(at, "submit")
        duration = args.number("duration", duration, 0.0, optional=True,
                               unit="seconds")
        recs = [pod_from(p) for p in pods]
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
            raise _pod_not_found(key, t)
        self._logged("delete", t, key)
        self._push(t, PRIO_LEAVE, "delete", key)

    def add_node(self, node: dict, at=None) -> None:
        """Add a Node (a dict, validated now) at ``at``; a node of that name
        in the cluster, not deleted before ``at``, is AlreadyExists."""
        Arguments("Simulation.add_node").mapping("node", node, what="a Node dict")
        t = self._when(at, "add_node")
        name = parse_node(node).name
        if name in self.cluster.state.node_rows and not any(
                kind == "delete_node" and when <= t and payload == name
                for when, _, _, kind, payload in self._heap):
            raise SimulationError(f"Node {name}: already exists (AlreadyExists) in the "
                                  f"cluster at {t:g}s")
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
        static (mirror) pods (``parsing.node_lifecycle.drain_exemption``)."""
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
                   for when, _, _, kind, payload in self._heap)

    def _pod_by(self, key: str, t: float) -> bool:
        """Whether pod ``key`` is in the simulation now or arrives before
        ``t`` (arrivals at ``t`` come after deletions at ``t``)."""
        sched = self.scheduler
        if key in self.cluster.state.pods or key in sched.queue or key in sched.waiting:
            return True
        for when, _, _, kind, payload in self._heap:
            if kind == "pods" and when < t and any(r.key == key for r in payload[0]):
                return True
        for i, trace in enumerate(self._traces):
            if trace is None:
                continue
            keys = self._trace_keys.get(i)
            if keys is None:
                keys = self._trace_keys[i] = _trace_keys(trace)
            row = keys.get(key)
            if row is not None and row >= self._cursor[i] \
                    and trace.arrival[row] + self._offset[i] < t:
                return True
        return False

    def scenario(self, scenario) -> int:
        """Schedule the steps of a scenario (a ``Scenario``, a dict or a
        YAML path; see ``scenario.py``).  Node names are checked against the
        cluster and the scenario's own node steps in time order, and so are
        the pods a step deletes (the cluster's, the traces' and the
        scenario's own: an unknown one is NotFound).  Nothing is scheduled
        when a step is refused.  Returns the number of steps."""
        sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        nodes = set(self.cluster.state.node_rows)
        created: dict[str, float] = {}      # pods of earlier steps -> when they arrive
        gone: set[str] = set()              # pods deleted by earlier steps
        for st in sc.steps:
            if st.at < self.clock.now():
                raise ScenarioError(sc.source, st.field, f"at {st.at:g} is before the "
                                    f"simulation's time {self.clock.now():g}")
            if st.kind == "Pod":
                if st.action == "create":
                    for o in st.objects:
                        meta = o["metadata"]
                        key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
                        created[key] = st.at
                        gone.discard(key)
                    continue
                for key in st.names:
                    when = created.pop(key, None)
                    # arrivals at a time come after deletions at that time
                    ok = when < st.at if when is not None else \
                        key not in gone and self._pod_by(key, st.at)
                    if not ok:
                        raise ScenarioError(sc.source, st.field, f"pod {key} not found "
                                            f"(NotFound): not in the simulation before "
                                            f"{st.at:g}s")
                    gone.add(key)
            elif st.action in ("create", "addNodes"):
                for o in st.objects:
                    name = o["metadata"]["name"]
                    if name in nodes:
                        raise ScenarioError(sc.source, st.field, f"node {name!r} already exists")
                    nodes.add(name)
            elif st.kind == "Node":
                for name in st.names:
                    if name not in nodes:
                        raise ScenarioError(sc.source, st.field, f"node {name!r} is not in the "
                                            f"cluster at {st.at:g}s")
                    if st.action in ("delete", "removeNodes"):
                        nodes.discard(name)
        for st in sc.steps:
            if st.action in ("create", "addNodes"):
                if st.kind == "Pod":
                    self.submit(st.objects, at=st.at, duration=st.duration)
                else:
                    for o in st.objects:
                        self.add_node(o, at=st.at)
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
        self._forward_scheduler_events()
        subs = self._subs.setdefault(event, [])
        subs.append(callback)
        return lambda: subs.remove(callback)

    def _emit(self, e: dict) -> None:
        if self._collect is not None:
            self._collect.append(e)
        for cb in self._subs.get(e["event"], ()):
            cb(e)
        for cb in self._subs.get("*", ()):
            cb(e)

    def _sim_event(self, event: str, pod: str | None, node: str | None = None,
                   message: str = "") -> None:
        if self._collect is None and not self._subs:
            return
        self._emit({"event": event, "pod": pod, "node": node, "message": message,
                    "time": self.clock.now()})

    def _on_scheduler_event(self, e: dict) -> None:
        ev = e["event"]
        key = e["pod"]
        if ev == "Bound":
            now = self.clock.now()
            t0 = self._arrived_at.pop(key, None)
            if t0 is not None:
                self._win_lat.append(now - t0)
            self._win["scheduled"] += 1
            d = self._duration.pop(key, None)
            if d is not None:
                self._push(now + d, PRIO_LEAVE, "depart", key)
        elif ev == "FailedScheduling":
            self._win["failed_attempts"] += 1
        elif ev == "Preempted":
            self._win["preemptions"] += 1
            self._arrived_at.pop(key, None)
            self._duration.pop(key, None)
            self.scheduler.outcomes.pop(key, None)

    def _forward(self, e: dict) -> None:
        if self._collect is not None or self._subs:
            self._emit(dict(e))

    def _forward_scheduler_events(self) -> None:
        """From the first subscriber or collected step on, every Scheduler
        event is passed on (until then the Scheduler builds no event dict
        the simulation does not count)."""
        if not self._forwarding:
            self._forwarding = True
            self.scheduler.subscribe("*", self._forward)

    # -------------------------------------------------------------- apply
    def _add_pods(self, recs: list, duration) -> None:
        sched = self.scheduler
        state = self.cluster.state
        now = self.clock.now()
        emit = self._collect is not None or bool(self._subs)
        for rec in recs:
            key = rec.key
            if key in state.pods or key in sched.queue or key in sched.waiting:
                raise SimulationError(f"Pod {key}: submitted at {now:g}s while a pod of that "
                                      "name exists")
            if not rec.node_name:
                self._arrived_at[key] = now
                if duration is not None:
                    self._duration[key] = duration
            elif duration is not None:
                self._push(now + duration, PRIO_LEAVE, "depart", key)
            sched.add_pod(rec)
            if emit:
                self._sim_event("Arrived", key)
        self._win["arrived"] += len(recs)

    def _arrive_trace(self, i: int) -> None:
        trace, off = self._traces[i], self._offset[i]
        start = self._cursor[i]
        arr = trace.arrival
        t = arr[start]
        nxt = start + 1
        # arrival times are non-decreasing: one row at ``t`` needs no search
        stop = nxt if nxt >= len(arr) or arr[nxt] > t else int(
            np.searchsorted(arr, t, side="right"))
        recs = self._trace_records(i, start, stop)
        dep, dur = trace.departure, trace.duration
        if stop == nxt:
            # one row (the usual case): scalar NaN tests (NaN != NaN)
            d = dep[start]
            if d == d:
                self._push(d + off, PRIO_LEAVE, "depart", recs[0].key)
            d = dur[start]
            timed = (0,) if d == d else ()
        else:
            # rows without a departure / duration (NaN) skipped at once
            for r in np.flatnonzero(~np.isnan(dep[start:stop])).tolist():
                self._push(dep[start + r] + off, PRIO_LEAVE, "depart", recs[r].key)
            timed = np.flatnonzero(~np.isnan(dur[start:stop])).tolist()
        self._add_pods(recs, None)
        if timed:
            now = self.clock.now()
            for r in timed:
                rec, d = recs[r], dur[start + r]
                if rec.key in self._arrived_at:
                    self._duration[rec.key] = float(d)
                elif rec.key in self.cluster.state.pods:
                    self._push(now + d, PRIO_LEAVE, "depart", rec.key)
        self._cursor[i] = stop
        if stop < len(trace):
            self._push(arr[stop] + off, PRIO_ARRIVE, "trace", i)
        else:
            # the trace is done: its columns can go
            self._traces[i] = None
            self._trace_keys.pop(i, None)

    def _arrival_block(self, until: float) -> bool:
        """The trace arrival at the head of the events and the ones after it
        placed as one block (``Scheduler.schedule_arrivals``) when nothing
        else happens between them: arrivals one at a time (no two at one
        time), before the next other event, the next sample and ``until``,
        and before any of them is due to leave.  False when the scheduler
        took none (the arrival is then applied as usual)."""
        heap = self._heap
        sched = self.scheduler
        if not sched.batch:
            return False
        i = heap[0][4]
        trace, off = self._traces[i], self._offset[i]
        start = self._cursor[i]
        other = min(heap[1][0] if len(heap) > 1 else math.inf,
                    heap[2][0] if len(heap) > 2 else math.inf)
        last = start + MIN_BLOCK - 1            # the usual answer, at once: too few
        if last >= len(trace):
            return False
        t_last = trace.arrival[last] + off
        if t_last >= other or t_last > self._next_sample or t_last > until:
            return False
        # rows arriving past the next other event, sample or ``until`` are
        # not looked at (one row beyond, to test shared arrival times)
        bound = min(other, self._next_sample, until) - off
        stop = min(len(trace), start + self._block_rows,
                   int(trace.arrival.searchsorted(bound, side="right")) + 1)
        if stop - start < MIN_BLOCK or not sched.block_ready(
                self._trace_records(i, start, start + 1)[0], heap[0][0]):
            return False
        times = trace.arrival[start:stop + 1] + off
        # rows sharing an arrival time are scheduled in queue order, not
        # one by one: the block ends before them
        ok = times[:stop - start] < np.append(times[1:], math.inf)[:stop - start]
        t = times[:stop - start]
        ok &= (t < other) & (t <= self._next_sample) & (t <= until)
        dep = trace.departure[start:stop] + off
        leave = np.where(np.isnan(dep), t + trace.duration[start:stop], dep)
        leave = np.where(np.isnan(leave), math.inf, leave)
        due = np.minimum.accumulate(np.concatenate(([math.inf], leave[:-1])))
        ok &= t < due
        bad = np.flatnonzero(~ok)
        count = int(bad[0]) if bad.shape[0] else stop - start
        if count < MIN_BLOCK:
            return False
        recs = self._trace_records(i, start, start + count)
        keys = [r.key for r in recs]
        if len(set(keys)) < count:
            seen: set = set()
            for j, k in enumerate(keys):
                if k in seen:
                    count = j
                    break
                seen.add(k)
            recs = recs[:count]
        recs = [self.cluster.resolve(r) for r in recs]
        emit = self._collect is not None or bool(self._subs)

        def arrived_event(j: int) -> None:
            self._sim_event("Arrived", recs[j].key)

        # the block's outcomes are counted here in bulk, not per event
        with sched.events.muted(self._on_scheduler_event):
            rows = sched.schedule_arrivals(recs, t[:count], arrived_event if emit else None)
        done = rows.shape[0]
        # offer more next time while whole blocks go through, few after a
        # refusal (gathering the arrivals costs as much as their number)
        if done == count:
            self._block_rows = min(4 * self._block_rows, BLOCK_ROWS)
        elif done == 0:
            self._block_rows = FIRST_BLOCK_ROWS
        if done == 0:
            return False
        heapq.heappop(heap)
        self._fresh = True
        placed = int((rows >= 0).sum())
        win = self._win
        win["arrived"] += done
        win["scheduled"] += placed
        win["failed_attempts"] += done - placed
        self._win_lat.extend([0.0] * placed)        # bound at their arrival
        arrived = self._arrived_at
        for j in np.flatnonzero(rows < 0).tolist():
            arrived[recs[j].key] = float(t[j])
        dur = trace.duration[start:start + done]
        timed = np.flatnonzero(~np.isnan(dep[:done]) | ~np.isnan(dur)).tolist()
        state = self.cluster.state
        for j in timed:             # in arrival order, as one arrival at a time pushes them
            key = recs[j].key
            if dep[j] == dep[j]:
                self._push(float(dep[j]), PRIO_LEAVE, "depart", key)
            d = float(dur[j])
            if d == d:
                if key in arrived:                  # pending: leaves after it binds
                    self._duration[key] = d
                elif key in state.pods:             # bound at its arrival
                    self._push(float(t[j]) + d, PRIO_LEAVE, "depart", key)
        nxt = start + done
        self._cursor[i] = nxt
        if nxt < len(trace):
            self._push(trace.arrival[nxt] + off, PRIO_ARRIVE, "trace", i)
        else:
            self._traces[i] = None
        return True

    def _trace_records(self, i: int, start: int, stop: int) -> list:
        """Records of rows start:stop of trace ``i``, made ``CHUNK`` rows
        ahead at a time (one read of the table per chunk, not per time)."""
        b0, b1, recs = self._buffer.get(i, (0, 0, None))
        if not (b0 <= start and stop <= b1):
            trace = self._traces[i]
            b0, b1 = start, min(len(trace), max(stop, start + CHUNK))
            recs = trace.records(b0, b1)
            self._buffer[i] = (b0, b1, recs)
        out = recs[start - b0:stop - b0]
        if stop == b1:
            self._buffer.pop(i, None)
        return out

    def _remove_pod(self, key: str, event: str, message: str) -> bool:
        sched = self.scheduler
        state = self.cluster.state
        bound = key in state.pods
        known = bound or key in sched.queue or key in sched.waiting
        if not known:
            return False
        emit = self._collect is not None or bool(self._subs)
        node = state.node_name(state.pods.row_of(key)) if bound and emit else None
        sched.delete_pod(key)
        self._arrived_at.pop(key, None)
        self._duration.pop(key, None)
        sched.outcomes.pop(key, None)
        if event == "Departed" and not bound:
            event = "Deleted"
            message = "deleted before it was bound"
        if event == "Departed":
            self._win["departed"] += 1
        elif event == "Evicted":
            self.totals["evicted"] += 1
        else:
            self.totals["deleted"] += 1
        self._sim_event(event, key, node, message)
        return True

    def _node_obj(self, name: str) -> dict:
        state = self.cluster.state
        if name not in state.node_rows:
            raise SimulationError(f"Node {name}: not in the cluster at {self.clock.now():g}s")
        return state.node(name).obj

    def _set_unschedulable(self, name: str, value: bool) -> None:
        obj = set_unschedulable(self._node_obj(name), value)
        self.scheduler.update_node(obj)
        self._sim_event("NodeUpdated", None, name, "cordoned" if value else "uncordoned")

    def _apply(self, kind: str, payload) -> None:
        self._fresh = True
        if kind == "trace":
            self._arrive_trace(payload)
        elif kind == "pods":
            self._add_pods(*payload)
        elif kind == "depart":
            self._remove_pod(payload, "Departed", "left")
        elif kind == "delete":
            if not self._remove_pod(payload, "Deleted", "deleted"):
                raise _pod_not_found(payload, self.clock.now())
        elif kind == "add_node":
            name = (payload.get("metadata") or {}).get("name")
            if name in self.cluster.state.node_rows:
                raise SimulationError(f"Node {name}: added at {self.clock.now():g}s but it exists")
            self.scheduler.add_node(payload)
            self._sim_event("NodeAdded", None, name)
        elif kind == "delete_node":
            state = self.cluster.state
            self._node_obj(payload)
            row = state.node_rows[payload]
            for key in sorted(state.pods_on_node[row]):
                self._remove_pod(key, "Deleted", f"node {payload} deleted")
            self.scheduler.delete_node(payload)
            self._sim_event("NodeDeleted", None, payload)
        elif kind in ("cordon", "uncordon"):
            self._set_unschedulable(payload, kind == "cordon")
        elif kind == "drain":
            state = self.cluster.state
            self._node_obj(payload)
            if not state.node(payload).unschedulable:
                self._set_unschedulable(payload, True)
            row = state.node_rows[payload]
            for key in sorted(state.pods_on_node[row]):
                if drain_exemption(state.pods.record(key)) is None:
                    self._remove_pod(key, "Evicted", f"evicted: node {payload} drained")
        else:   # pragma: no cover - internal
            raise AssertionError(kind)

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

    def _next_time(self) -> float:
        return self._heap[0][0] if self._heap else math.inf

    def step(self, until: float | None = None) -> list[dict]:
        """Run to time ``until`` (default: through the next event time) and
        return the events that happened, in order."""
        if until is not None:
            until = self._when(until, "step", "until")
        self._logged("step", until)
        self._forward_scheduler_events()
        self._collect = []
        try:
            if until is None:
                t = self._next_time()
                if math.isfinite(t):
                    self._run(t, once=True)
            else:
                self._run(until)
            return self._collect
        finally:
            self._collect = None

    def run(self, until: float | None = None) -> dict:
        """Run until the trace is exhausted and nothing can change any more
        (or until ``until``); returns ``summary()``."""
        if until is not None:
            until = self._when(until, "run", "until")
        self._logged("run", until)
        self._run(math.inf if until is None else until)
        if until is None and self.interval is not None and (
                not self._series["time"] or self._series["time"][-1] < self.clock.now()):
            self._sample(self.clock.now())
        return self.summary()

    def _run(self, until: float, once: bool = False) -> None:
        with few_collections():
            self._run_events(until, once)

    def _run_events(self, until: float, once: bool) -> None:
        """Events, samples and scheduling in time order up to ``until``
        (events at ``until`` included; ``inf``: until nothing is left to
        come and the scheduler is idle); ``once``: stop after the first
        event time."""
        heap = self._heap
        while True:
            t_ev = heap[0][0] if heap else math.inf
            nxt = min(t_ev, self._next_sample, until)
            if not heap and not math.isfinite(until):
                # nothing left to come: the scheduler's own timers only
                self._drive(math.inf)
                if heap:
                    continue        # it bound pods that leave later
                break
            self._drive(nxt)
            if heap and heap[0][0] <= self.clock.now():
                # events due now (or sooner than ``nxt``: a pod bound in that
                # pass leaves first), before the scheduler runs again
                t_ev = heap[0][0]
                if not once and heap[0][3] == "trace" and self._arrival_block(until):
                    continue
                while heap and heap[0][0] == t_ev:
                    _t, _p, _c, kind, payload = heapq.heappop(heap)
                    self._apply(kind, payload)
                if once:
                    self._drive(t_ev)
                    return
                continue
            if self._next_sample <= nxt:
                self._sample(nxt)
                self._next_sample = nxt + self.interval
                continue
            break                   # at ``until``

    # ------------------------------------------------------------ metrics
    def _sample(self, t: float) -> None:
        state = self.cluster.state
        sched = self.scheduler
        s = self._series
        rows = state.valid_rows()
        ci, mi = state.resources.index["cpu"], state.resources.index["memory"]
        alloc, req = state.allocatable, state.requested
        # every row live: the rows are 0..n-1, a slice (no gather) reads them
        sel = slice(0, len(rows)) if len(rows) == state.n_rows else rows
        s["time"].append(float(t))
        s["nodes"].append(len(rows))
        s["running"].append(len(state.pods))
        s["pending"].append(len(sched.queue) + len(sched.waiting))
        for k, v in self._win.items():
            s[k].append(v)
            self.totals[k] += v
            self._win[k] = 0
        for col, i in (("cpu_alloc_pct", ci), ("memory_alloc_pct", mi)):
            cap = int(alloc[sel, i].sum()) if len(rows) else 0
            s[col].append(100.0 * int(req[sel, i].sum()) / cap if cap else None)
        lat = self._win_lat
        s["latency_p50"].append(_pct(lat, 50))
        s["latency_p99"].append(_pct(lat, 99))
        self._keep_latencies(lat)
        self._win_lat = []
        for name, fn in self.metrics.items():
            v = fn(self.cluster)
            s[name].append(None if v is None else float(v))
        for lst in (sched.latencies, sched.e2e_latencies, sched.run_lengths):
            if len(lst) > 2 * _KEEP_LATENCIES:
                del lst[:-_KEEP_LATENCIES]

    def _keep_latencies(self, lat: list) -> None:
        """A uniform sample (reservoir) of every latency, for the summary."""
        keep = self._lat_all
        for v in lat:
            self._lat_seen += 1
            if len(keep) < _KEEP_LATENCIES:
                keep.append(v)
            else:
                j = int(self._rng.integers(self._lat_seen))
                if j < _KEEP_LATENCIES:
                    keep[j] = v

    def timeseries(self) -> pa.Table:
        """One row per interval: ``TIMESERIES_COLUMNS`` then the metric
        columns (see the README's Simulation section)."""
        types = {"time": pa.float64(), "nodes": pa.int64(), "running": pa.int64(),
                 "pending": pa.int64()}
        cols = {}
        for name, values in self._series.items():
            t = types.get(name, pa.int64() if name in self._win else pa.float64())
            cols[name] = pa.array(values, t)
        return pa.table(cols)

    def summary(self) -> dict:
        """Totals of the run so far."""
        tot = dict(self.totals)
        for k, v in self._win.items():
            tot[k] += v
        lat = self._lat_all + self._win_lat
        state = self.cluster.state
        return {"time": self.clock.now(), "nodes": state.num_nodes, "running": len(state.pods),
                "pending": len(self.scheduler.queue) + len(self.scheduler.waiting),
                **tot, "latency_p50": _pct(lat, 50), "latency_p99": _pct(lat, 99),
                "rows": len(self._series["time"])}

    @property
    def now(self) -> float:
        return self.clock.now()

    # ------------------------------------------------------ snapshot/restore
    def digest(self) -> str:
        """sha256 of the state reached: time, bound pods and their nodes,
        pending pods, pending events."""
        h = hashlib.sha256()
        state = self.cluster.state
        h.update(repr(self.clock.now()).encode())
        for key in sorted(state.pods):
            h.update(f"{key} {state.node_name(state.pods.row_of(key))}\n".encode())
        h.update(b"|")
        for key in sorted(self.scheduler.queue.infos):
            h.update(f"{key}\n".encode())
        h.update(f"|{len(self._heap)}|{sorted(self.summary().items())!r}".encode())
        return h.hexdigest()

    def snapshot(self) -> pa.Table:
        """The simulation as an Arrow table (see the module doc)."""
        init = dict(self._init)
        if init["objects"] is None:
            init["objects_in_snapshot"] = False
        meta = {"version": SNAPSHOT_VERSION, "time": self.clock.now(), "digest": self.digest(),
                "init": {k: v for k, v in init.items() if k != "objects"}}
        calls = [("init", None, init["objects"], None)] + self._log
        table = pa.table({
            "call": pa.array([c[0] for c in calls], pa.string()),
            "at": pa.array([c[1] for c in calls], pa.float64()),
            "payload": pa.array([json.dumps(c[2]) for c in calls], pa.string()),
            "blob": pa.array([c[3] for c in calls], pa.binary()),
        })
        return table.replace_schema_metadata({"tensorsched.simulation": json.dumps(meta)})

    @classmethod
    def restore(cls, snapshot, cluster=None, *, metrics=None, registry=None) -> Simulation:
        """A simulation equal to the one ``snapshot`` was taken of (its calls
        replayed, its digest checked).  ``cluster``: a fresh Cluster equal
        to the original's, needed when the simulation was made from a
        Cluster; ``metrics`` and ``registry`` as given to the original."""
        args = Arguments("Simulation.restore")
        if isinstance(snapshot, (str, os.PathLike)):
            path = args.path("snapshot", snapshot, exists=True)
            try:
                snapshot = pa.ipc.open_file(path).read_all()
            except (OSError, pa.ArrowException) as exc:
                raise args.error("snapshot", f"{path}: not an Arrow IPC file ({exc})") from None
        args.instance("snapshot", snapshot, pa.Table,
                      "a snapshot (the pyarrow.Table of snapshot()) or the path of one")
        args.instance("cluster", cluster, Cluster, "a Cluster or None", optional=True)
        md = (snapshot.schema.metadata or {}).get(b"tensorsched.simulation")
        if md is None:
            raise SimulationError("not a simulation snapshot (no tensorsched.simulation metadata)")
        meta = json.loads(md)
        if meta.get("version") != SNAPSHOT_VERSION:
            raise SimulationError(f"snapshot version {meta.get('version')!r}; this reads "
                                  f"{SNAPSHOT_VERSION}")
        init = meta["init"]
        calls = snapshot.column("call").to_pylist()
        ats = snapshot.column("at").to_pylist()
        payloads = snapshot.column("payload").to_pylist()
        blobs = snapshot.column("blob").to_pylist()
        objects = json.loads(payloads[0])
        if objects is None:
            if cluster is None:
                raise SimulationError("the snapshot's simulation was made from a Cluster: "
                                      "pass cluster= (a fresh, equal one)")
            source = cluster
        else:
            source = objects
        sim = cls(source, init["config"] if objects is not None else None, init["backend"],
                  init["seed"], interval=init["interval"], metrics=metrics, registry=registry,
                  **init["options"])
        for call, at, payload, blob in zip(calls[1:], ats[1:], payloads[1:], blobs[1:]):
            arg = json.loads(payload)
            sim._log.append((call, at, arg, blob))
            sim._replaying = True
            try:
                sim._replay(call, at, arg, blob)
            finally:
                sim._replaying = False
        if sim.digest() != meta["digest"]:
            raise SimulationError("restored simulation differs from the snapshot (digest "
                                  "mismatch): the cluster, registry or code changed")
        return sim

    def _replay(self, call: str, at, arg, blob) -> None:
        if call == "submit_trace":
            table = pa.ipc.open_stream(blob).read_all()
            origin = table.column("__origin").to_numpy()
            table = table.drop(["__origin"])
            trace = Trace(table, arg["source"], origin, arg["lines"], arg["templates"])
            self.submit(trace, at=at if at else None)
        elif call == "submit":
            self.submit(arg["pods"], at=at, duration=arg["duration"])
        elif call in ("delete", "add_node", "delete_node", "cordon", "uncordon", "drain"):
            getattr(self, call)(arg, at=at)
        elif call == "step":
            self.step(at)
        elif call == "run":
            self.run(at)
        else:
            raise SimulationError(f"snapshot: unknown call {call!r}")


def _pod_key(key) -> str:
    """A pod key ``namespace/name`` (a bare name: namespace ``default``)."""
    if not isinstance(key, str) or not key or key.startswith("/") or key.endswith("/") \
            or key.count("/") > 1:
        raise SimulationError(f"a pod key is 'namespace/name' (or a name in namespace "
                              f"default), got {key!r}")
    return key if "/" in key else f"default/{key}"


def _pod_not_found(key: str, t: float) -> SimulationError:
    # kubectl's words: Error from server (NotFound): pods "x" not found
    return SimulationError(f"Pod {key}: not found (NotFound): no such pod pending or bound "
                           f"at {t:g}s")


def _trace_keys(trace: Trace) -> dict[str, int]:
    """``namespace/name`` -> row of every row of a trace."""
    table = trace.table
    names = table.column("name").to_pylist()
    if "namespace" in table.column_names:
        spaces = table.column("namespace").to_pylist()
    else:
        spaces = [None] * len(names)
    return {f"{ns or 'default'}/{n}": r for r, (ns, n) in enumerate(zip(spaces, names))}


def _ipc(trace: Trace) -> bytes:
    table = trace.table.append_column("__origin", pa.array(trace.origin, pa.int64()))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _read_config(path) -> dict:
    """A configuration file as a dict (validated by ``build_cluster``
    through its path first, so errors name the file)."""
    docs = [d for _, d in parse_yaml_documents(read_text(os.fspath(path))) if d is not None]
    return docs[0] if docs else None
