"""Kubernetes objects in and out: quantities, validated records, manifest
files, workloads, PodGroups, PriorityClasses, PDBs and label selectors.

May import: ``framework.errors`` only (nothing of the state, runtime or loop).
"""
