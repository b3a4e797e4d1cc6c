"""NodeUnschedulable alone (Filter), after upstream's
node_unschedulable_test.go: a node with spec.unschedulable rejects a pod
unless one of its tolerations tolerates the taint
node.kubernetes.io/unschedulable:NoSchedule; UnschedulableAndUnresolvable,
"node(s) were unschedulable"."""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, pod, run, toleration

NU = "NodeUnschedulable"
KEY = "node.kubernetes.io/unschedulable"
REJECTED = {"code": "UnschedulableAndUnresolvable", "plugin": NU,
            "reasons": ["node(s) were unschedulable"]}
# a schedulable, b cordoned (spec.unschedulable: true)
NODES = [node("a"), node("b", unschedulable=True)]

CASES = [
    # no toleration: b rejected, a fits
    case(name="cordoned node rejects the pod", tolerations=[], fits=["a"]),
    # Exists on the key, effect NoSchedule -> tolerated: both fit
    case(name="toleration with NoSchedule effect",
         tolerations=[toleration(KEY, effect="NoSchedule")],
         fits=["a", "b"]),
    # Exists on the key, empty effect matches every effect -> tolerated
    case(name="toleration without effect", tolerations=[toleration(KEY)], fits=["a", "b"]),
    # Exists with an empty key tolerates every taint
    case(name="toleration of everything", tolerations=[toleration()], fits=["a", "b"]),
    # effect NoExecute does not tolerate the NoSchedule taint -> b rejected
    case(name="toleration with another effect",
         tolerations=[toleration(KEY, effect="NoExecute")], fits=["a"]),
    # another key does not help
    case(name="toleration of another key",
         tolerations=[toleration("node.kubernetes.io/not-ready", effect="NoSchedule")],
         fits=["a"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_filter(case, backend):
    p = pod("p", spec={"tolerations": case["tolerations"]} if case["tolerations"] else None)
    rec = run(NODES, p, one_plugin_config(NU), backend)
    assert rec["filter"] == {n: REJECTED for n in ("a", "b") if n not in case["fits"]}
    assert sorted(rec["feasible"]) == case["fits"]


def test_only_cordoned_nodes_fit_nowhere(backend):
    # every node cordoned, no toleration: nothing feasible, nothing selected
    rec = run([node("b", unschedulable=True), node("c", unschedulable=True)], pod("p"),
              one_plugin_config(NU), backend)
    assert rec["filter"] == {"b": REJECTED, "c": REJECTED}
    assert rec["selected"] is None


def test_unschedulable_is_not_a_real_taint(backend):
    # the cordon is spec.unschedulable, not a node taint: TaintToleration
    # alone lets the pod onto b
    rec = run(NODES, pod("p"), one_plugin_config("TaintToleration"), backend)
    assert rec["filter"] == {} and sorted(rec["feasible"]) == ["a", "b"]
