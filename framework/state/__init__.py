"""Cluster state as columns: ``ClusterState`` (nodes and bound pods), pods
compiled into queries, per-domain pod counts, the workload index, and the
Arrow/Parquet round trip.

What follows a state's pods does so through the contracts of
``listeners`` (``PodListener``, ``PodBatchListener``, ``PodRestorer``),
and data derived from a state is kept in ``ClusterState.derived`` under
``StateKey`` constants declared beside their owners (``derived``).

May import: ``kernels``, ``framework.errors``, ``framework.parsing``, ``framework.records``,
``framework.config``.
"""
