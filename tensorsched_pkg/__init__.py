"""tensorsched: Kubernetes scheduling decisions as array kernels.

The facade (a contract other tools read)::

    import tensorsched as ts
    objects = ts.load_manifests(path)            # files or directories -> list of dicts
    cluster = ts.build_cluster(objects, config=None, feature_gates=None)
    sched = ts.Scheduler(cluster, backend="numba", seed=0)
    outcomes, preemptions = sched.schedule_pending(pods)   # manifest dicts or parsed records
    ts.explain(objects, pod, config=None, backend="numpy", seed=0)
    # objects are decoded strictly: a new object with a field the API lacks
    # is refused; a stored one (a dump) loads with a ts.UnknownFieldWarning
    runs = ts.simulate_batch(nodes, traces, configs=("FGD",), seeds=(0,), backend="numba")
                                                 # many simulations in one call (openb
                                                 # nodes, or manifests: the default profile)
    nodes, pods = ts.synthetic.workload("basic", n_nodes, n_pods, seed)

The code lives in folders mapped into this namespace: ``tensorsched.kernels``
(array math, no Kubernetes objects), ``tensorsched.framework`` (records,
parsing, config, state, plugin runtime, preemption, plugins, the scheduling
loop, simulation, capacity),
``tensorsched.topology`` (GPU/NUMA: inventory, NVLink, NRT, the GPU plugin
set, the openb replay), ``tensorsched.generators`` (seeded synthetic
clusters), ``tensorsched.experiments`` (simulations from input files,
sweeps) and ``tensorsched.bench`` (benchmarks).  This package itself is the
composition root: the CLI (``tensorsched.cli``), the default plugin sets
(``tensorsched.plugin_sets``, installed into ``registry_slot`` here as the
registry of every cluster built without one) and
``tensorsched.synthetic``.  Names are imported on first use, so importing a
sub-package stays cheap.
"""

from __future__ import annotations

import importlib

from . import registry_slot as _registry_slot

__version__ = "0.1.0"

# facade name -> (module, attribute or None for the module itself)
_EXPORTS = {
    "load_manifests": ("tensorsched.framework.parsing.manifests", "load_objects"),
    "build_cluster": ("tensorsched.framework.scheduler.cluster", "build_cluster"),
    "Cluster": ("tensorsched.framework.scheduler.cluster", "Cluster"),
    "Scheduler": ("tensorsched.framework.scheduler.scheduler", "Scheduler"),
    "Binding": ("tensorsched.framework.scheduler.scheduler", "Binding"),
    "explain": ("tensorsched.framework.scheduler.explain", "explain"),
    "explain_pod": ("tensorsched.framework.scheduler.explain", "explain_pod"),
    "default_registry": ("tensorsched.plugin_sets", "default_registry"),
    "load_config": ("tensorsched.framework.config.kube_config", "load_config"),
    "TensorschedError": ("tensorsched.framework.errors", "TensorschedError"),
    "ArgumentError": ("tensorsched.framework.errors", "ArgumentError"),
    "synthetic": ("tensorsched.synthetic", None),
    "read_pods_parquet": ("tensorsched.framework.parsing.pod_tables", "read_pods_parquet"),
    "read_pods_table": ("tensorsched.framework.parsing.pod_tables", "read_pods_table"),
    "PodColumns": ("tensorsched.framework.records.pod_columns", "PodColumns"),
    "Simulation": ("tensorsched.framework.simulation.simulation", "Simulation"),
    "simulate_batch": ("tensorsched.experiments.batch_facade", "simulate_batch"),
    "read_trace": ("tensorsched.framework.simulation.trace", "read_trace"),
    "SchedulingEnv": ("tensorsched.framework.simulation.gym_env", "SchedulingEnv"),  # gym extra
    "how_many_fit": ("tensorsched.framework.capacity.fit", "how_many_fit"),
    "nodes_to_add": ("tensorsched.framework.capacity.node_search", "nodes_to_add"),
    "removable_nodes": ("tensorsched.framework.capacity.drain", "removable_nodes"),
    "expand_workloads": ("tensorsched.framework.parsing.controllers", "expand_workloads"),
    "UnknownFieldWarning": ("tensorsched.framework.parsing.strict_fields",
                            "UnknownFieldWarning"),
}

# Names that need an optional extra stay out of ``import *`` (which would
# fail without it); they are still ``tensorsched.<name>``.
_NEEDS_EXTRA = frozenset({"SchedulingEnv"})
__all__ = sorted(set(_EXPORTS) - _NEEDS_EXTRA) + ["__version__"]




def _default_registry():
    # the plugin sets (and with them the framework) load on the first cluster
    # built without a registry, not at ``import tensorsched``
    return importlib.import_module("tensorsched.plugin_sets").default_registry()


_registry_slot.install(_default_registry)


def __getattr__(name: str):
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'tensorsched' has no attribute {name!r}") from None
    mod = importlib.import_module(module)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__():
    return __all__
