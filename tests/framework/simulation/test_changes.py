"""``ClusterChanges``: each event kind changes the cluster and the
scheduler as the embedding API does, keeps the pending pods and the counts,
and tells the listeners; refusals name the pod or node."""

from __future__ import annotations

import pytest

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.scheduler.cluster import build_cluster, pod_from
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.simulation.changes import ClusterChanges
from tensorsched.framework.simulation.errors import SimulationError
from tensorsched.framework.simulation.listeners import Listeners
from tensorsched.framework.simulation.series import TimeSeries


def _daemon(name, node):
    pod = pod_dict(name, spec={"nodeName": node})
    pod["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds", "controller": True,
                                           "apiVersion": "apps/v1", "uid": "1"}]
    return pod


@pytest.fixture
def world():
    cluster = build_cluster([node_dict("n0"), node_dict("n1"),
                             pod_dict("a", spec={"nodeName": "n0"}), _daemon("d", "n0"),
                             pod_dict("b", spec={"nodeName": "n1"})])
    clock = SimulatedClock(5.0)
    sched = Scheduler(cluster, "numpy", 0, clock=clock)
    pending, durations, pushed, events = {}, {}, [], []
    listeners = Listeners(clock)
    listeners.subscribe("*", events.append)
    series = TimeSeries()
    changes = ClusterChanges(cluster=cluster, scheduler=sched, clock=clock, pending=pending,
                             durations=durations, series=series, listeners=listeners,
                             push=lambda *e: pushed.append(e))
    return changes, cluster, sched, pending, durations, pushed, events, series


def test_pods_arrive_pending_or_bound(world):
    changes, cluster, sched, pending, durations, pushed, events, series = world
    changes.add_pods([pod_from(pod_dict("p")), pod_from(pod_dict("q", spec={"nodeName": "n1"}))],
                     30.0)
    assert pending == {"default/p": 5.0} and durations == {"default/p": 30.0}
    assert "default/p" in sched.queue and "default/q" in cluster.state.pods
    # bound now: leaves in 30 s, the departure carrying q's serial
    assert pushed == [(35.0, 0, "depart", ("default/q", changes.lifetimes.of("default/q")))]
    assert [e["pod"] for e in events] == ["default/p", "default/q"]
    assert series.window["arrived"] == 2
    with pytest.raises(SimulationError, match="Pod default/p: submitted at 5s while a pod"):
        changes.add_pods([pod_from(pod_dict("p"))], None)


def test_departures_deletions_and_unknown_pods(world):
    changes, cluster, sched, pending, durations, pushed, events, series = world
    changes.add_pods([pod_from(pod_dict("p"))], None)
    changes.apply("depart", ("default/a", changes.lifetimes.of("default/a")))
    # still pending: deleted instead
    changes.apply("depart", ("default/p", changes.lifetimes.of("default/p")))
    assert "default/a" not in cluster.state.pods and "default/p" not in sched.queue
    assert [(e["event"], e["pod"], e["node"], e["message"]) for e in events[1:]] == [
        ("Departed", "default/a", "n0", "left"),
        ("Deleted", "default/p", None, "deleted before it was bound")]
    assert series.window["departed"] == 1 and series.totals["deleted"] == 1
    assert changes.remove_pod("default/nope", "Deleted", "deleted") is False
    with pytest.raises(SimulationError, match=r"Pod default/nope: not found \(NotFound\)"):
        changes.apply("delete", "default/nope")


def test_a_departure_leaves_only_the_pod_it_was_scheduled_for(world):
    # a pod's lifetime is the pod object's (its UID), not its name's: the
    # departure of a pod deleted and created again does nothing to the new one
    changes, cluster, sched, pending, durations, pushed, events, series = world
    changes.add_pods([pod_from(pod_dict("q", spec={"nodeName": "n1"}))], 30.0)
    (_, _, _, old), = pushed
    assert changes.remove_pod("default/q", "Deleted", "deleted")
    changes.add_pods([pod_from(pod_dict("q", spec={"nodeName": "n1"}))], None)
    changes.apply("depart", old)
    assert "default/q" in cluster.state.pods and series.window["departed"] == 0
    assert [e["event"] for e in events] == ["Arrived", "Deleted", "Arrived"]
    changes.add_pods([pod_from(pod_dict("r", spec={"nodeName": "n1"}))], 10.0)
    changes.apply("depart", pushed[-1][3])          # its own departure still applies
    assert "default/r" not in cluster.state.pods and series.window["departed"] == 1
    assert len(changes.lifetimes) == 0              # nothing kept for pods gone


def test_node_events(world):
    changes, cluster, sched, pending, durations, pushed, events, series = world
    changes.apply("cordon", "n1")
    assert cluster.state.node("n1").unschedulable
    changes.apply("uncordon", "n1")
    assert not cluster.state.node("n1").unschedulable
    changes.apply("drain", "n0")                      # the DaemonSet pod stays
    assert cluster.state.node("n0").unschedulable
    assert "default/d" in cluster.state.pods and "default/a" not in cluster.state.pods
    assert series.totals["evicted"] == 1
    changes.apply("delete_node", "n0")
    changes.apply("add_node", node_dict("n2"))
    assert set(cluster.state.node_rows) == {"n1", "n2"}
    assert [e["event"] for e in events] == ["NodeUpdated", "NodeUpdated", "NodeUpdated",
                                            "Evicted", "Deleted", "NodeDeleted", "NodeAdded"]
    with pytest.raises(SimulationError, match="Node n1: added at 5s but it exists"):
        changes.apply("add_node", node_dict("n1"))
    with pytest.raises(SimulationError, match="Node n0: not in the cluster at 5s"):
        changes.apply("cordon", "n0")
