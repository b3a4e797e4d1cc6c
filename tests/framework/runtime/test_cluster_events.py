"""Cluster events: the names every plugin declares come from one vocabulary,
and a plugin's ``events`` alone decide which events move the pods it
rejected (no name-keyed table in the queue)."""

from __future__ import annotations

import pytest
from test_plugin import REGISTRY, _plugin

from tensorsched.framework.runtime import cluster_events as CE
from tensorsched.framework.scheduler import queue


@pytest.mark.parametrize("name", sorted(REGISTRY.plugin_points()))
def test_declared_events_are_cluster_events(name):
    plugin, _ = _plugin(name)
    events = getattr(plugin, "events", None)
    if events is not None:
        assert events <= CE.ALL_EVENTS, f"{name}: {sorted(events - CE.ALL_EVENTS)}"
        assert CE.plugin_events(plugin) == frozenset(events)


def test_spread_and_affinity_declare_upstream_events():
    pod_events = {CE.POD_ADD, CE.POD_UPDATE, CE.POD_DELETE}
    assert CE.plugin_events(_plugin("PodTopologySpread")[0]) == pod_events | {
        CE.NODE_ADD, CE.NODE_UPDATE, CE.NODE_DELETE}
    assert CE.plugin_events(_plugin("InterPodAffinity")[0]) == pod_events | {
        CE.NODE_ADD, CE.NODE_UPDATE}


def test_a_plugin_that_declares_nothing_hears_every_event():
    class Quiet:
        name = "PodTopologySpread"       # a name alone no longer picks events

    assert CE.plugin_events(Quiet()) == CE.ALL_EVENTS


def test_queue_reexports_the_vocabulary():
    assert queue.NODE_ADD is CE.NODE_ADD and queue.plugin_events is CE.plugin_events
    assert not hasattr(queue, "DEFAULT_EVENTS")
