"""Simulation in time: a discrete-event driver over the Scheduler on its
simulated clock (arrivals, departures, node events, scenarios), traces, and
the per-interval time series of a run.

May import: ``scheduler`` and everything below it in ``framework``.
"""
