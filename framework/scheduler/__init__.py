"""The scheduling loop, split as kube-scheduler splits it: the loaded
``Cluster``, the scheduling ``queue``, ``Scheduler`` (one cycle, event
handlers, binding, metrics) and ``explain``.

May import: everything below it in ``framework`` (``plugins``,
``preemption``, ``runtime``, ``state``, ``config``, ``parsing``, ``records``).
"""
