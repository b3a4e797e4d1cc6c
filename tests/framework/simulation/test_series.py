"""``TimeSeries``: a row per sample with the window's counts (then a new
window), totals over the run, percentiles as numpy's, metric columns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.simulation.errors import SimulationError
from tensorsched.framework.simulation.series import (
    TIMESERIES_COLUMNS,
    TimeSeries,
    percentile,
)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=40), st.sampled_from([0, 50, 99, 100]))
def test_percentile_is_numpys(values, q):
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_of_nothing_is_none():
    assert percentile([], 50) is None


def test_rows_window_and_totals():
    cluster = build_cluster([node_dict("n0", cpu="4", memory="8Gi"),
                             pod_dict("a", cpu="1", memory="1Gi",
                                      spec={"nodeName": "n0"})])
    sched = Scheduler(cluster, "numpy", 0)
    s = TimeSeries({"two": lambda c: 2.0, "none": lambda c: None}, seed=0)
    s.window["arrived"] += 3
    s.window["scheduled"] += 2
    s.latencies.extend([1.0, 3.0])
    s.sample(10.0, cluster, sched)
    assert s.rows == 1 and s.last_time == 10.0
    assert s.window == dict.fromkeys(s.window, 0) and s.latencies == []
    s.window["departed"] += 1
    s.sample(20.0, cluster, sched)
    t = s.table()
    assert t.column_names == list(TIMESERIES_COLUMNS) + ["two", "none"]
    row = t.slice(0, 1).to_pylist()[0]
    assert row["arrived"] == 3 and row["scheduled"] == 2 and row["running"] == 1
    assert row["cpu_alloc_pct"] == 25.0 and row["latency_p50"] == 2.0
    assert row["two"] == 2.0 and row["none"] is None
    assert t.column("departed").to_pylist() == [0, 1]
    s.window["arrived"] += 1            # the open window counts in the totals
    counts = s.counts()
    assert counts["arrived"] == 4 and counts["departed"] == 1 and counts["deleted"] == 0
    assert counts["latency_p99"] == pytest.approx(float(np.percentile([1.0, 3.0], 99)))


def test_a_metric_may_not_replace_a_built_in_column():
    s = TimeSeries()
    with pytest.raises(SimulationError, match="'running' would replace"):
        s.add_metrics({"running": lambda c: 0.0})
    s.add_metrics({"gpu": lambda c: 1.0})
    assert "gpu" in s.columns and "gpu" in s.metrics
