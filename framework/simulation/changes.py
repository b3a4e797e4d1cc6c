"""What a simulation's events do to the cluster and its scheduler: pods
arrive (into the scheduling queue) and leave (departed, deleted, evicted),
nodes are added, cordoned, uncordoned, drained and deleted: each a cluster
event that moves the unschedulable pool exactly as the Scheduler's
embedding API does, and one of the simulation's own events for its
listeners."""

from __future__ import annotations

from collections.abc import Callable

from tensorsched.framework.parsing.node_lifecycle import drain_exemption, set_unschedulable
from tensorsched.framework.parsing.strict_fields import collect_unknown

from .agenda import PRIO_LEAVE
from .errors import SimulationError
from .lifetimes import Lifetimes
from .node_slices import drop_node_slices, load_slices


def pod_not_found(key: str, t: float) -> SimulationError:
    # kubectl's words: Error from server (NotFound): pods "x" not found
    return SimulationError(f"Pod {key}: not found (NotFound): no such pod pending or bound "
                           f"at {t:g}s")


class ClusterChanges:
    """Applies events (``apply(kind, payload)``) to ``cluster`` and
    ``scheduler`` at the ``clock``'s time.  ``pending`` (pod key -> arrival
    time) and ``durations`` (pod key -> seconds bound) follow the pods
    waiting to bind; ``series`` counts arrivals and departures;
    ``listeners`` hear the simulation's events; ``push`` schedules a
    departure, carrying the serial ``lifetimes`` gives its pod (a departure
    of a pod since replaced under its name does nothing)."""

    def __init__(self, *, cluster, scheduler, clock, pending: dict, durations: dict, series,
                 listeners, push: Callable, lifetimes: Lifetimes | None = None) -> None:
        self._cluster = cluster
        self._scheduler = scheduler
        self._clock = clock
        self._pending = pending
        self._durations = durations
        self._series = series
        self._listeners = listeners
        self._push = push
        self.lifetimes = lifetimes if lifetimes is not None else Lifetimes()

    def apply(self, kind: str, payload) -> None:
        """One event of the agenda (not a trace arrival: ``TraceArrivals``)."""
        if kind == "pods":
            self.add_pods(*payload)
        elif kind == "depart":
            key, serial = payload
            if self.lifetimes.current(key, serial):     # not a pod since replaced
                self.remove_pod(key, "Departed", "left")
        elif kind == "delete":
            if not self.remove_pod(payload, "Deleted", "deleted"):
                raise pod_not_found(payload, self._clock.now())
        elif kind == "add_slices":      # just before their node's add_node
            load_slices(self._cluster.state, payload)
        elif kind == "add_node":
            name = (payload.get("metadata") or {}).get("name")
            if name in self._cluster.state.node_rows:
                raise SimulationError(f"Node {name}: added at {self._clock.now():g}s but it "
                                      "exists")
            # its unknown fields were warned of when ``Simulation.add_node`` read it
            with collect_unknown():
                self._scheduler.add_node(payload)
            self._listeners.event("NodeAdded", None, name)
        elif kind == "delete_node":
            state = self._cluster.state
            self._node_obj(payload)
            row = state.node_rows[payload]
            for key in sorted(state.pods_on_node[row]):
                self.remove_pod(key, "Deleted", f"node {payload} deleted")
            self._scheduler.delete_node(payload)
            drop_node_slices(state, payload)
            self._listeners.event("NodeDeleted", None, payload)
        elif kind in ("cordon", "uncordon"):
            self._set_unschedulable(payload, kind == "cordon")
        elif kind == "drain":
            state = self._cluster.state
            self._node_obj(payload)
            if not state.node(payload).unschedulable:
                self._set_unschedulable(payload, True)
            row = state.node_rows[payload]
            for key in sorted(state.pods_on_node[row]):
                if drain_exemption(state.pods.record(key)) is None:
                    self.remove_pod(key, "Evicted", f"evicted: node {payload} drained")
        else:   # pragma: no cover - internal
            raise AssertionError(kind)

    def add_pods(self, recs: list, duration) -> None:
        """Pod records arrive now (into the scheduling queue, or bound with
        ``spec.nodeName``); each leaves ``duration`` seconds after binding
        (None: stays)."""
        sched = self._scheduler
        state = self._cluster.state
        now = self._clock.now()
        listeners = self._listeners
        emit = listeners.active
        seen: set = set()
        for rec in recs:        # every pod checked first: a refused arrival adds none
            key = rec.key
            if key in state.pods or key in sched.queue or key in sched.waiting or key in seen:
                raise SimulationError(f"Pod {key}: submitted at {now:g}s while a pod of that "
                                      "name exists")
            seen.add(key)
        lifetimes = self.lifetimes
        for rec in recs:
            key = rec.key
            lifetimes.arrived(key)
            if not rec.node_name:
                self._pending[key] = now
                if duration is not None:
                    self._durations[key] = duration
            elif duration is not None:
                self._push(now + duration, PRIO_LEAVE, "depart", (key, lifetimes.of(key)))
            sched.add_pod(rec)
            if emit:
                listeners.event("Arrived", key)
        self._series.window["arrived"] += len(recs)

    def remove_pod(self, key: str, event: str, message: str) -> bool:
        """Pod ``key`` leaves (``event``: Departed, Deleted or Evicted);
        False when it is neither bound nor pending."""
        sched = self._scheduler
        state = self._cluster.state
        bound = key in state.pods
        known = bound or key in sched.queue or key in sched.waiting
        if not known:
            return False
        node = state.node_name(state.pods.row_of(key)) \
            if bound and self._listeners.active else None
        sched.delete_pod(key)
        self.lifetimes.ended(key)
        self._pending.pop(key, None)
        self._durations.pop(key, None)
        sched.outcomes.pop(key, None)
        if event == "Departed" and not bound:
            event = "Deleted"
            message = "deleted before it was bound"
        if event == "Departed":
            self._series.window["departed"] += 1
        elif event == "Evicted":
            self._series.totals["evicted"] += 1
        else:
            self._series.totals["deleted"] += 1
        self._listeners.event(event, key, node, message)
        return True

    def _node_obj(self, name: str) -> dict:
        state = self._cluster.state
        if name not in state.node_rows:
            raise SimulationError(f"Node {name}: not in the cluster at {self._clock.now():g}s")
        return state.node(name).obj

    def _set_unschedulable(self, name: str, value: bool) -> None:
        obj = set_unschedulable(self._node_obj(name), value)
        self._scheduler.update_node(obj)
        self._listeners.event("NodeUpdated", None, name, "cordoned" if value else "uncordoned")
