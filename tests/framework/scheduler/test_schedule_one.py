"""SchedulingCycle's contract: a placed pod advances the attempt counter and
the rotating start index and goes to binding; a pod that fits nowhere goes
back to the queue with its rejecting plugins and its failure is remembered
for alike pods; nominated pods are counted only inside a cycle; victims of a
preemption with a grace period leave the state when it ends."""

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.queue import UNSCHEDULABLE
from tensorsched.framework.scheduler.scheduler import Scheduler

PREEMPT_CFG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
        "preFilter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "filter": {"enabled": [{"name": "NodeResourcesFit"}]},
        "postFilter": {"enabled": [{"name": "DefaultPreemption"}]}}}],
}


def _cycle(nodes=2, **kw):
    sched = Scheduler(build_cluster([node_dict(f"n{i}", cpu="1") for i in range(nodes)]), **kw)
    return sched.cycle


def test_a_placed_pod_advances_the_counters_and_binds():
    cycle = _cycle()
    b = cycle.attempt(parse_pod(pod_dict("p", cpu="500m")), None)
    assert b.node in ("n0", "n1") and "default/p" in cycle.state.pods
    counters = cycle.counters
    assert counters.attempts == 1 and counters.next_start_index == 0     # 2 of 2 nodes processed
    assert cycle.metrics.results == {"scheduled": 1}


def test_a_failure_is_requeued_and_remembered_for_alike_pods():
    cycle = _cycle()
    queue = cycle.queue
    for name in ("big-a", "big-b"):
        queue.add(parse_pod(pod_dict(name, cpu="2", created=int(name[-1] == "b"))))
    first = queue.pop()
    b = cycle.attempt(first.pod, first)
    assert b.node is None and "Insufficient cpu" in b.message
    assert first.where == UNSCHEDULABLE
    assert first.unschedulable_plugins == {"NodeResourcesFit"}
    assert len(cycle.failure_memory) == 1 and cycle.failure_memory.hits == 0
    second = queue.pop()
    again = cycle.attempt(second.pod, second)
    assert again.message == b.message and cycle.failure_memory.hits == 1
    assert cycle.counters.attempts == 2 and second.where == UNSCHEDULABLE


def test_nominated_pods_are_counted_inside_the_cycle_only():
    cycle = _cycle()
    nominee = parse_pod(pod_dict("nominee", cpu="1", priority=10))
    cycle.nominator.add(nominee, "n0")
    low = parse_pod(pod_dict("low", cpu="1"))
    with cycle.nominated_counted(low) as added:
        assert added == ["default/nominee"] == list(cycle.cycle_nominated)
        assert cycle.state.pods["default/nominee"].node_row == cycle.state.node_rows["n0"]
    assert cycle.cycle_nominated == () and "default/nominee" not in cycle.state.pods
    b = cycle.attempt(low, None)               # n0 is held for the nominee
    assert b.node == "n1" and "default/nominee" not in cycle.state.pods


def test_victims_terminate_after_their_grace_period():
    sched = Scheduler(build_cluster([node_dict("n0", cpu="1"),
                                     pod_dict("victim", cpu="1", spec={"nodeName": "n0"})], PREEMPT_CFG),
                      termination_grace_seconds=30)
    cycle = sched.cycle
    sched.add_pod(pod_dict("boss", cpu="1", priority=100))
    b = sched.schedule_one()
    assert b.nominated_node == "n0" and b.victims == ["default/victim"]
    assert cycle.terminating == [(30.0, 1, "default/victim")]
    assert cycle.state.pods.record("default/victim").deleting
    assert cycle.metrics.preemptions == 1 and len(cycle.metrics.evictions) == 1
    cycle.terminate_due(29.0)
    assert "default/victim" in cycle.state.pods
    cycle.terminate_due(30.0)
    assert not cycle.terminating and "default/victim" not in cycle.state.pods
