"""Simulation in time: a discrete-event driver over the Scheduler on its
simulated clock (arrivals, departures, node events, scenarios), traces, and
the per-interval time series of a run.

- ``simulation``: ``Simulation`` (the event drive and the calls that feed it)
- ``agenda``: the pending events, in time and priority order
- ``arrivals``: traces read as the clock reaches them, arrival blocks
- ``changes``: what an event does to the cluster and the scheduler
- ``listeners``: who hears a simulation's events
- ``series``: the time series, totals and latencies of a run
- ``snapshot``: a simulation as an Arrow table of its calls, and back
- ``errors``: ``SimulationError``
- ``trace``: the generic trace schema (CSV, Parquet, Arrow) and its reader
- ``scenario``: timed steps from YAML (create/delete, cordon, drain, nodes)
- ``gym_env``: ``SchedulingEnv``, a Gymnasium environment stepping a
  Simulation decision by decision (the ``gym`` extra; imported on use)

May import: ``scheduler`` and everything below it in ``framework``.
"""
