"""Kubernetes objects in: manifest files and documents (``manifests``,
with the shared field checks of ``meta``), quantities, label selectors,
workload controllers and Services, PodGroups, PriorityClasses, PDBs,
storage objects (``volumes``), DRA objects (``dra``, ``pod_claims``),
node lifecycle rules, and the fast pod paths (``pod_templates``: pods of a
template parsed once; ``pod_tables``: pods from Arrow tables / Parquet).
What they return are the records of ``framework.records``.

May import: ``framework.records``, ``framework.arguments``,
``framework.errors`` (nothing of the state, runtime or loop).
"""
