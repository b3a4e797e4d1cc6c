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
- ``report``: the typed reports and their ``CapacityReport`` documents
  (``apiVersion: tensorsched.io/v1alpha1``);
- ``common``: fresh cluster copies, template copies, resource bounds.

Every analysis works on fresh copies built from the cluster's objects: the
Cluster given is never modified.
"""

from .drain import removable_nodes
from .fit import how_many_fit
from .node_search import nodes_to_add
from .report import API_VERSION, KIND, DrainReport, FitReport, NodesReport

__all__ = ["how_many_fit", "nodes_to_add", "removable_nodes", "FitReport", "NodesReport",
           "DrainReport", "API_VERSION", "KIND"]
