"""``tensorsched.sweep``: the sweep engine's Python API, as the facade names
it (the engine is ``tensorsched.experiments.sweep``; ``tensorsched sweep``
is ``tensorsched.sweep_cli``)."""

from tensorsched.experiments.sweep import (
    BATCH_BACKENDS,
    CONFIG_COLUMN,
    EXPERIMENT_SCHEMA,
    HEADLINE,
    KINDS,
    RAY_NEEDS,
    SCHEMAS,
    SIMULATE_SCHEMA,
    Job,
    SweepError,
    comparison,
    format_comparison,
    load_inputs,
    make_jobs,
    plot_comparison,
    results_table,
    run_job,
    run_sweep,
)

__all__ = ["BATCH_BACKENDS", "CONFIG_COLUMN", "EXPERIMENT_SCHEMA", "HEADLINE", "KINDS", "RAY_NEEDS", "SCHEMAS",
           "SIMULATE_SCHEMA", "Job", "SweepError", "comparison", "format_comparison",
           "load_inputs", "make_jobs", "plot_comparison", "results_table", "run_job",
           "run_sweep"]
