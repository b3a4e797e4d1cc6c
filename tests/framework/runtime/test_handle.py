"""The Handle a plugin gets: the Scheduler is one, and Coscheduling runs on
any object with the protocol's members and nothing more (its PodGroups,
the state's members, the queued pods counted toward a quorum, waiting
siblings allowed or rejected through the handle)."""

from types import SimpleNamespace

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.plugins import coscheduling as C
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.runtime.handle import Handle
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Code
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler


class BareHandle:
    """Exactly the protocol's members, recording allow/reject calls."""

    def __init__(self, state, pod_groups=()):
        self.clock = SimulatedClock()
        self.state = state
        self.pod_groups = list(pod_groups)
        self.waiting: dict = {}
        self.cycle_nominated: tuple = ()
        self.queued: list = []
        self.calls: list = []

    def queued_pods(self):
        return list(self.queued)

    def allow(self, key, plugin):
        self.calls.append(("allow", key, plugin))

    def reject(self, key, plugin, message):
        self.calls.append(("reject", key, plugin))


def _member(name, created=0):
    return parse_pod(pod_dict(name, cpu="1", memory="1Mi", created=created,
                              labels={C.POD_GROUP_LABEL: "g"}))


def _pg(min_member):
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default",
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"minMember": min_member}}


def test_the_scheduler_is_a_handle():
    sched = Scheduler(build_cluster([node_dict("n0")]))
    assert isinstance(sched, Handle)
    assert sched.state is sched.cluster.state and sched.queued_pods() == []
    sched.add_pod(pod_dict("p"))
    assert [p.key for p in sched.queued_pods()] == ["default/p"]
    assert not isinstance(SimpleNamespace(clock=None), Handle)


def test_coscheduling_runs_on_the_protocol_alone():
    state = build_cluster([node_dict("n0", cpu="4")]).state
    handle = BareHandle(state, [_pg(3)])
    assert isinstance(handle, Handle)
    plugin = C.Coscheduling()
    plugin.set_handle(handle)
    assert ("default", "g") in plugin.groups
    a, b, c = _member("a"), _member("b", 1), _member("c", 2)
    # two members known (one queued, this one): below quorum
    handle.queued = [b]
    st, _ = plugin.pre_filter(CycleContext(state, a, None))
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    handle.queued = [b, c]
    st, _ = plugin.pre_filter(CycleContext(state, a, None))
    assert st.ok
    # members assumed in the state count toward the quorum; the last one
    # lets the waiting siblings go through the handle
    handle.waiting = {"default/a": SimpleNamespace(pod=a, node="n0"),
                      "default/b": SimpleNamespace(pod=b, node="n0")}
    for pod in (a, b, c):
        state.add_pod(pod, "n0")
    st = plugin.permit(CycleContext(state, c, None), "n0")
    assert st.ok
    assert sorted(handle.calls) == [("allow", "default/a", C.NAME),
                                    ("allow", "default/b", C.NAME)]
    handle.calls.clear()
    plugin.unreserve(CycleContext(state, c, None), "n0")
    assert sorted(handle.calls) == [("reject", "default/a", C.NAME),
                                    ("reject", "default/b", C.NAME)]
