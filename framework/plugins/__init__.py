"""Built-in plugins, one module each; ``in_tree_registry()`` lists them."""

from __future__ import annotations


def in_tree_registry():
    """A fresh Registry with every built-in plugin."""
    from ..config import DEFAULT_PLUGIN_POINTS
    from ..registry import Registry
    from . import (balanced_allocation, default_binder, default_preemption, image_locality,
                   inter_pod_affinity,
                   node_affinity, node_name, node_ports, node_resources_fit,
                   node_unschedulable, pod_topology_spread, priority_sort, scheduling_gates,
                   taint_toleration, unmodeled)

    reg = Registry()
    for mod in (balanced_allocation, default_binder, default_preemption, image_locality,
                inter_pod_affinity,
                node_affinity, node_name, node_ports, node_resources_fit, node_unschedulable,
                pod_topology_spread, priority_sort, scheduling_gates, taint_toleration):
        reg.register(mod.NAME, mod.new, DEFAULT_PLUGIN_POINTS[mod.NAME])
    for name, factory in unmodeled.FACTORIES.items():
        reg.register(name, factory, DEFAULT_PLUGIN_POINTS[name])
    from . import gpu_share          # GPU plugins: registered, not in the default profile
    gpu_share.register(reg)
    return reg
