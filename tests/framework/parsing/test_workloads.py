"""``parsing.workloads``: Services and the controllers whose selectors give
PodTopologySpread its default selector; a ReplicationController without a
selector takes its template's labels; ``controller_of`` finds a pod's
controlling owner."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.workloads import (
    OBJECT_KINDS, OWNER_KINDS, ControllerRecord, controller_of, parse_replica_set,
    parse_replication_controller, parse_service, parse_stateful_set)
from tensorsched.generators.clusters import pod_dict


def obj(kind, spec, name="w", namespace="ns"):
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_service_selector_absent_means_none():
    svc = parse_service(obj("Service", {"ports": [{"port": 80}]}))
    assert (svc.namespace, svc.name, svc.selector) == ("ns", "w", None)
    assert parse_service(obj("Service", {"selector": {"app": "a"}})).selector == {"app": "a"}
    assert parse_service(obj("Service", {"selector": {}})).selector == {}
    with pytest.raises(ManifestError) as info:
        parse_service(obj("Service", {"selector": {"app": 1}}))
    assert (info.value.obj, info.value.field) == ("Service ns/w", "spec.selector.app")


def test_replication_controller_selector_defaults_to_template_labels():
    tmpl = {"metadata": {"labels": {"app": "a", "tier": "t"}}}
    rc = parse_replication_controller(obj("ReplicationController", {"template": tmpl}))
    assert rc.selector == {"app": "a", "tier": "t"} and rc.kind == "ReplicationController"
    rc = parse_replication_controller(obj("ReplicationController",
                                          {"selector": {"app": "a"}, "template": tmpl}))
    assert rc.selector == {"app": "a"}
    assert rc.key == "ns/w"
    with pytest.raises(ManifestError) as info:
        parse_replication_controller(obj("ReplicationController",
                                         {"template": {"metadata": {"labels": []}}}))
    assert info.value.field == "spec.template.metadata.labels"


@pytest.mark.parametrize("parse, kind", [(parse_replica_set, "ReplicaSet"),
                                         (parse_stateful_set, "StatefulSet")])
def test_selector_owners_keep_the_selector_as_written(parse, kind):
    sel = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]}
    rec = parse(obj(kind, {"selector": sel}))
    assert isinstance(rec, ControllerRecord) and rec.kind == kind and rec.selector is sel
    assert parse(obj(kind, {})).selector is None
    # In without values is tolerated here (the workload index drops it)
    loose = {"matchExpressions": [{"key": "app", "operator": "In"}]}
    assert parse(obj(kind, {"selector": loose})).selector is loose
    with pytest.raises(ManifestError) as info:
        parse(obj(kind, {"selector": {"matchExpressions": [{"key": "app", "operator": "Is"}]}}))
    assert (info.value.obj, info.value.field) == (f"{kind} ns/w",
                                                  "spec.selector.matchExpressions[0].operator")


def test_a_wrong_kind_is_refused():
    with pytest.raises(ManifestError) as info:
        parse_replica_set(obj("StatefulSet", {}))
    assert info.value.field == "kind"


def test_controller_of_reads_the_controlling_owner_reference():
    d = pod_dict("p")
    d["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": "n"},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}]
    assert controller_of(parse_pod(d)) == ("apps/v1", "ReplicaSet", "rs")
    assert ("apps/v1", "ReplicaSet") in OWNER_KINDS
    assert controller_of(parse_pod(pod_dict("q"))) is None
    d["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                         "name": "rs", "controller": False}]
    assert controller_of(parse_pod(d)) is None                  # controller must be true
    # an unparsed object: only a literal true counts
    loose = SimpleNamespace(obj={"metadata": {"ownerReferences": [
        "junk", {"kind": "ReplicaSet", "controller": "true"}, {"controller": True}]}})
    assert controller_of(loose) == ("", "", "")
    assert controller_of(object()) is None


def test_object_kinds_key_objects_by_namespace_and_name():
    fields = {kind.kind: name for kind, name in OBJECT_KINDS}
    assert fields == {"Service": "services", "ReplicationController": "replication_controllers",
                      "ReplicaSet": "replica_sets", "StatefulSet": "stateful_sets"}
    for kind, _ in OBJECT_KINDS:
        rec = kind.parse(obj(kind.kind, {}, name="x", namespace="a"))
        assert kind.key(rec) == "a/x" and kind.label.format(kind.key(rec)) == f"{kind.kind} a/x"
