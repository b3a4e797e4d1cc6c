"""SchedulingGates (PreEnqueue), after upstream's scheduling_gates_test.go:
a pod with spec.schedulingGates is kept out of the active queue with
UnschedulableAndUnresolvable "waiting for scheduling gates: [<gates>]"; once
its gates are removed (a pod update) it is scheduled."""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, pod

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.plugins import scheduling_gates
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

SG = "SchedulingGates"


def gated(name, *gates, created=0):
    spec = {"schedulingGates": [{"name": g} for g in gates]} if gates else None
    return pod(name, created=created, spec=spec)


PRE_ENQUEUE_CASES = [
    # no gates -> Success
    case(name="no gates", pod=gated("p"), code=None, reasons=[]),
    # one gate -> UnschedulableAndUnresolvable listing it
    case(name="one gate", pod=gated("p", "example.com/foo"),
         code="UnschedulableAndUnresolvable",
         reasons=["waiting for scheduling gates: [example.com/foo]"]),
    # two gates, in spec order, space separated (Go's %v of a []string)
    case(name="two gates", pod=gated("p", "example.com/foo", "example.com/bar"),
         code="UnschedulableAndUnresolvable",
         reasons=["waiting for scheduling gates: [example.com/foo example.com/bar]"]),
]


@pytest.mark.parametrize("case", PRE_ENQUEUE_CASES, ids=[c["name"] for c in PRE_ENQUEUE_CASES])
def test_pre_enqueue(case):
    st = scheduling_gates.new(None, None).pre_enqueue(parse_pod(case["pod"]))
    if case["code"] is None:
        assert st.ok
    else:
        assert not st.ok
        assert st.code.wire_name == case["code"]
        assert list(st.reasons) == case["reasons"]
        assert st.plugin == SG


def test_gated_pod_is_not_attempted(backend):
    # two pods, one node: 'free' is bound; 'held' never enters activeQ and
    # comes last with its PreEnqueue message
    cluster = build_cluster([node("a")], one_plugin_config(SG))
    s = Scheduler(cluster, backend=backend)
    bindings, _ = s.schedule_pending([gated("held", "example.com/wait"), gated("free", created=1)])
    assert [(b.pod, b.node) for b in bindings] == [("default/free", "a"), ("default/held", None)]
    assert bindings[1].message == "waiting for scheduling gates: [example.com/wait]"
    assert "default/held" not in cluster.state.pods


def test_removing_the_gates_schedules_the_pod(backend):
    cluster = build_cluster([node("a")], one_plugin_config(SG))
    s = Scheduler(cluster, backend=backend)
    bindings, _ = s.schedule_pending([gated("held", "g1", "g2")])
    assert bindings[0].node is None
    # one gate removed: still gated
    s.update_pod(gated("held", "g2"))
    assert s.run_until_idle() == []
    # last gate removed: PreEnqueue passes, the pod is scheduled on a
    s.update_pod(gated("held"))
    out = s.run_until_idle()
    assert [(b.pod, b.node) for b in out] == [("default/held", "a")]
    assert "default/held" in cluster.state.pods


def test_without_the_plugin_gates_are_not_enforced(backend):
    # a profile without SchedulingGates (NodeName only): nothing checks the
    # gates at PreEnqueue, so the gated pod is scheduled
    cluster = build_cluster([node("a")], one_plugin_config("NodeName"))
    bindings, _ = Scheduler(cluster, backend=backend).schedule_pending(
        [gated("held", "example.com/wait")])
    assert [(b.pod, b.node) for b in bindings] == [("default/held", "a")]
