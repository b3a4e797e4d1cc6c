"""A simulation's time series and totals: counts over the current interval
(the window), one row per sample (the state at the end of each interval,
and the window's counts), totals over the run, and a bounded uniform sample
of every binding latency for the summary.  ``metrics={name: fn(cluster) ->
float}`` add columns (the GPU plugin set registers GPU allocation and
fragmentation this way; the framework knows nothing of GPUs)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from .errors import SimulationError

#: Columns every ``timeseries()`` has (metric columns follow).
TIMESERIES_COLUMNS = ("time", "nodes", "running", "pending", "arrived", "scheduled", "departed",
                      "failed_attempts", "preemptions", "cpu_alloc_pct", "memory_alloc_pct",
                      "latency_p50", "latency_p99")
#: Counts kept per interval (the window) and summed into the totals.
WINDOW_COUNTS = ("arrived", "scheduled", "departed", "failed_attempts", "preemptions")
KEEP_LATENCIES = 100_000      # latencies kept for the summary; Scheduler lists trimmed to it
#: Time-series rows one simulation may hold.  A run that would sample more
#: is refused before it starts: an interval far below the time it covers
#: would sample for hours (and forever where ``t + interval == t`` in
#: float64).  Two million rows, a row a minute for almost four years, take
#: about 400 MB and a minute of sampling.
MAX_ROWS = 2_000_000
_TYPES = {"time": pa.float64(), "nodes": pa.int64(), "running": pa.int64(),
          "pending": pa.int64()}


def percentile(values: list, q: float):
    """``numpy.percentile(values, q)`` (linear interpolation) of a short
    list, without numpy's per-call overhead (one call per time-series row);
    None for no values."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q / 100.0
    f = math.floor(k)
    if f + 1 >= len(v):
        return float(v[-1])
    return float(v[f] + (v[f + 1] - v[f]) * (k - f))


def rows_up_to(interval: float, first: float, end: float) -> float:
    """How many samples ``first, first + interval, ...`` fall at or before
    ``end`` (seconds), as a float (it may be astronomically large)."""
    return 0.0 if end < first else math.floor((end - first) / interval) + 1.0


def check_rows(interval: float | None, first: float, end: float, where: str,
               held: int = 0) -> None:
    """Refuse (``SimulationError`` naming ``where``, the argument or flag)
    sampling every ``interval`` seconds from ``first`` to ``end`` when that,
    with the ``held`` rows already sampled, passes ``MAX_ROWS``."""
    if interval is None or not math.isfinite(end):
        return
    rows = held + rows_up_to(interval, first, end)
    if rows > MAX_ROWS:
        raise SimulationError(
            f"{where}: a time-series row every {interval:g} s up to {end:g} s makes "
            f"{rows:.3g} rows; at most {MAX_ROWS:,} (a larger interval, or a shorter run)")


