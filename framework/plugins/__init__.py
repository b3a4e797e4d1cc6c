"""Plugins, one module each, and the registries that name them.

``in_tree_registry()`` holds kube-scheduler's in-tree plugins;
``default_registry()`` adds the plugin sets tensorsched ships out of tree:
Coscheduling, and every set installed under the ``tensorsched.plugins``
entry-point group (a callable ``register(registry)``; the GPU plugins of
the topology package are one).  They are registered by name but not in
the default profile: a KubeSchedulerConfiguration enables them.

May import: ``preemption`` (DefaultPreemption's evaluator), ``runtime``,
``state``, ``config``, ``parsing``, ``records``, ``kernels``.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points

from tensorsched.framework.config.kube_config import DEFAULT_PLUGIN_POINTS
from tensorsched.framework.runtime.registry import Registry

from . import (
    balanced_allocation,
    coscheduling,
    default_binder,
    default_preemption,
    dynamic_resources,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_volume_limits,
    node_resources_fit,
    node_unschedulable,
    pod_topology_spread,
    priority_sort,
    scheduling_gates,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)

PLUGIN_SETS = "tensorsched.plugins"         # entry-point group of out-of-tree plugin sets

_IN_TREE = (balanced_allocation, default_binder, default_preemption, image_locality,
            inter_pod_affinity, node_affinity, node_name, node_ports, node_resources_fit,
            node_unschedulable, pod_topology_spread, priority_sort, scheduling_gates,
            taint_toleration, volume_restrictions, node_volume_limits, volume_binding,
            volume_zone, dynamic_resources)


def in_tree_registry() -> Registry:
    """A fresh Registry with every in-tree plugin."""
    reg = Registry()
    for mod in _IN_TREE:
        reg.register(mod.NAME, mod.new, DEFAULT_PLUGIN_POINTS[mod.NAME])
    return reg


@lru_cache(maxsize=1)
def installed_plugin_sets() -> tuple:
    """The ``register(registry)`` callables of the installed plugin sets,
    in entry-point name order (loaded once per process)."""
    eps = sorted(entry_points(group=PLUGIN_SETS), key=lambda ep: ep.name)
    return tuple(ep.load() for ep in eps)


def default_registry() -> Registry:
    """The in-tree plugins, Coscheduling and the installed plugin sets (the
    GPU plugins): what clusters, the CLI and ``explain`` use."""
    reg = in_tree_registry()
    coscheduling.register(reg)
    for register in installed_plugin_sets():
        register(reg)
    return reg
