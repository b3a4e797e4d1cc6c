"""GPU / NUMA: everything GPU that knows Kubernetes objects, on top of the
framework (the framework core never imports it; the composition root's
``tensorsched.plugin_sets.default_registry()`` loads its plugin set through
the ``tensorsched.plugins`` entry point).

- ``gpu``: GPU inventory of nodes and GPU asks of pods (``nvidia.com/gpu``,
  the openb ``alibabacloud.com/*`` annotations), openb node CSVs;
- ``node_topology``: NVLink islands and NUMA nodes of a node (annotation or
  NodeResourceTopology), pods' placement asks;
- ``nrt``: NodeResourceTopology objects (parsing, attaching to a state);
- ``gpu_table``: per-GPU state that follows a ClusterState (allocations);
- ``plugins``: GpuShareFit, GpuShareScore, GpuTopologyScore, ``register``;
- ``row_answers``: per-node answers kept while a node's GPU row is unchanged;
- ``sim_metrics``: GPU columns of a simulation's time series;
- ``openb``: the openb trace replay (FGD paper).

The GPU benchmark workload is ``tensorsched.generators.gpu_clusters``.

The array math they run is ``kernels.gpu``.
"""