class TimeSeries:
    """Rows, window counts, totals and latencies of one simulation.

    ``window``: the counts of the current interval (``WINDOW_COUNTS``),
    which the simulation increments; ``latencies``: the binding latencies
    (seconds) of the current interval; ``totals``: the counts of the
    intervals sampled so far, plus ``deleted`` and ``evicted``.  ``seed``
    draws the latency sample."""

    def __init__(self, metrics: dict | None = None, seed: int = 0) -> None:
        self.metrics: dict = {}
        self.columns: dict[str, list] = {c: [] for c in TIMESERIES_COLUMNS}
        self.window = dict.fromkeys(WINDOW_COUNTS, 0)
        self.latencies: list[float] = []
        self.totals = dict(self.window)
        self.totals.update(deleted=0, evicted=0)
        self._kept: list[float] = []          # uniform sample of every latency
        self._seen = 0
        self._rng = np.random.default_rng(seed)
        self._later: list[tuple] = []         # (ready, metrics, before): columns to come
        self.add_metrics(metrics or {})

    def add_metrics(self, metrics: dict) -> None:
        """More metric columns, ``{name: fn(cluster) -> float or None}``
        (rows sampled before have none of them: add before the first)."""
        for name in metrics:
            if name in TIMESERIES_COLUMNS:
                raise SimulationError(f"metric {name!r} would replace a built-in column")
        self.metrics.update(metrics)
        for name in metrics:
            self.columns.setdefault(name, [])

    def add_metrics_when(self, ready, metrics: dict, before: dict) -> None:
        """Metric columns that start once ``ready(cluster)`` holds (checked
        by ``start_ready``, before every row): the rows sampled before then
        get ``before[name]``, their value while ``ready`` did not hold, so
        every column has a value in every row.  A name that is a column by
        then stays the one it is (the caller's own)."""
        self._later.append((ready, metrics, before))

    def start_ready(self, cluster) -> None:
        """Start the columns of ``add_metrics_when`` whose time has come."""
        if not self._later:
            return
        waiting = []
        for ready, metrics, before in self._later:
            if not ready(cluster):
                waiting.append((ready, metrics, before))
                continue
            new = {name: fn for name, fn in metrics.items() if name not in self.columns}
            self.add_metrics(new)
            for name in new:
                self.columns[name] = [before[name]] * self.rows
        self._later = waiting

    @property
    def rows(self) -> int:
        return len(self.columns["time"])

    @property
    def last_time(self) -> float | None:
        """Time of the last row (None before the first)."""
        times = self.columns["time"]
        return times[-1] if times else None

    def sample(self, t: float, cluster, scheduler) -> None:
        """One row at time ``t``: the state of ``cluster`` and ``scheduler``
        now, the window's counts (then a new window)."""
        self.start_ready(cluster)
        state = cluster.state
        s = self.columns
        rows = state.valid_rows()
        ci, mi = state.resources.index["cpu"], state.resources.index["memory"]
        alloc, req = state.allocatable, state.requested
        # every row live: the rows are 0..n-1, a slice (no gather) reads them
        sel = slice(0, len(rows)) if len(rows) == state.n_rows else rows
        s["time"].append(float(t))
        s["nodes"].append(len(rows))
        s["running"].append(len(state.pods))
        s["pending"].append(len(scheduler.queue) + len(scheduler.waiting))
        for k, v in self.window.items():
            s[k].append(v)
            self.totals[k] += v
            self.window[k] = 0
        for col, i in (("cpu_alloc_pct", ci), ("memory_alloc_pct", mi)):
            cap = int(alloc[sel, i].sum()) if len(rows) else 0
            s[col].append(100.0 * int(req[sel, i].sum()) / cap if cap else None)
        lat = self.latencies
        s["latency_p50"].append(percentile(lat, 50))
        s["latency_p99"].append(percentile(lat, 99))
        self._keep(lat)
        self.latencies = []
        for name, fn in self.metrics.items():
            v = fn(cluster)
            s[name].append(None if v is None else float(v))
        for lst in (scheduler.latencies, scheduler.e2e_latencies, scheduler.run_lengths):
            if len(lst) > 2 * KEEP_LATENCIES:
                del lst[:-KEEP_LATENCIES]

    def _keep(self, lat: list) -> None:
        """A uniform sample (reservoir) of every latency, for the summary."""
        keep = self._kept
        for v in lat:
            self._seen += 1
            if len(keep) < KEEP_LATENCIES:
                keep.append(v)
            else:
                j = int(self._rng.integers(self._seen))
                if j < KEEP_LATENCIES:
                    keep[j] = v

    def table(self) -> pa.Table:
        """The rows as an Arrow table: ``TIMESERIES_COLUMNS`` then the metrics."""
        cols = {}
        for name, values in self.columns.items():
            t = _TYPES.get(name, pa.int64() if name in self.window else pa.float64())
            cols[name] = pa.array(values, t)
        return pa.table(cols)

    def counts(self) -> dict:
        """Totals so far (the open window included), with the latency
        percentiles of the whole run (its sample)."""
        tot = dict(self.totals)
        for k, v in self.window.items():
            tot[k] += v
        lat = self._kept + self.latencies
        return {**tot, "latency_p50": percentile(lat, 50), "latency_p99": percentile(lat, 99)}
