"""workload_index.WorkloadIndex.default_selector: PodTopologySpread's
DefaultSelector from the loaded Services and controllers."""

from __future__ import annotations

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.workloads import ControllerRecord, ServiceRecord
from tensorsched.framework.state.workload_index import WorkloadIndex
from tensorsched.generators.clusters import pod_dict


def _pod(labels, owner=None, namespace="default"):
    d = pod_dict("p", cpu="100m")
    d["metadata"]["namespace"] = namespace
    d["metadata"]["labels"] = dict(labels)
    if owner is not None:
        api, kind, name = owner
        d["metadata"]["ownerReferences"] = [
            {"apiVersion": api, "kind": kind, "name": name, "controller": True, "uid": "u"}]
    return parse_pod(d)


def test_services_matching_the_pod_are_merged_and_others_ignored():
    idx = WorkloadIndex(services=[
        ServiceRecord("default", "a", {"app": "web"}),
        ServiceRecord("default", "b", {"tier": "front"}),
        ServiceRecord("default", "c", {"app": "db"}),        # does not match
        ServiceRecord("other", "d", {"app": "web"}),         # other namespace
        ServiceRecord("default", "e", None)])                # no selector: nothing
    reqs = idx.default_selector(_pod({"app": "web", "tier": "front", "x": "y"}))
    assert reqs == (("app", "In", ("web",)), ("tier", "In", ("front",)))


def test_no_service_or_controller_gives_no_requirement():
    idx = WorkloadIndex(services=[ServiceRecord("default", "a", {"app": "db"})])
    assert idx.default_selector(_pod({"app": "web"})) == ()
    assert not WorkloadIndex()
    assert idx


def test_replication_controller_map_is_merged():
    idx = WorkloadIndex(controllers=[
        ControllerRecord("ReplicationController", "default", "rc", {"app": "web", "v": "1"})])
    reqs = idx.default_selector(_pod({"app": "web", "v": "1"}, ("v1", "ReplicationController", "rc")))
    assert reqs == (("app", "In", ("web",)), ("v", "In", ("1",)))


def test_replicaset_expressions_are_added_and_invalid_ones_add_nothing():
    sel = {"matchLabels": {"app": "web"},
           "matchExpressions": [{"key": "env", "operator": "In", "values": ["b", "a"]}]}
    bad = {"matchExpressions": [{"key": "env", "operator": "In", "values": []}]}
    idx = WorkloadIndex(controllers=[
        ControllerRecord("ReplicaSet", "default", "rs", sel),
        ControllerRecord("StatefulSet", "default", "bad", bad),
        ControllerRecord("StatefulSet", "default", "null", None)])
    reqs = idx.default_selector(_pod({"app": "web", "env": "a"}, ("apps/v1", "ReplicaSet", "rs")))
    assert reqs == (("app", "In", ("web",)), ("env", "In", ("a", "b")))
    assert idx.default_selector(_pod({"env": "a"}, ("apps/v1", "StatefulSet", "bad"))) == ()
    assert idx.default_selector(_pod({"env": "a"}, ("apps/v1", "StatefulSet", "null"))) == ()


def test_owner_of_unknown_kind_or_wrong_namespace_is_ignored():
    idx = WorkloadIndex(controllers=[ControllerRecord("ReplicaSet", "default", "rs",
                                                      {"matchLabels": {"app": "web"}})])
    assert idx.default_selector(_pod({"app": "web"}, ("apps/v1", "Deployment", "rs"))) == ()
    assert idx.default_selector(_pod({"app": "web"}, ("extensions/v1beta1", "ReplicaSet", "rs"))) == ()
    assert idx.default_selector(
        _pod({"app": "web"}, ("apps/v1", "ReplicaSet", "rs"), namespace="other")) == ()


def test_memo_is_per_index():
    pod = _pod({"app": "web"})
    a = WorkloadIndex(services=[ServiceRecord("default", "a", {"app": "web"})])
    b = WorkloadIndex(services=[ServiceRecord("default", "b", {"other": "x"})])
    assert a.default_selector(pod) == (("app", "In", ("web",)),)
    assert b.default_selector(pod) == ()          # b's answer, not a's memo
    assert a.default_selector(pod) == (("app", "In", ("web",)),)
