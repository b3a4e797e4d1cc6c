"""EventHandlers: each cluster event changes the state, the queue or the
binding cycle's pods and moves the unschedulable pods it may help."""

import pytest

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.queue import ACTIVE, UNSCHEDULABLE
from tensorsched.framework.scheduler.scheduler import Scheduler


def _handlers():
    sched = Scheduler(build_cluster([node_dict("n0", cpu="1")]))
    return sched, sched.handlers


def test_node_add_moves_a_pod_waiting_for_room():
    sched, handlers = _handlers()
    handlers.add_pod(pod_dict("big", cpu="2"))
    assert sched.schedule_one().node is None
    assert sched.queue.infos["default/big"].where == UNSCHEDULABLE
    handlers.add_node(node_dict("n1", cpu="4"))
    assert sched.queue.infos["default/big"].where in (ACTIVE, "backoff")
    sched.advance(10)
    assert sched.schedule_one().node == "n1"


def test_pods_of_other_schedulers_are_left_alone():
    sched, handlers = _handlers()
    handlers.add_pod(pod_dict("other", spec={"schedulerName": "elsewhere"}))
    assert "default/other" not in sched.queue
    assert "elsewhere" in handlers.ignored["default/other"]
    handlers.delete_pod("default/other")
    assert not handlers.ignored


def test_bound_pods_update_and_delete():
    _sched, handlers = _handlers()
    handlers.add_pod(pod_dict("bound", cpu="500m", spec={"nodeName": "n0"}))
    state = handlers.state
    assert "default/bound" in state.pods
    handlers.update_pod(pod_dict("bound", cpu="500m", spec={"nodeName": "n0"},
                                 labels={"v": "2"}))
    assert state.pods.record("default/bound").labels == {"v": "2"}
    handlers.delete_pod("default/bound")
    assert "default/bound" not in state.pods
    with pytest.raises(KeyError):
        handlers.update_pod(pod_dict("nobody"))


def test_node_delete_drops_its_nominations_and_assumed_pods():
    sched = Scheduler(build_cluster([node_dict("n0", cpu="1")]), assume_ttl=60)
    sched.add_pod(pod_dict("p", cpu="500m"))
    sched.run_until_idle()
    assert sched.assumed
    sched.nominator.add(sched.cluster.resolve(pod_dict("q")), "n0")
    sched.handlers.delete_node("n0")
    assert not sched.assumed and not sched.nominator
    sched.handlers.confirm("default/p")                # unknown by now: nothing to do
    assert sched.cluster.state.num_nodes == 0
