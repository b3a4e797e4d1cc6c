"""A run's sweep row from a scenario's node and pod steps played by the
batched node-local trace kernel (``kernels.batch.local_events``).  The
steps become the kernel's events in ``event_plan`` (``plan_events``; its
doc holds the rules); here: the pods a scenario creates as trace rows
(``scenario_trace``), a Pod delete whose pod was gone before it
(``missed_delete``), each class's rejecting plugin per node
(``rejector_codes``) and a run's row from its events (``row_steps``,
``event_row``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from tensorsched.framework.runtime.cluster_events import (
    NODE_ADD,
    NODE_DELETE,
    NODE_UPDATE,
    POD_DELETE,
    UNSCHEDULED_POD_ADD,
    plugin_events,
)
from tensorsched.framework.scheduler.cluster import pod_from
from tensorsched.framework.simulation.changes import pod_not_found
from tensorsched.framework.simulation.errors import SimulationError
from tensorsched.framework.simulation.series import percentile
from tensorsched.kernels.batch.local_events import (
    EV_ADD,
    EV_DELETE,
    EV_EVICT,
    EV_POD_DELETE,
    I_NODE_ADD,
    I_NODE_DELETE,
    I_NODE_UPDATE,
    I_POD_DELETE,
    REJ_FIRST,
    WHY_DELETED,
    WHY_EVICTED,
)

from .event_plan import NodeEvents, refuse
from .sweep_batch import _at, finite, sample_times, time_mean

_BITS = ((POD_DELETE, I_POD_DELETE), (NODE_ADD, I_NODE_ADD), (NODE_UPDATE, I_NODE_UPDATE),
         (NODE_DELETE, I_NODE_DELETE))


def missed_delete(plan: NodeEvents, keys: list, run, bound_rows: dict | None = None
                  ) -> SimulationError | None:
    """The error a run's Simulation stops with at a scenario's Pod delete
    whose pod was gone before it, the first in the Simulation's order
    (``plan``'s events): ``SimulationError`` NotFound
    (``changes.pod_not_found``; a note says how the pod left), else None.
    ``keys`` the queued pods' keys (the run's rows); ``run`` its
    ``why`` (per queued pod, then per bound pod of the manifests where it
    preempts), ``log_t`` / ``log_pod`` and ``victim`` (None: no
    preemption); ``bound_rows`` a manifests' bound pod's key -> its row
    in ``victim`` (where it preempts).

    Read from the run: a delete that finds its pod marks it
    ``WHY_DELETED`` (a bound one leaves at the delete's time; a pending
    one leaves no log row), and nothing takes it after; a pod gone before
    keeps how it left: a victim, ``WHY_EVICTED``, 0 (its duration over),
    or ``WHY_DELETED`` with its node, logged before the delete's time (a
    node deleted at that time comes after the delete).  A bound pod of
    the manifests is there unless preempted (``plan_events`` refuses a
    delete after its node left)."""
    why, victim = run.why, run.victim
    left_at: dict = {}          # a queued pod -> when it left (it leaves once)
    for t, k in zip(np.asarray(run.log_t).tolist(), np.asarray(run.log_pod).tolist()):
        if k < 0:
            left_at.setdefault(-1 - k, t)
    for e, kind in enumerate(plan.kind):
        if kind != EV_POD_DELETE:
            continue
        t, j = float(plan.t[e]), int(plan.bound[e])
        how = None
        if j < 0:
            key = plan.bound_deleted[e]
            if victim is not None and bound_rows is not None and victim[bound_rows[key]]:
                how = "was preempted"
        else:
            key = keys[j]
            if victim is not None and victim[j]:
                how = "was preempted"
            elif why[j] == WHY_EVICTED:
                how = "was evicted (a drain)"
            elif why[j] == 0:
                how = "left (its duration over)"
            elif left_at.get(j, t) < t:
                how = "was deleted with its node"
        if how is not None:
            err = pod_not_found(key, t)
            err.add_note(f"the pod {how} before its delete")
            return err
    return None


class ScenarioTrace:
    """A trace with a scenario's created pods among its rows, what
    ``sweep_local.trace_setup`` reads of a trace: ``len``, ``arrival`` /
    ``departure`` / ``duration`` [P] seconds (NaN: none) and
    ``records(start, stop)``.  Rows in arrival order, at one time the
    created pods first (in the scenario's order: its ``pods`` events are
    on the agenda before the trace's), then the trace's rows; a created
    pod arrives at its step's time and leaves its step's ``duration``
    after its binding.  ``source[r]``: row r's trace row, or -1 - k for the
    k-th created pod."""

    def __init__(self, trace, scenario):
        self.trace = trace
        self.created = [(st.at, o, st.duration) for st in scenario.steps
                        if st.kind == "Pod" and st.action == "create" for o in st.objects]
        n = len(trace)
        arr = np.asarray(trace.arrival, np.float64)
        at = np.asarray([c[0] for c in self.created], np.float64)
        # created first at a time: the sort's second key
        order = np.lexsort((np.concatenate([np.ones(n), np.zeros(at.shape[0])]),
                            np.concatenate([arr, at])))
        self.source = np.where(order < n, order, -1 - (order - n)).astype(np.int64)
        self.arrival = np.concatenate([arr, at])[order]
        self.departure = np.concatenate([np.asarray(trace.departure, np.float64),
                                         np.full(at.shape[0], np.nan)])[order]
        dur = [np.nan if c[2] is None else float(c[2]) for c in self.created]
        self.duration = np.concatenate([np.asarray(trace.duration, np.float64),
                                        np.asarray(dur, np.float64)])[order]
        self._records = None

    def __len__(self) -> int:
        return self.arrival.shape[0]

    def records(self, start: int, stop: int) -> list:
        if self._records is None:
            rows = list(self.trace.records(0, len(self.trace)))
            made = [pod_from(copy.deepcopy(c[1])) for c in self.created]
            self._records = [rows[r] if r >= 0 else made[-1 - r] for r in self.source.tolist()]
        return self._records[start:stop]


def scenario_trace(trace, scenario):
    """``trace`` with the pods ``scenario`` creates among its rows
    (``ScenarioTrace``), or ``trace`` itself when it creates none."""
    if scenario is None or not any(st.kind == "Pod" and st.action == "create"
                                   for st in scenario.steps):
        return trace
    return ScenarioTrace(trace, scenario)


def rejector_codes(prober) -> tuple[np.ndarray, int]:
    """Each class's rejector code per universe row of ``prober`` (the
    interest bits of its static status's plugin, ``REJ_FIRST`` when that
    filter runs before NodeResourcesFit; 0 where the static filters pass)
    and NodeResourcesFit's interest bits; refused where a rejecting plugin
    listens to a pending pod's arrival (the kernel's queue does not move
    the pool on arrivals)."""
    fw = prober.fw
    if fw is None:          # no pod to schedule: no failure either
        return np.zeros(prober.base["static_bits"].shape, np.int64), 0
    plugins = fw.plugins

    def bits_of(name: str) -> int:
        events = plugin_events(plugins.get(name))
        if UNSCHEDULED_POD_ADD in events:
            raise refuse(name or "filter", "it listens to pending pods' arrivals")
        return sum(b for ev, b in _BITS if ev in events)

    keys = prober.keys
    codes = np.array([bits_of(st.plugin) | (REJ_FIRST if first else 0)
                      for st, first in zip(keys.statuses, keys.key_first.tolist())] + [0],
                     np.int64)
    # s_key -1 (the static filters pass) reads the trailing 0
    return codes[keys.s_key], bits_of("NodeResourcesFit")


@dataclass
class RowSteps:
    """What a run's row needs of the node events besides the kernel's log:
    per event (time order) ``t``, the cluster's cpu / memory allocatable
    after it (millicores, bytes), the manifests' bound pods' cpu / memory
    still requested after it, and the bound pods it deleted or evicted."""

    t: np.ndarray
    cap_cpu: np.ndarray
    cap_mem: np.ndarray
    base_cpu: np.ndarray
    base_mem: np.ndarray
    deleted: int
    evicted: int


def row_steps(plan: NodeEvents, alloc: np.ndarray, ci: int, mi: int, base: tuple) -> RowSteps:
    """``RowSteps`` of ``plan``; ``alloc`` [n_all, R] the universe's
    nodes' allocatable, ``base`` the bound pods' cpu and memory at the start."""
    live = np.zeros(plan.n_all, np.bool_)
    live[:plan.n0] = True
    cap_c, cap_m, base_c, base_m = [], [], [], []
    bc, bm = int(base[0]), int(base[1])
    deleted = evicted = 0
    for kind, node, k, c, m in zip(plan.kind, plan.uid, plan.bound, plan.bound_cpu,
                                   plan.bound_mem):
        if kind == EV_ADD:
            live[node] = True
        elif kind == EV_DELETE:
            live[node] = False
        if kind in (EV_DELETE, EV_EVICT):
            bc -= c
            bm -= m
            if kind == EV_DELETE:
                deleted += k
            else:
                evicted += k
        elif kind == EV_POD_DELETE and k < 0:
            # a manifests' bound pod (the kernel's pods count by ``why``)
            bc -= c
            bm -= m
            deleted += 1
        cap_c.append(int(alloc[live, ci].sum()))
        cap_m.append(int(alloc[live, mi].sum()))
        base_c.append(bc)
        base_m.append(bm)
    as_int = lambda x: np.asarray(x, np.int64)   # noqa: E731
    return RowSteps(np.asarray(plan.t, np.float64), as_int(cap_c), as_int(cap_m),
                    as_int(base_c), as_int(base_m), deleted, evicted)


def event_row(res, why: np.ndarray, trace, steps: RowSteps, caps: tuple, base: tuple,
              bound: int, interval: float, horizon: float, last_event: float) -> dict:
    """``sweep_batch.simulate_row`` for a run with node events: ``why``
    [P] how each pod left with its node, ``steps`` the events' changes,
    ``caps`` / ``base`` the cluster's allocatable and bound pods' requests
    at the start (cpu millicores, memory bytes), ``bound`` the manifests'
    bound pods."""
    arrival = np.asarray(trace.arrival, np.float64)
    leaves = np.isfinite(np.asarray(trace.departure, np.float64))
    timed = np.isfinite(np.asarray(trace.duration, np.float64))
    on = res.node >= 0
    stayed = why == 0
    scheduled = int(on.sum())
    end = float(res.end)
    lat = (res.bind[on] - arrival[on]).tolist()
    row = {"sim_seconds": finite(end), "arrived": int(arrival.shape[0]),
           "scheduled": scheduled, "failed_attempts": int(res.tries.sum()) - scheduled,
           "preemptions": 0, "departed": int((on & (leaves | timed) & stayed).sum()),
           "deleted": int((~on & leaves & stayed).sum()) + int((why == WHY_DELETED).sum())
           + steps.deleted,
           "evicted": int((why == WHY_EVICTED).sum()) + steps.evicted,
           "pending": int((~on & ~leaves & stayed).sum()),
           "running": int((on & ~leaves & ~timed & stayed).sum()) + bound - steps.deleted
           - steps.evicted,
           "latency_p50": finite(percentile(lat, 50)),
           "latency_p99": finite(percentile(lat, 99))}
    times = sample_times(interval, horizon, end, last_event)
    j = np.where(res.log_pod >= 0, res.log_pod, -1 - res.log_pod)
    sign = np.where(res.log_pod >= 0, 1, -1)
    cpu = np.asarray(trace.table.column("cpu").to_numpy(), np.int64)
    mem = np.asarray(trace.table.column("memory").to_numpy(), np.int64)
    # the trace's pods' requests, then the bound pods' and the allocatable
    # as the node events left them, at each sample time
    cpu_req = _at(res.log_t, 0, np.cumsum(sign * cpu[j]), times)
    mem_req = _at(res.log_t, 0, np.cumsum(sign * mem[j]), times)
    cpu_req = cpu_req + _at(steps.t, base[0], steps.base_cpu, times)
    mem_req = mem_req + _at(steps.t, base[1], steps.base_mem, times)
    cpu_cap = _at(steps.t, caps[0], steps.cap_cpu, times)
    mem_cap = _at(steps.t, caps[1], steps.cap_mem, times)
    series = {
        "cpu_alloc_pct": [100.0 * int(r) / int(c) if c else np.nan
                          for r, c in zip(cpu_req, cpu_cap)],
        "memory_alloc_pct": [100.0 * int(r) / int(c) if c else np.nan
                             for r, c in zip(mem_req, mem_cap)],
        "gpu_alloc_pct": [np.nan] * len(times),
        "gpu_frag_pct": [np.nan] * len(times),
    }
    for col, values in series.items():
        row[f"mean_{col}"] = time_mean(times, np.array(values, np.float64))
    return row
