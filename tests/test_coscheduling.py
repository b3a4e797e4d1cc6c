"""Coscheduling (out of tree): members wait in Permit until the group's
quorum is reserved, else all are rejected and their reservations released;
QueueSort keeps the group together; PreFilter needs minMember pods."""

from sched_checks import check
from tensorsched.framework.cluster import build_cluster
from tensorsched.framework.plugins import coscheduling as C
from tensorsched.framework.plugins import in_tree_registry
from tensorsched.framework.scheduler import Scheduler
from tensorsched.framework.synthetic import node_dict, pod_dict

CFG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
       "profiles": [{"schedulerName": "default-scheduler", "plugins": {
           "queueSort": {"enabled": [{"name": "Coscheduling"}],
                         "disabled": [{"name": "PrioritySort"}]},
           "preFilter": {"enabled": [{"name": "Coscheduling"}]},
           "reserve": {"enabled": [{"name": "Coscheduling"}]},
           "permit": {"enabled": [{"name": "Coscheduling"}]}},
           "pluginConfig": [{"name": "Coscheduling",
                             "args": {"permitWaitingTimeSeconds": 10}}]}]}


def _member(name, group, created, cpu="1", min_member=None):
    labels = {C.POD_GROUP_LABEL: group}
    if min_member is not None:
        labels[C.MIN_MEMBER_LABEL] = str(min_member)
    return pod_dict(name, cpu=cpu, memory="1Mi", created=created, labels=labels)


def _sched(nodes, groups=()):
    assert "Coscheduling" not in in_tree_registry()          # out of tree
    sched = Scheduler(build_cluster(nodes, CFG, C.registry()))
    _ = sched.queue                                           # builds the frameworks
    plugin = next(iter(sched.cluster._frameworks.values())).plugins["Coscheduling"]
    for g in groups:
        plugin.add_pod_group(g)
    return sched, plugin


def _pg(name, min_member, timeout=None):
    spec = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default",
                         "creationTimestamp": "2024-01-01T00:00:00Z"}, "spec": spec}


def test_gang_waits_for_quorum_then_binds_together():
    sched, _ = _sched([node_dict(f"n{i}", cpu="2") for i in range(2)], [_pg("g", 3)])
    ev = []
    sched.subscribe("Bound", ev.append)
    keys = []
    # lone pod created between the members: the group still pops together
    for name, created in (("g0", 0), ("g1", 2), ("g2", 4)):
        sched.add_pod(_member(name, "g", created))
        keys.append(f"default/{name}")
    sched.add_pod(pod_dict("lone", cpu="100m", memory="1Mi", created=1))
    keys.append("default/lone")
    order = []
    for _ in range(2):
        b = sched.schedule_one()
        order.append(b.pod)
        assert b.node is None and "waiting" in b.message
        check(sched, keys)
    assert len(sched.waiting) == 2
    b = sched.schedule_one()                     # the third reaches minMember: all allowed
    order.append(b.pod)
    assert b.node is not None
    check(sched, keys)
    assert not sched.waiting
    assert sorted(e["pod"] for e in ev) == keys[:3]
    assert order == keys[:3]
    assert sched.schedule_one().pod == "default/lone"
    check(sched, keys)


def test_gang_timeout_rejects_all_and_releases():
    sched, _ = _sched([node_dict("n0", cpu="2")], [_pg("g", 3, timeout=5)])
    keys = []
    for i in range(3):
        sched.add_pod(_member(f"g{i}", "g", i))
        keys.append(f"default/g{i}")
    st = sched.cluster.state
    sched.schedule_one()
    sched.schedule_one()
    assert len(sched.waiting) == 2 and st.requested[0, 0] == 2000
    b = sched.schedule_one()                     # no room for the third
    assert b.node is None and "Insufficient cpu" in b.message
    check(sched, keys)
    sched.advance(5)                             # timeout: every member rejected, released
    assert not sched.waiting and not st.pods and st.requested[0, 0] == 0
    check(sched, keys)
    assert all(k in sched.queue for k in keys)
    # room appears: the whole gang binds
    sched.add_node(node_dict("n1", cpu="2"))
    sched.run_until_idle()
    assert all(k in st.pods for k in keys)
    check(sched, keys)


def test_unreserve_of_one_member_rejects_waiting_siblings():
    sched, _plugin = _sched([node_dict("n0", cpu="4")], [_pg("g", 3)])
    for i in range(3):
        sched.add_pod(_member(f"g{i}", "g", i))
    keys = [f"default/g{i}" for i in range(3)]
    sched.schedule_one()
    sched.schedule_one()
    assert len(sched.waiting) == 2
    first = sched.waiting_pods()[0]
    sched.reject(first, "Coscheduling", "test")   # its Unreserve rejects the sibling
    assert not sched.waiting and not sched.cluster.state.pods
    check(sched, keys)


def test_prefilter_needs_min_member_pods_label_min_member():
    sched, _ = _sched([node_dict("n0", cpu="8")])
    sched.add_pod(_member("a", "h", 0, min_member=2))
    b = sched.schedule_one()
    assert b.node is None and "cannot find enough sibling pods" in b.message
    assert sched.queue.infos["default/a"].unschedulable_plugins == {"Coscheduling"}
    sched.add_pod(_member("b", "h", 1, min_member=2))       # an UnscheduledPod/Add event
    sched.run_until_idle()
    st = sched.cluster.state
    assert "default/a" in st.pods and "default/b" in st.pods
    check(sched, ["default/a", "default/b"])
