"""A ``simulate`` job's row (``SIMULATE_SCHEMA``) from its run in the
batched engine (``topology.openb.batch.trace_batch``), equal to the row
``experiments.sweep`` makes from the run's ``Simulation`` (``tensorsched
simulate``) but for ``wall_seconds``.

The Simulation the row stands for: an openb node list, an openb pod CSV
(its pods arrive at ``creation_time`` and leave at ``deletion_time``), the
openb profile of a GpuShareScore policy, no scenario, no ``until``, driven
as ``simulate_run.run_to_end`` drives it (a job with a scenario of node
steps runs on the same engine with the steps as node events in its queue:
``sweep_openb_events``, whose rows divide by the live nodes' allocatable
and GPUs after each step; nodes added, tainted, added again under a
removed name, cordoned, drained, removed, none left; Pod steps; a
``--config`` of the openb profile too: ``sweep_openb_events.job_profile``).
Its time series then has a row at every ``interval`` seconds
(``interval``, ``interval + interval``, ...: the Simulation adds the
interval to the last sample time) up to the last arrival or departure
(``simulate_run.horizon``), and one more at the end (the clock when the
scheduler has nothing left to do: its last event or attempt) when that is
later; each row holds the state after everything done at or before its
time.  The totals follow from each pod's outcome: every pod arrives; a
bound pod with a departure or a duration departs, an unbound one with a
departure is deleted then (one with a duration waits); a pod
DefaultPreemption evicts (a config with it at postFilter: the engine's
``preempted``) counts as bound, each of its evictions (``evictions``) a
preemption, not as departed or running (its departure, still on the
agenda, finds nothing; with a termination grace a victim that departs
while terminating is departed: ``departs_terminating`` sends such a run
per job); the others
stay running or pending; every attempt but the binding one failed; a bound
pod's latency is its binding time less its arrival (the percentiles of all
of them, as the Simulation keeps them all up to ``KEEP_LATENCIES``).
"""

from __future__ import annotations

import math

import numpy as np

from tensorsched.framework.simulation.series import percentile
from tensorsched.kernels.batch.openb_events import EV_ADD, EV_DELETE, NodeEvents
from tensorsched.kernels.gpu import share as K
from tensorsched.topology.gpu import MILLI
from tensorsched.topology.openb.trace import tracker_typical

MIB = 1048576


