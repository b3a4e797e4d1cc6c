"""Simulation in time: a discrete-event driver over the Scheduler on its
simulated clock (arrivals, departures, node events, scenarios), traces, and
the per-interval time series of a run.

- ``simulation``: ``Simulation`` (the driver, its time series, snapshots)
- ``trace``: the generic trace schema (CSV, Parquet, Arrow) and its reader
- ``scenario``: timed steps from YAML (create/delete, cordon, drain, nodes)
- ``gym_env``: ``SchedulingEnv``, a Gymnasium environment stepping a
  Simulation decision by decision (the ``gym`` extra; imported on use)

May import: ``scheduler`` and everything below it in ``framework``.
"""
