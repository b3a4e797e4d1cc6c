"""The validated objects as the rest of the framework reads them: the
records of nodes, pods, PriorityClasses, PDBs... (``records``), DRA
records (``dra_records``), and pods as columns (``pod_columns``: a pod is
its class plus a few per-pod fields).

May import: ``framework.arguments``, ``framework.errors``.
"""
