"""The plugin runtime: extension-point contracts (``plugin``, incl. the
``CycleContext``), ``Status``, the cluster-event names plugins declare
(``cluster_events``), the plugin ``Registry``, user plugins, the clock,
and ``Framework`` (one profile compiled into fused kernel stages).

May import: ``kernels``, ``framework.errors``, ``parsing``, ``records``, ``config``,
``state``; never a particular plugin.
"""
