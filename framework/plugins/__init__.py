"""Plugins, one module each, and the registries that name them.

``in_tree_registry()`` holds kube-scheduler's in-tree plugins.  Which
plugin sets clusters get by default is the composition root's choice
(``tensorsched.plugin_sets``: these, Coscheduling and the installed sets);
``default_registry()`` here is that installed default
(``tensorsched.registry_slot``): this package names no set beyond its own.

May import: ``preemption`` (DefaultPreemption's evaluator), ``runtime``,
``state``, ``config``, ``parsing``, ``records``, ``kernels``, ``registry_slot``.
"""

from __future__ import annotations

from tensorsched.framework.config.kube_config import DEFAULT_PLUGIN_POINTS
from tensorsched.framework.runtime.registry import Registry
from tensorsched.registry_slot import default_registry

from . import (
    balanced_allocation,
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

__all__ = ["default_registry", "in_tree_registry"]

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

