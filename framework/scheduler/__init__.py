"""The scheduling loop, split as kube-scheduler splits it: the loaded
``Cluster``, the scheduling ``queue`` (itself made of ``active_queue``,
``backoff_queue``, ``unschedulable_pool``, ``pre_enqueue_gate``,
``event_interest`` and the ``nominator``), ``Scheduler`` (a facade over its
collaborators: ``profiles``, ``run_keys``, ``schedule_one``, ``binding``,
``runs``, ``arrival_blocks``, ``event_handlers``, ``metrics``) and
``explain``.  Each collaborator is given what it uses when it is made; the
modules import one another one way (``scheduler`` on top).

May import: everything below it in ``framework`` (``plugins``,
``preemption``, ``runtime``, ``state``, ``config``, ``parsing``, ``records``).
"""
