"""Capacity questions answered by the real scheduler: how many more pods
fit, how many nodes to add, which nodes can go.

May import: ``scheduler`` and everything below it in ``framework``.

- ``fit``: ``how_many_fit(cluster, templates, replicas=None, ...)``
  (cluster-capacity's question, and whether a set of replicas fits);
- ``node_search``: ``nodes_to_add(cluster, workloads, node_templates, ...)``
  (cluster-autoscaler's scale-up: a resource bound, then an exponential and
  binary search of real schedules, verified);
- ``drain``: ``removable_nodes(cluster, ...)`` (scale-down: each node, and
  a set, with PodDisruptionBudgets respected);
- ``batch_probe``: many probes (node sets, the pods they schedule) as one
  call of the batched node-local kernel, refusing what it does not cover;
- ``report``: the typed reports and their ``CapacityReport`` documents
  (``apiVersion: tensorsched.io/v1alpha1``);
- ``common``: fresh cluster copies, template copies, resource bounds;
- ``limits``: the bounds of the arguments (also the CLI's).

Every analysis works on fresh copies built from the cluster's objects: the
Cluster given is never modified.  The names below are imported on first
use, so reading ``limits`` does not load the scheduler.
"""

from __future__ import annotations

import importlib

# name -> the module that defines it
_NAMES = {"how_many_fit": "fit", "nodes_to_add": "node_search", "removable_nodes": "drain",
          "FitReport": "report", "NodesReport": "report", "DrainReport": "report",
          "API_VERSION": "report", "KIND": "report"}

__all__ = list(_NAMES)


def __getattr__(name: str):
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
