"""Trace arrivals: the traces a simulation was given, read row by row as
the clock reaches them (``Trace``: pod records exist only for rows that
arrived, ``CHUNK`` rows made at a time), and arrival blocks: trace pods that
arrive one at a time, ``min_block`` or more of them before the next other
event, sample or departure, go to the scheduler as one block
(``Scheduler.schedule_arrivals``, when the profile has a block form and the
scheduler is idle): the same outcomes, events and times as one arrival
after another, counted in bulk."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .agenda import PRIO_ARRIVE, PRIO_LEAVE
from .lifetimes import Lifetimes
from .trace import Trace

CHUNK = 4096                   # trace rows made into pod records at a time
BLOCK_ROWS = 16384             # trace arrivals offered to the scheduler as one block, at most
FIRST_BLOCK_ROWS = 64          # ... at first and after a block the scheduler refused
MIN_BLOCK = 8                  # fewer arrivals go one at a time (a block's setup costs more)


class TraceArrivals:
    """The traces of one simulation and where each has got to.

    What it feeds: ``push(t, prio, kind, payload)`` schedules an event on
    the ``agenda`` (whose head, the trace arrival, a block takes) (a
    trace's next arrival: kind "trace" with the trace's index; a departure:
    "depart" with the pod key and the serial ``lifetimes`` gives the pod);
    ``add_pods(records, duration)`` makes pods arrive now, one at a time;
    ``pending``: pod key -> arrival time of the pods waiting to bind;
    ``durations``: pod key -> seconds it stays once bound.  For blocks:
    the ``cluster``, its ``scheduler`` (whose ``scheduler_event`` handler
    the block's events bypass), the ``series`` (counted in bulk),
    ``arrived(key)`` (the Arrived event of one pod, or None when nobody
    listens) and ``min_block``."""

    def __init__(self, *, agenda, push: Callable, add_pods: Callable, pending: dict, durations: dict,
                 cluster, scheduler, scheduler_event: Callable, series, clock,
                 min_block: int = MIN_BLOCK, lifetimes: Lifetimes | None = None) -> None:
        self._agenda = agenda
        self._push = push
        self._add_pods = add_pods
        self._pending = pending
        self._durations = durations
        self._cluster = cluster
        self._scheduler = scheduler
        self._scheduler_event = scheduler_event
        self._series = series
        self._clock = clock
        self.min_block = min_block
        self.lifetimes = lifetimes if lifetimes is not None else Lifetimes()
        self._traces: list[Trace | None] = []     # None once every row arrived
        self._cursor: list[int] = []
        self._offset: list[float] = []
        self._buffer: dict[int, tuple] = {}          # trace -> (start, stop, records)
        self._keys: dict[int, dict] = {}             # trace -> {pod key: row}, when asked
        self._block_rows = FIRST_BLOCK_ROWS

    def add(self, trace: Trace, offset: float) -> None:
        """Feed ``trace``, its arrival times shifted by ``offset`` seconds."""
        self._traces.append(trace)
        self._cursor.append(0)
        self._offset.append(offset)
        i = len(self._traces) - 1
        self._push(trace.arrival[0] + offset, PRIO_ARRIVE, "trace", i)

    def last_time(self) -> float:
        """The latest arrival or absolute departure (seconds) of the traces
        still arriving; -inf when none (durations counted from a binding
        are unknown until it)."""
        last = -math.inf
        for trace, off in zip(self._traces, self._offset):
            if trace is None:
                continue
            last = max(last, float(trace.arrival[-1]) + off)
            dep = trace.departure
            if dep.size and np.isfinite(dep).any():
                last = max(last, float(np.nanmax(dep)) + off)
        return last

    def arrives_before(self, key: str, t: float) -> bool:
        """Whether a row of a trace, not arrived yet, is pod ``key`` and
        arrives before ``t``."""
        for i, trace in enumerate(self._traces):
            if trace is None:
                continue
            keys = self._keys.get(i)
            if keys is None:
                keys = self._keys[i] = _trace_keys(trace)
            row = keys.get(key)
            if row is not None and row >= self._cursor[i] \
                    and trace.arrival[row] + self._offset[i] < t:
                return True
        return False

    def arrive(self, i: int) -> None:
        """The rows of trace ``i`` due now arrive (one event time)."""
        trace, off = self._traces[i], self._offset[i]
        start = self._cursor[i]
        arr = trace.arrival
        t = arr[start]
        nxt = start + 1
        # arrival times are non-decreasing: one row at ``t`` needs no search
        stop = nxt if nxt >= len(arr) or arr[nxt] > t else int(
            np.searchsorted(arr, t, side="right"))
        recs = self.records(i, start, stop)
        dep, dur = trace.departure, trace.duration
        # the pods first: a departure carries the serial of the pod that
        # arrived (an arrival refused adds neither)
        self._add_pods(recs, None)
        of = self.lifetimes.of
        if stop == nxt:
            # one row (the usual case): scalar NaN tests (NaN != NaN)
            d = dep[start]
            if d == d:
                key = recs[0].key
                self._push(d + off, PRIO_LEAVE, "depart", (key, of(key)))
            d = dur[start]
            timed = (0,) if d == d else ()
        else:
            # rows without a departure / duration (NaN) skipped at once
            for r in np.flatnonzero(~np.isnan(dep[start:stop])).tolist():
                key = recs[r].key
                self._push(dep[start + r] + off, PRIO_LEAVE, "depart", (key, of(key)))
            timed = np.flatnonzero(~np.isnan(dur[start:stop])).tolist()
        if timed:
            now = self._clock.now()
            for r in timed:
                rec, d = recs[r], dur[start + r]
                if rec.key in self._pending:
                    self._durations[rec.key] = float(d)
                elif rec.key in self._cluster.state.pods:
                    self._push(now + d, PRIO_LEAVE, "depart", (rec.key, of(rec.key)))
        self._cursor[i] = stop
        if stop < len(trace):
            self._push(arr[stop] + off, PRIO_ARRIVE, "trace", i)
        else:
            # the trace is done: its columns can go
            self._traces[i] = None
            self._keys.pop(i, None)

    def block(self, i: int, head: float, other: float, next_sample: float, until: float,
              arrived: Callable | None) -> bool:
        """The arrival of trace ``i`` due at ``head`` and the ones after it
        placed as one block when nothing else happens between them:
        arrivals one at a time (no two at one time), before ``other`` (the
        next other event), ``next_sample`` and ``until``, and before any of
        them is due to leave.  False when the scheduler took none (the
        arrival is then applied as usual)."""
        sched = self._scheduler
        if not sched.batch:
            return False
        trace, off = self._traces[i], self._offset[i]
        start = self._cursor[i]
        min_block = self.min_block
        last = start + min_block - 1            # the usual answer, at once: too few
        if last >= len(trace):
            return False
        t_last = trace.arrival[last] + off
        if t_last >= other or t_last > next_sample or t_last > until:
            return False
        # rows arriving past the next other event, sample or ``until`` are
        # not looked at (one row beyond, to test shared arrival times)
        bound = min(other, next_sample, until) - off
        stop = min(len(trace), start + self._block_rows,
                   int(trace.arrival.searchsorted(bound, side="right")) + 1)
        if stop - start < min_block or not sched.block_ready(
                self.records(i, start, start + 1)[0], head):
            return False
        times = trace.arrival[start:stop + 1] + off
        # rows sharing an arrival time are scheduled in queue order, not
        # one by one: the block ends before them
        ok = times[:stop - start] < np.append(times[1:], math.inf)[:stop - start]
        t = times[:stop - start]
        ok &= (t < other) & (t <= next_sample) & (t <= until)
        dep = trace.departure[start:stop] + off
        leave = np.where(np.isnan(dep), t + trace.duration[start:stop], dep)
        leave = np.where(np.isnan(leave), math.inf, leave)
        due = np.minimum.accumulate(np.concatenate(([math.inf], leave[:-1])))
        ok &= t < due
        bad = np.flatnonzero(~ok)
        count = int(bad[0]) if bad.shape[0] else stop - start
        if count < min_block:
            return False
        recs = self.records(i, start, start + count)
        keys = [r.key for r in recs]
        if len(set(keys)) < count:
            seen: set = set()
            for j, k in enumerate(keys):
                if k in seen:
                    count = j
                    break
                seen.add(k)
            recs = recs[:count]
        recs = [self._cluster.resolve(r) for r in recs]

        def arrived_event(j: int) -> None:
            arrived(recs[j].key)

        # the block's outcomes are counted here in bulk, not per event
        with sched.events.muted(self._scheduler_event):
            rows = sched.schedule_arrivals(recs, t[:count],
                                           arrived_event if arrived is not None else None)
        done = rows.shape[0]
        # offer more next time while whole blocks go through, few after a
        # refusal (gathering the arrivals costs as much as their number)
        if done == count:
            self._block_rows = min(4 * self._block_rows, BLOCK_ROWS)
        elif done == 0:
            self._block_rows = FIRST_BLOCK_ROWS
        if done == 0:
            return False
        self._agenda.pop()                      # the head: this trace's arrival
        self._count_block(recs, rows, t, dep, trace.duration[start:start + done])
        nxt = start + done
        self._cursor[i] = nxt
        if nxt < len(trace):
            self._push(trace.arrival[nxt] + off, PRIO_ARRIVE, "trace", i)
        else:
            self._traces[i] = None
        return True

    def _count_block(self, recs: list, rows: np.ndarray, t: np.ndarray, dep: np.ndarray,
                     dur: np.ndarray) -> None:
        """A block's ``rows`` (node row per pod, -1 failed) into the series,
        the pending pods and the departures, as one arrival at a time would."""
        done = rows.shape[0]
        placed = int((rows >= 0).sum())
        win = self._series.window
        win["arrived"] += done
        win["scheduled"] += placed
        win["failed_attempts"] += done - placed
        self._series.latencies.extend([0.0] * placed)        # bound at their arrival
        pending = self._pending
        lifetimes = self.lifetimes
        lifetimes.arrived_all(r.key for r in recs[:done])
        for j in np.flatnonzero(rows < 0).tolist():
            pending[recs[j].key] = float(t[j])
        timed = np.flatnonzero(~np.isnan(dep[:done]) | ~np.isnan(dur)).tolist()
        state = self._cluster.state
        for j in timed:             # in arrival order, as one arrival at a time pushes them
            key = recs[j].key
            if dep[j] == dep[j]:
                self._push(float(dep[j]), PRIO_LEAVE, "depart", (key, lifetimes.of(key)))
            d = float(dur[j])
            if d == d:
                if key in pending:                  # pending: leaves after it binds
                    self._durations[key] = d
                elif key in state.pods:             # bound at its arrival
                    self._push(float(t[j]) + d, PRIO_LEAVE, "depart",
                               (key, lifetimes.of(key)))

    def records(self, i: int, start: int, stop: int) -> list:
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


def _trace_keys(trace: Trace) -> dict[str, int]:
    """``namespace/name`` -> row of every row of a trace."""
    table = trace.table
    names = table.column("name").to_pylist()
    if "namespace" in table.column_names:
        spaces = table.column("namespace").to_pylist()
    else:
        spaces = [None] * len(names)
    return {f"{ns or 'default'}/{n}": r for r, (ns, n) in enumerate(zip(spaces, names))}
