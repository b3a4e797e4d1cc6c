"""Plugins, one module each.

``in_tree_registry()`` holds kube-scheduler's in-tree plugins;
``default_registry()`` adds the plugins tensorsched ships out of tree (the
GPU plugins and Coscheduling), registered by name but not in the default
profile: a KubeSchedulerConfiguration enables them.
"""

from __future__ import annotations


def in_tree_registry():
    """A fresh Registry with every in-tree plugin."""
    from tensorsched.framework.config.kube_config import DEFAULT_PLUGIN_POINTS
    from tensorsched.framework.runtime.registry import Registry

    from . import (
        balanced_allocation,
        default_binder,
        default_preemption,
        image_locality,
        inter_pod_affinity,
        node_affinity,
        node_name,
        node_ports,
        node_resources_fit,
        node_unschedulable,
        pod_topology_spread,
        priority_sort,
        scheduling_gates,
        taint_toleration,
        unmodeled,
    )

    reg = Registry()
    for mod in (balanced_allocation, default_binder, default_preemption, image_locality,
                inter_pod_affinity,
                node_affinity, node_name, node_ports, node_resources_fit, node_unschedulable,
                pod_topology_spread, priority_sort, scheduling_gates, taint_toleration):
        reg.register(mod.NAME, mod.new, DEFAULT_PLUGIN_POINTS[mod.NAME])
    for name, factory in unmodeled.FACTORIES.items():
        reg.register(name, factory, DEFAULT_PLUGIN_POINTS[name])
    return reg


def default_registry():
    """The in-tree plugins plus GpuShareFit, GpuShareScore, GpuTopologyScore
    and Coscheduling: what clusters, the CLI and ``explain`` use."""
    from tensorsched.topology import plugins as gpu_share

    from . import coscheduling
    reg = in_tree_registry()
    gpu_share.register(reg)
    coscheduling.register(reg)
    return reg
