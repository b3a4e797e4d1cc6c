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
``preempted``) counts as bound and as a preemption, not as departed or
running (its departure, still on the agenda, finds nothing); the others
stay running or pending; every attempt but the binding one failed; a bound
pod's latency is its binding time less its arrival (the percentiles of all
of them, as the Simulation keeps them all up to ``KEEP_LATENCIES``).
"""

from __future__ import annotations

import math

import numpy as np

from tensorsched.framework.simulation.series import percentile

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
    before it (at it, the agenda is empty and the run ends)."""
    times = []
    t = interval
    while t <= horizon:
        times.append(t)
        t = t + interval
    if last_event is not None:
        while t < last_event:
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


def evicted_once(res, tw, inv, grace: float) -> bool:
    """No victim of ``res`` (a ``TraceRunResult`` whose ``preempted`` [P]
    marks DefaultPreemption's victims, or None) of the trace ``tw`` (a
    ``TraceWorkload``) on the node list ``inv`` (a ``GpuInventory``, no
    pod bound at the start) can have been evicted twice, so its victims
    are the Simulation's ``preemptions`` (which counts every eviction, a
    ``Preempted`` event; the kernel marks each victim once).

    With ``grace`` (seconds) 0 a victim leaves at its eviction.  Above 0
    it stays, terminating, until its first eviction + ``grace`` (its
    leaving in the log, or its departure before), and a later preemption
    may pick it again.  That takes a pod of a higher priority than the
    victim's, pending in that window (from its arrival to its binding,
    else its departure, else the end) and fitting the victim's node when
    empty, besides the pod that evicted it first: that one waits for its
    victims (``pod_eligible_to_preempt_others``) unless another such pod
    takes its nomination.  So: at most one such pod in each victim's
    window, else False (the run may count more preemptions than victims:
    it goes per job)."""
    victims = getattr(res, "preempted", None)
    if grace <= 0 or victims is None or not np.any(victims):
        return True
    pods = tw.pods
    arrival, priority = tw.arrival, tw.priority
    gone = res.log_pod < 0
    leave = np.full(arrival.shape[0], np.inf)
    leave[-1 - res.log_pod[gone]] = res.log_t[gone]
    pending_until = np.where(res.node >= 0, res.bind,
                             np.where(np.isfinite(tw.departure), tw.departure, np.inf))
    gpus = np.where(pods.milli > 0, pods.num, 0)
    for v in np.flatnonzero(victims):
        n = int(res.node[v])
        hi = leave[v]
        lo = hi - grace if np.isfinite(hi) else -np.inf     # (never left: any time)
        higher = ((priority > priority[v]) & (arrival <= hi) & (pending_until >= lo)
                  & (pods.cpu <= inv.cpu_cap[n]) & (pods.mem <= inv.mem_cap[n])
                  & (gpus <= inv.gpu_count[n]))
        if int(higher.sum()) > 1:
            return False
    return True


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
    stayed = bound & ~gone
    scheduled = int(bound.sum())
    end = float(res.end)
    lat = (res.bind[bound] - arrival[bound]).tolist()
    row = {"sim_seconds": finite(end), "arrived": int(arrival.shape[0]),
           "scheduled": scheduled, "failed_attempts": int(res.tries.sum()) - scheduled,
           "preemptions": int(gone.sum()), "departed": int((stayed & (leaves | timed)).sum()),
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
