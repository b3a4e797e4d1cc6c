"""Cluster events (upstream's ClusterEvent, ``resource/action``): what the
queue hears and what a plugin names in its ``events`` attribute, the events
that may make a pod it rejected schedulable again (EventsToRegister).

The names are plain strings so that an out-of-tree plugin may spell them
too; built-in plugins import these constants.  ``Pod/*`` are events of
assigned (bound) pods; ``UnscheduledPod/Add`` is a pending pod joining the
queue.
"""

from __future__ import annotations

NODE_ADD, NODE_UPDATE, NODE_DELETE = "Node/Add", "Node/Update", "Node/Delete"
POD_ADD, POD_UPDATE, POD_DELETE = "Pod/Add", "Pod/Update", "Pod/Delete"
UNSCHEDULED_POD_ADD = "UnscheduledPod/Add"
# a ResourceClaim's status changed (DynamicResources' PostFilter deallocated it)
RESOURCE_CLAIM_UPDATE = "ResourceClaim/Update"
ALL_EVENTS = frozenset({NODE_ADD, NODE_UPDATE, NODE_DELETE, POD_ADD, POD_UPDATE, POD_DELETE,
                        UNSCHEDULED_POD_ADD, RESOURCE_CLAIM_UPDATE})


def plugin_events(plugin) -> frozenset:
    """The cluster events that may make a pod rejected by ``plugin``
    schedulable: its ``events``; every event when it declares none (an
    out-of-tree plugin that says nothing is asked again on any change)."""
    ev = getattr(plugin, "events", None)
    return ALL_EVENTS if ev is None else frozenset(ev)
