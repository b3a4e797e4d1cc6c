"""KubeSchedulerConfiguration (``kube_config``) and typed plugin arguments
(``plugin_args``), validated with upstream's field paths and defaults.

May import: ``framework.errors``, ``framework.objects``.
"""
