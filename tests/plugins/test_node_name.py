"""NodeName alone (Filter), after upstream's node_name_test.go: a pod with
spec.nodeName fits only the node of that name; every other node is
UnschedulableAndUnresolvable, "node(s) didn't match the requested node
name".  A pod without spec.nodeName fits every node."""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, pod, run

NN = "NodeName"
REJECTED = {"code": "UnschedulableAndUnresolvable", "plugin": NN,
            "reasons": ["node(s) didn't match the requested node name"]}
NODES = [node("a"), node("b"), node("c")]

CASES = [
    # no spec.nodeName: nothing to match -> a, b, c fit
    case(name="no node name fits every node", node_name=None, fits=["a", "b", "c"]),
    # spec.nodeName b: b fits; a and c are rejected
    case(name="node name selects that node", node_name="b", fits=["b"]),
    # spec.nodeName naming a node that is not in the cluster: every node rejected
    case(name="unknown node name fits nowhere", node_name="zz", fits=[]),
    # names are compared exactly: 'B' is not 'b'
    case(name="node name is case sensitive", node_name="B", fits=[]),
]


def _pod(node_name):
    return pod("p", spec={"nodeName": node_name} if node_name else None)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_filter(case, backend):
    rec = run(NODES, _pod(case["node_name"]), one_plugin_config(NN), backend)
    assert rec["filter"] == {n: REJECTED for n in ("a", "b", "c") if n not in case["fits"]}
    assert sorted(rec["feasible"]) == case["fits"]
    if len(case["fits"]) == 1:
        assert rec["selected"] == case["fits"][0]
    if not case["fits"]:
        assert rec["selected"] is None
        # no PostFilter plugin in the profile: nothing nominated, no victims
        assert rec["preemption"] == {"nominated_node": None, "victims": []}


def test_profile_has_only_the_filter():
    from tensorsched.framework.config.kube_config import load_config
    prof = load_config(one_plugin_config(NN)).profiles[0]
    assert prof.names("filter") == (NN,)
    assert prof.names("preFilter") == () and prof.names("score") == ()
