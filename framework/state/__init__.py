"""Cluster state as columns: ``ClusterState`` (nodes and bound pods), pods
compiled into queries, per-domain pod counts, the workload index, and the
Arrow/Parquet round trip.

May import: ``kernels``, ``framework.errors``, ``framework.parsing``, ``framework.records``,
``framework.config``.
"""
