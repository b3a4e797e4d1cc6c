"""``experiments.comparison``: per metric and trace the mean and sample
standard deviation of each configuration over the seeds, in the table's
order; the text form; bad metrics refused."""

from __future__ import annotations

import statistics

import pyarrow as pa
import pytest

from tensorsched.experiments.comparison import comparison, format_comparison
from tensorsched.experiments.results import SIMULATE_SCHEMA, SweepError

RESULTS = pa.table({
    "trace": ["t1", "t1", "t1", "t1", "t2", "t2"],
    "config": ["fast", "fast", "slow", "slow", "fast", "slow"],
    "seed": [0, 1, 0, 1, 0, 0],
    "scheduled": [10, 12, 7, None, 5, 6],
    "latency_p99": [1.0, 3.0, 2.0, 2.0, None, None],
})


def test_means_and_standard_deviations():
    cmp = comparison(RESULTS, ["scheduled", "latency_p99"])
    assert cmp.column_names == ["metric", "trace", "fast_mean", "fast_std", "slow_mean",
                                "slow_std"]
    d = cmp.to_pydict()
    assert d["metric"] == ["scheduled", "scheduled", "latency_p99", "latency_p99"]
    assert d["trace"] == ["t1", "t2", "t1", "t2"]
    assert d["fast_mean"][0] == 11.0 and d["fast_std"][0] == pytest.approx(
        statistics.stdev([10, 12]))
    assert d["slow_mean"][0] == 7.0 and d["slow_std"][0] is None       # one value
    assert d["fast_mean"][3] is None                                    # all null
    text = format_comparison(cmp, seeds=2)
    assert text.splitlines()[0] == "scheduled (mean ± std over 2 seeds)"
    assert "11.00 ± 1.41" in text and "  -" in text


def test_default_and_bad_metrics():
    # default: the headline metrics that are not null throughout
    rows = [dict(dict.fromkeys(SIMULATE_SCHEMA.names), trace="t", config="c", seed=s,
                 scheduled=s, mean_cpu_alloc_pct=50.0) for s in (0, 1)]
    full = pa.Table.from_pylist(rows, schema=SIMULATE_SCHEMA)
    assert comparison(full).column("metric").to_pylist() == ["scheduled",
                                                              "mean_cpu_alloc_pct"]
    with pytest.raises(SweepError, match="'config' is not a numeric column"):
        comparison(RESULTS, ["config"])
