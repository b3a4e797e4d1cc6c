"""What a sweep gives: one row per run of a schema per kind of job
(``SIMULATE_SCHEMA``, ``EXPERIMENT_SCHEMA``), the table of them with the
jobs in its metadata (``results_table``), the column that names a run's
configuration and the metrics a comparison shows by default, and the
error a sweep raises."""

from __future__ import annotations

import json
from dataclasses import asdict

import pyarrow as pa

from tensorsched.framework.errors import TensorschedError

KINDS = ("simulate", "experiment")

#: One row per ``simulate`` run: identifiers, the Simulation's summary
#: totals at the end, time-weighted means of the time series (each row
#: weighs the seconds of its interval; null when the cluster has no such
#: resource), and the run's wall-clock seconds.
SIMULATE_SCHEMA = pa.schema([
    ("trace", pa.string()), ("config", pa.string()), ("seed", pa.int64()),
    ("sim_seconds", pa.float64()),          # simulated time at the end
    ("arrived", pa.int64()), ("scheduled", pa.int64()), ("failed_attempts", pa.int64()),
    ("preemptions", pa.int64()), ("departed", pa.int64()), ("deleted", pa.int64()),
    ("evicted", pa.int64()), ("pending", pa.int64()), ("running", pa.int64()),
    ("latency_p50", pa.float64()), ("latency_p99", pa.float64()),   # simulated seconds
    ("mean_cpu_alloc_pct", pa.float64()), ("mean_memory_alloc_pct", pa.float64()),
    ("mean_gpu_alloc_pct", pa.float64()), ("mean_gpu_frag_pct", pa.float64()),
    ("wall_seconds", pa.float64()),
])
#: One row per ``experiment`` run: the curves' values where the arrived GPU
#: demand is 100 % and 130 % of capacity (null when the run stops before),
#: and the curves themselves (131 values, k = 0..130 % of capacity, as
#: ``replay``'s CSVs).
_CURVE = pa.list_(pa.float64())
EXPERIMENT_SCHEMA = pa.schema([
    ("trace", pa.string()), ("policy", pa.string()), ("seed", pa.int64()),
    ("tune", pa.float64()), ("total_gpus", pa.int64()), ("pods", pa.int64()),
    ("scheduled", pa.int64()),
    ("alloc_at_100", pa.float64()), ("alloc_at_130", pa.float64()),     # % of GPU capacity
    ("frag_at_100", pa.float64()), ("frag_at_130", pa.float64()),       # % of GPU capacity
    ("alloc_curve", _CURVE), ("frag_curve", _CURVE),
    ("frag_ratio_curve", _CURVE),                                       # % of idle GPU milli
    ("wall_seconds", pa.float64()),
])
SCHEMAS = {"simulate": SIMULATE_SCHEMA, "experiment": EXPERIMENT_SCHEMA}
#: The column of the config a run had, per kind.
CONFIG_COLUMN = {"simulate": "config", "experiment": "policy"}
#: Metrics of the comparison table and plot, per kind (all-null ones left out).
HEADLINE = {"simulate": ("scheduled", "mean_cpu_alloc_pct", "mean_gpu_alloc_pct",
                         "mean_gpu_frag_pct", "latency_p99"),
            "experiment": ("alloc_at_100", "alloc_at_130", "frag_at_100")}


class SweepError(TensorschedError, ValueError):
    """A sweep that cannot start, or a run that failed (named)."""


def results_table(jobs, rows) -> pa.Table:
    """The rows as a table of ``SCHEMAS[kind]``, the sweep's inputs in its
    metadata (``tensorsched.sweep``: JSON of every job's fields)."""
    kind = jobs[0].kind
    schema = SCHEMAS[kind]
    table = pa.Table.from_pylist(rows, schema=schema)
    meta = {"kind": kind, "jobs": [asdict(j) for j in jobs]}
    return table.replace_schema_metadata({"tensorsched.sweep": json.dumps(meta)})
