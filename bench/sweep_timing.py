"""What the batched-against-per-job sweep benchmarks (``sweep_local``,
``sweep_events``, ``sweep_openb_events``, ``sweep_preempt``) time and record alike: one
``run_sweep`` of the jobs on one path, and the fields comparing the two
paths."""

from __future__ import annotations

import dataclasses
import os
import time

from tensorsched.experiments import sweep as S


def timed_sweep(jobs, batch: bool, workers: int = 1) -> tuple:
    """(CPU and wall seconds of ``run_sweep`` over ``jobs`` with their
    ``batch`` set to ``batch`` and the load average before it, the table's
    rows but ``wall_seconds``)."""
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    load = os.getloadavg()
    c0, t0 = time.process_time(), time.perf_counter()
    table = S.run_sweep(jobs, workers=workers)
    return ({"cpu_seconds": round(time.process_time() - c0, 3),
             "wall_seconds": round(time.perf_counter() - t0, 3),
             "load_before": [round(x, 2) for x in load]},
            table.drop(["wall_seconds"]).to_pylist())


def comparison(batched: dict, per_run: dict, rows_b: list, rows_p: list) -> dict:
    """The record's fields comparing the batched path's ``timed_sweep``
    (``batched``, ``rows_b``) with the per-job one's: both timings, whether
    the tables are equal, the CPU ratio (per job / batched) and the pods
    each batched row scheduled."""
    return {"batched": batched, "per_run": per_run, "tables_equal": rows_b == rows_p,
            "cpu_ratio": round(per_run["cpu_seconds"] / max(batched["cpu_seconds"], 1e-9), 2),
            "scheduled": [r["scheduled"] for r in rows_b]}

