"""cluster.build_cluster: nodes and bound pods into a fresh state, unbound
pods pending, terminal pods skipped, bad input refused naming the pod and
field; Cluster.framework_for compiles one Framework per (profile, backend)."""

from __future__ import annotations

import pytest

from tensorsched.framework.errors import ArgumentError, StateError
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster, pod_from, pods_from
from tensorsched.generators.clusters import node_dict, pod_dict


def _bound(name, node, phase=None):
    d = pod_dict(name, cpu="500m")
    d["spec"]["nodeName"] = node
    if phase:
        d["status"] = {"phase": phase}
    return d


def test_nodes_bound_pods_and_pending_pods():
    objs = [node_dict("n1"), node_dict("n2"), _bound("b", "n1"), _bound("done", "n2", "Succeeded"),
            pod_dict("w1", cpu="1"), pod_dict("w2", cpu="1")]
    c = build_cluster(objs)
    assert set(c.state.node_rows) == {"n1", "n2"}
    assert [p.name for p in c.pending] == ["w1", "w2"]
    assert "default/b" in c.state.pods
    assert "default/done" not in c.state.pods     # terminal: holds nothing


def test_bound_to_a_missing_node_is_refused_naming_pod_and_field():
    with pytest.raises(StateError, match=r"Pod default/b: spec.nodeName: node 'gone'"):
        build_cluster([node_dict("n1"), _bound("b", "gone")])


@pytest.mark.parametrize("kwargs,field", [
    ({"objects": "not a list"}, "objects"),
    ({"objects": [], "config": 3}, "config"),
    ({"objects": [], "registry": "default"}, "registry")])
def test_argument_errors_name_the_argument(kwargs, field):
    with pytest.raises(ArgumentError, match=f"build_cluster: {field}"):
        build_cluster(**kwargs)


def test_framework_is_compiled_once_per_profile_and_backend():
    c = build_cluster([node_dict("n1"), pod_dict("w", cpu="1")])
    pod = c.pending[0]
    fw = c.framework_for(pod, "numpy")
    assert c.framework_for(pod, "numpy") is fw
    assert c.framework_for(pod, "numba") is not fw
    assert c.pod_table() is c.pod_table()


def test_pod_from_accepts_records_and_dicts():
    rec = parse_pod(pod_dict("a", cpu="1"))
    assert pod_from(rec) is rec
    assert pod_from(pod_dict("a", cpu="1")).key == "default/a"
    recs = pods_from([pod_dict("x", cpu="1"), rec, pod_dict("y", cpu="1")])
    assert [r.key for r in recs] == ["default/x", "default/a", "default/y"]
    assert recs[1] is rec
