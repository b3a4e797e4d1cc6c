"""The scheduler framework, in layers (each sub-package's ``__init__`` says
what it holds and what it may import):

- ``objects``    Kubernetes objects in and out: manifests, quantities, records
- ``config``     KubeSchedulerConfiguration and plugin arguments
- ``state``      cluster state as columns, pod queries, per-domain counts, Arrow
- ``runtime``    plugin contracts, Status, Registry, Framework (fused stages)
- ``preemption`` DefaultPreemption's evaluator and victim searches
- ``plugins``    the plugins, one module each, and the default registry
- ``scheduler``  the loaded Cluster, queue, scheduling/binding cycles, explain

``errors`` holds the error types every layer raises.  A layer imports only
the layers listed above it here (``pyproject.toml`` holds the rule for
import-linter).

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
