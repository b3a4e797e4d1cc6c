"""The scheduler framework, in layers (each sub-package's ``__init__`` says
what it holds and what it may import):

- ``records``    the validated objects: records, DRA records, pod columns
- ``parsing``    Kubernetes objects in: manifests, quantities, selectors,
                 workloads, storage and DRA objects, pod templates and tables
- ``config``     KubeSchedulerConfiguration, plugin arguments, plugin names
- ``state``      cluster state as columns, pod queries, per-domain counts, Arrow
- ``runtime``    plugin contracts, cluster events, Status, Registry,
                 Framework (fused stages)
- ``preemption`` DefaultPreemption's evaluator and victim searches
- ``plugins``    the plugins, one module each, and the default registry
- ``scheduler``  the loaded Cluster, queue, scheduling/binding cycles, explain
- ``simulation`` the discrete-event Simulation, traces, scenarios, the
                 Gymnasium environment
- ``capacity``   how many fit, nodes to add, nodes that can go

``errors`` holds the error types every layer raises and ``arguments`` the
facade's argument checks.  A layer imports only the layers listed above it
here; ``simulation`` and ``capacity`` sit side by side at the top
(``pyproject.toml`` holds the rule for import-linter).

``tensorsched.framework.explain(objects, pod, config=None, backend="numpy",
seed=0) -> dict`` is the library form of ``tensorsched explain``.
"""

from __future__ import annotations

import importlib

__all__ = ["explain"]


def __getattr__(name: str):
    if name == "explain":
        return importlib.import_module("tensorsched.framework.scheduler.explain").explain
    raise AttributeError(f"module 'tensorsched.framework' has no attribute {name!r}")