def finite(v):
    """None for None and NaN (nulls in the table), else a float."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def time_mean(t: np.ndarray, v: np.ndarray):
    """Mean of a time series' values ``v`` [R] (NaN: none) at times ``t``
    [R] (seconds, increasing), each row weighing the seconds since the
    row before it (the first: since 0); None when no row has a value and
    a weight."""
    if t.shape[0] == 0:
        return None
    w = np.diff(t, prepend=0.0)
    ok = ~np.isnan(v) & (w > 0)
    if not ok.any():
        return None
    return float((v[ok] * w[ok]).sum() / w[ok].sum())


def sample_times(interval: float, horizon: float, end: float,
                 last_event: float | None = None) -> np.ndarray:
    """The time series' row times (module doc), seconds; ``last_event``
    (departures after a duration): the last event's time when later than
    ``horizon``: the Simulation, run on until nothing is left, also samples
    up to it (at it, after its events, the agenda is empty: its row is the
    last interval's, then the scheduler's own timers run to the end)."""
    times = []
    t = interval
    while t <= horizon:
        times.append(t)
        t = t + interval
    if last_event is not None:
        while t <= last_event:
            times.append(t)
            t = t + interval
    if not times or times[-1] < end:
        times.append(end)
    return np.array(times, np.float64)


def _at(log_t: np.ndarray, first, after: np.ndarray, times: np.ndarray) -> np.ndarray:
    """The value after the last change at or before each of ``times``
    (``first`` before any): ``after`` [changes] the value after each."""
    k = np.searchsorted(log_t, times, side="right")
    return np.concatenate([np.array([first], after.dtype), after])[k]


def departs_terminating(evictions, log_t, log_pod, bind, departure, duration,
                        grace: float) -> bool:
    """Whether a victim of a run under the termination ``grace`` (seconds)
    may have departed while terminating, which the run's outputs do not
    tell apart from its grace ending: ``evictions`` [P] each pod's
    evictions (a count; 0 never; a manifest's bound pods after the ``P``
    trace pods are not read), ``log_t`` / ``log_pod`` the run's change
    log (a pod j's leaving ``-1 - j``), ``bind`` [P] its binding time
    (seconds, NaN never), ``departure`` / ``duration`` [P] its trace's
    (seconds, NaN or inf none).

    Such a victim leaves at its own departure (``departure``, else ``bind
    + duration``), and the Simulation counts it ``departed``; one whose
    grace ends at that same time leaves by its termination first (the
    deadline comes before the events of its time) and its departure finds
    nothing.  Both are a leaving at the victim's departure time in the log,
    its first eviction's time not among the outputs: True where a victim
    left exactly then (the job's row comes from its Simulation); with
    ``grace`` 0 a victim leaves at its eviction, before any departure of
    its own: False."""
    p = np.asarray(bind).shape[0]
    ev = np.asarray(evictions)[:p]            # (a manifest's bound pods after: no departure)
    if grace <= 0 or p == 0 or not ev.any():
        return False
    log_pod = np.asarray(log_pod)
    gone = log_pod < 0
    left = np.full(ev.shape[0], np.nan)
    k = -1 - log_pod[gone]
    keep = k < p
    left[k[keep]] = np.asarray(log_t)[gone][keep]
    dep = np.asarray(departure, np.float64)
    dur = np.asarray(duration, np.float64)
    due = np.where(np.isfinite(dep), dep, np.asarray(bind, np.float64) + dur)
    hit = (ev > 0) & np.isfinite(due) & (left == due)
    return bool(hit.any())


def simulate_row(res, trace, cpu_cap: int, mem_cap: int, total_gpus: int, interval: float,
                 horizon: float, fragmentation: bool, base: tuple = (0, 0),
                 last_event: float | None = None) -> dict:
    """The row's values but its identifiers and ``wall_seconds``: ``res`` a
    ``TraceRunResult`` of ``trace`` (a ``Trace`` of ``read_openb_trace``;
    its ``preempted`` the victims, where it has one: ``sweep_local``'s runs
    have none, ``sweep_preempt`` counts theirs);
    ``cpu_cap`` (milli) and ``mem_cap`` (bytes) the cluster's allocatable,
    ``total_gpus`` its GPUs; ``interval`` the time series' seconds per row,
    ``horizon`` its last arrival or departure (seconds); ``fragmentation``:
    the Simulation measures it (the trace has typical pods); ``base``: the
    cpu (milli) and memory (bytes) the cluster's bound pods request at the
    start; ``last_event``: as ``sample_times`` takes it."""
    arrival = np.asarray(trace.arrival, np.float64)
    leaves = np.isfinite(np.asarray(trace.departure, np.float64))
    timed = np.isfinite(np.asarray(trace.duration, np.float64))
    bound = res.node >= 0
    # DefaultPreemption's victims: bound (and counted so), then gone; their
    # departure or duration, still on the agenda, finds nothing
    victims = getattr(res, "preempted", None)
    gone = np.zeros_like(bound) if victims is None else np.asarray(victims, bool)
    # every eviction a Preempted event (a terminating victim chosen again
    # counts again): the engine's counts where it has them
    evictions = getattr(res, "evictions", None)
    preemptions = int(gone.sum()) if evictions is None else int(np.sum(evictions))
    stayed = bound & ~gone
    scheduled = int(bound.sum())
    end = float(res.end)
    lat = (res.bind[bound] - arrival[bound]).tolist()
    row = {"sim_seconds": finite(end), "arrived": int(arrival.shape[0]),
           "scheduled": scheduled, "failed_attempts": int(res.tries.sum()) - scheduled,
           "preemptions": preemptions, "departed": int((stayed & (leaves | timed)).sum()),
           "deleted": int((~bound & leaves).sum()), "evicted": 0,
           "pending": int((~bound & ~leaves).sum()),
           "running": int((stayed & ~leaves & ~timed).sum()),
           "latency_p50": finite(percentile(lat, 50)),
           "latency_p99": finite(percentile(lat, 99))}
    times = sample_times(interval, horizon, end, last_event)
    j = np.where(res.log_pod >= 0, res.log_pod, -1 - res.log_pod)
    sign = np.where(res.log_pod >= 0, 1, -1)
    cpu = np.asarray(trace.table.column("cpu").to_numpy(), np.int64)
    mem = np.asarray(trace.table.column("memory").to_numpy(), np.int64)
    cpu_req = _at(res.log_t, base[0], base[0] + np.cumsum(sign * cpu[j]), times)
    mem_req = _at(res.log_t, base[1], base[1] + np.cumsum(sign * mem[j]), times)
    used = _at(res.log_t, 0.0, res.log_used, times)
    frag = _at(res.log_t, res.frag0, res.log_frag, times)
    gcap = total_gpus * 1000
    # the Simulation's arithmetic: Python ints over Python ints, times 100.0
    series = {
        "cpu_alloc_pct": [100.0 * int(r) / cpu_cap if cpu_cap else np.nan for r in cpu_req],
        "memory_alloc_pct": [100.0 * int(r) / mem_cap if mem_cap else np.nan for r in mem_req],
        "gpu_alloc_pct": [100.0 * int(u) / gcap if gcap else np.nan for u in used],
        "gpu_frag_pct": [100.0 * float(f) / gcap if gcap and fragmentation else np.nan
                         for f in frag],
    }
    for col, values in series.items():
        row[f"mean_{col}"] = time_mean(times, np.array(values, np.float64))
    return row


def frag_under(inv, pods, res, typical: list) -> tuple:
    """(frag0, log_frag) of a ``trace_batch`` run ``res`` on the node list
    ``inv`` (``GpuInventory``, empty at the start) with the trace's pods
    ``pods`` (``TracePods``: cpu milli, GPU milli per GPU), its
    fragmentation measured under ``typical`` (``typicalPods`` dicts) as
    the Simulation's ``GpuTracker`` measures it: per node ``node_frag`` of
    its GPUs and cpu left (0 for a node without GPUs), the cluster's the
    NumPy sum over the nodes in row order.  Replays the run's change log
    (``log_t``, ``log_pod``: pod j bound on ``node[j]``, GPUs ``gpus[j]``;
    left: ``-1 - j``): ``log_frag`` [changes] after each change.  What a
    run whose GpuShareScore scored against other typical pods (the
    kernel's table, which its own ``log_frag`` is measured under) has for
    its time series."""
    typ = tracker_typical(typical, inv)
    count = np.asarray(inv.gpu_count, np.int64)
    model = np.asarray(inv.model, np.int64)
    width = max(int(count.max()) if count.shape[0] else 0, 1)
    left = np.where(np.arange(width)[None, :] < count[:, None], MILLI, 0).astype(np.int64)
    cpu_left = np.asarray(inv.cpu_cap, np.int64).copy()
    node_frag = K.node_frag

    def frag_of(i: int) -> float:
        c = int(count[i])
        return node_frag(c, int(model[i]), left[i], int(cpu_left[i]), *typ) if c else 0.0

    nfrag = np.array([frag_of(i) for i in range(count.shape[0])], np.float64)
    frag0 = float(nfrag.sum())
    log_pod = np.asarray(res.log_pod)
    out = np.empty(log_pod.shape[0], np.float64)
    cpu, milli = np.asarray(pods.cpu, np.int64), np.asarray(pods.milli, np.int64)
    for k, x in enumerate(log_pod.tolist()):
        j, sign = (x, -1) if x >= 0 else (-1 - x, 1)
        i = int(res.node[j])
        for g in res.gpus[j]:
            left[i, g] += sign * milli[j]
        cpu_left[i] += sign * cpu[j]
        nfrag[i] = frag_of(i)
        out[k] = nfrag.sum()
    return frag0, out


def frag_under_events(ev: NodeEvents, typ: tuple, pods, node: np.ndarray, gmask: np.ndarray,
                      log_pod: np.ndarray) -> tuple:
    """(frag0, log_frag) of a node-event engine's run (``openb_events``:
    the cluster and its node events ``ev``; the run's pods ``pods``, a
    ``TracePods``: cpu milli, GPU milli per GPU; per pod ``node`` its
    local row, -1 never, ``gmask`` its GPUs, bit g = GPU g; its change log
    ``log_pod``: k bound, -1 - k left, P + e node event e, after the pods
    it freed), its fragmentation measured under the typical pods ``typ``
    (``trace.tracker_typical``'s arrays over the run's models: the
    node list's, then those added nodes bring) as the Simulation's
    ``GpuTracker`` measures it: per live row ``node_frag`` of its GPUs and
    cpu left (0 for a node without GPUs), the cluster's the NumPy sum over
    the live rows in row order.  The replay follows the rows as the
    engine does: a node added takes its row empty (a row freed by a
    removal too), a removal takes the row off the sum, a cordon changes
    nothing measured, a drain's and a removal's pods, a Pod delete's, a
    victim's eviction (or its grace's end) are leavings in the log, each
    before its node event.  ``log_frag`` [changes] after each change:
    under the engine's own table, its ``log_frag`` at each time's last
    change (what the time series read; the engine logs a drain's and a
    removal's freed pods with the value before their node event)."""
    n = int(np.shape(ev.row0)[0])
    u_count = np.asarray(ev.u_gpu_count, np.int64)
    u_model = np.asarray(ev.u_model, np.int64)
    u_cpu = np.asarray(ev.u_cpu_cap, np.int64)
    ev_kind = np.asarray(ev.ev_kind, np.int64)
    ev_row = np.asarray(ev.ev_row, np.int64)
    ev_x = np.asarray(ev.ev_x, np.int64)
    slots = np.arange(ev.gpu_slots())
    count = np.zeros(n, np.int64)
    model = np.zeros(n, np.int64)
    left = np.zeros((n, slots.shape[0]), np.int64)
    cpu_left = np.zeros(n, np.int64)
    live = np.zeros(n, bool)
    nfrag = np.zeros(n, np.float64)
    node_frag = K.node_frag

    def frag_of(i: int) -> float:
        c = int(count[i])
        return node_frag(c, int(model[i]), left[i], int(cpu_left[i]), *typ) if c else 0.0

    def put(i: int, x: int) -> None:
        """Universe node x on row i, empty."""
        count[i], model[i], cpu_left[i] = u_count[x], u_model[x], u_cpu[x]
        left[i] = np.where(slots < count[i], MILLI, 0)
        live[i] = True
        nfrag[i] = frag_of(i)

    for i, x in enumerate(np.asarray(ev.row0, np.int64).tolist()):
        if x >= 0:
            put(i, x)
    frag0 = float(nfrag[live].sum())
    cpu, milli = np.asarray(pods.cpu, np.int64), np.asarray(pods.milli, np.int64)
    p = int(np.shape(node)[0])
    gpus = [[g for g in range(slots.shape[0]) if int(m) >> g & 1] for m in np.asarray(gmask)]
    out = np.empty(np.shape(log_pod)[0], np.float64)
    for k, x in enumerate(np.asarray(log_pod).tolist()):
        if x >= p:
            e = x - p
            kind, i = int(ev_kind[e]), int(ev_row[e])
            if kind == EV_ADD:
                put(i, int(ev_x[e]))
            elif kind == EV_DELETE:
                live[i] = False
        else:
            j, sign = (x, -1) if x >= 0 else (-1 - x, 1)
            i = int(node[j])
            for g in gpus[j]:
                left[i, g] += sign * milli[j]
            cpu_left[i] += sign * cpu[j]
            nfrag[i] = frag_of(i)
        out[k] = nfrag[live].sum()
    return frag0, out
