"""KubeSchedulerConfiguration (``kube_config``), typed plugin arguments
(``plugin_args``), validated with upstream's field paths and defaults, and
the built-in plugin names (``plugin_names``), spelled once for the
configuration and the plugins.

May import: ``framework.errors``, ``framework.parsing``, ``framework.records``.
"""
