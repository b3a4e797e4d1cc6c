"""The plugin set clusters get by default (the composition root's choice):
kube-scheduler's in-tree plugins, Coscheduling, and every plugin set
installed under the ``tensorsched.plugins`` entry-point group (a callable
``register(registry)``; the GPU plugins of ``tensorsched.topology`` are
one).  The out-of-tree ones are registered by name but not in the default
profile: a KubeSchedulerConfiguration enables them.

``tensorsched/__init__`` installs ``default_registry`` as the core's
default (``tensorsched.registry_slot``); ``ts.default_registry()`` is it.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points

from tensorsched.framework.plugins import coscheduling, in_tree_registry
from tensorsched.framework.runtime.registry import Registry

PLUGIN_SETS = "tensorsched.plugins"         # entry-point group of out-of-tree plugin sets


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
