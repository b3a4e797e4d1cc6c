"""``experiments.results``: a sweep's rows as a table of its kind's
schema, every job's fields in the metadata; rows that do not fit the
schema are refused by Arrow, not stored wrong."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from tensorsched.experiments.results import (
    EXPERIMENT_SCHEMA,
    SIMULATE_SCHEMA,
    results_table,
)
from tensorsched.experiments.sweep import Job


def _row(**kw):
    row = dict.fromkeys(SIMULATE_SCHEMA.names)
    row.update(kw)
    return row


def test_rows_and_jobs_in_the_table():
    jobs = [Job("simulate", "a.csv", 0, cluster="c.yaml"), Job("simulate", "a.csv", 1,
                                                               cluster="c.yaml")]
    table = results_table(jobs, [_row(trace="a", config="default", seed=0, scheduled=3),
                                 _row(trace="a", config="default", seed=1, scheduled=4)])
    assert table.schema.equals(SIMULATE_SCHEMA)
    assert table.column("scheduled").to_pylist() == [3, 4]
    meta = json.loads(table.schema.metadata[b"tensorsched.sweep"])
    assert meta["kind"] == "simulate" and [j["seed"] for j in meta["jobs"]] == [0, 1]
    assert meta["jobs"][0]["cluster"] == "c.yaml"


def test_the_experiment_schema_and_a_bad_row():
    jobs = [Job("experiment", "t.csv", 42, policy="FGD", nodes="n.csv")]
    row = dict.fromkeys(EXPERIMENT_SCHEMA.names)
    row.update(trace="t", policy="FGD", seed=42, alloc_curve=[1.0, 2.0])
    assert results_table(jobs, [row]).column("alloc_curve").to_pylist() == [[1.0, 2.0]]
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        results_table(jobs, [dict(row, seed="not a number")])
