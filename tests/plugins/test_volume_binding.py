"""VolumeBinding alone (PreFilter/Filter), after upstream's
volume_binding_test.go, plus the module's helpers.

PreFilter: no claim -> Skip; a missing claim, a Lost claim, an unbound
Immediate claim -> UnschedulableAndUnresolvable; an unknown class -> Error.
Filter: a bound claim's volume must allow the node ('node(s) had volume
node affinity conflict'); a delayed (WaitForFirstConsumer) claim needs a
matching volume reachable from the node or a class that can provision
there ('node(s) didn't find available persistent volumes to bind').
Host filter: numpy only."""

from __future__ import annotations

import pytest
from support.builders import node, one_plugin_config, pod, run

from tensorsched.framework.parsing.volumes import parse_persistent_volume, parse_storage_class
from tensorsched.framework.plugins.volume_binding import (
    B_BIND_CONFLICT, B_ERROR, B_NODE_CONFLICT, B_PV_MISSING, ERR_BIND_CONFLICT,
    ERR_NODE_CONFLICT, ERR_PV_NOT_EXIST, ERR_UNBOUND_IMMEDIATE, GKE_ZONE, _status_of,
    selector_terms, topology_terms, translated_gce_affinity)
from tensorsched.framework.runtime.status import Code

VB = "VolumeBinding"
ZONE = "topology.kubernetes.io/zone"


def unresolvable(*reasons):
    return {"code": "UnschedulableAndUnresolvable", "plugin": VB, "reasons": list(reasons)}


def storage_class(name, mode="WaitForFirstConsumer", provisioner="example.com/disk",
                  zones=None):
    obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
           "metadata": {"name": name}, "provisioner": provisioner,
           "volumeBindingMode": mode}
    if zones:
        obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE,
                                                                "values": zones}]}]
    return obj


def pv(name, zone=None, cls="wffc", size="10Gi", claim=None):
    spec = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
            "storageClassName": cls, "csi": {"driver": "example.com/disk",
                                             "volumeHandle": name}}
    if zone:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": ZONE, "operator": "In", "values": [zone]}]}]}}
    if claim:
        spec["claimRef"] = {"namespace": "default", "name": claim}
    return {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec,
            "status": {"phase": "Bound" if claim else "Available"}}


def pvc(name, cls="wffc", volume=None, size="5Gi", phase=None):
    obj = {"kind": "PersistentVolumeClaim",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"storageClassName": cls, "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": size}}}}
    if volume:
        obj["spec"]["volumeName"] = volume
        obj["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def using(*claims):
    return pod("p", spec={"volumes": [{"name": f"v{i}", "persistentVolumeClaim": {
        "claimName": c}} for i, c in enumerate(claims)]})


NODES = [node("a1", labels={ZONE: "a"}), node("b1", labels={ZONE: "b"})]


def test_a_pod_without_claims_is_skipped():
    rec = run(NODES, pod("p"), one_plugin_config(VB), "numpy")
    assert rec["filter"] == {} and sorted(rec["feasible"]) == ["a1", "b1"]


def test_a_bound_claims_volume_must_allow_the_node():
    objs = NODES + [storage_class("wffc"), pv("v", zone="a", claim="c"), pvc("c", volume="v")]
    rec = run(objs, using("c"), one_plugin_config(VB), "numpy")
    assert rec["filter"] == {"b1": unresolvable(ERR_NODE_CONFLICT)}
    assert rec["feasible"] == ["a1"]


def test_a_bound_claims_missing_volume_rejects_every_node():
    objs = NODES + [storage_class("wffc"), pvc("c", volume="gone")]
    rec = run(objs, using("c"), one_plugin_config(VB), "numpy")
    assert rec["filter"] == {"a1": unresolvable(ERR_PV_NOT_EXIST),
                             "b1": unresolvable(ERR_PV_NOT_EXIST)}


def test_a_delayed_claim_takes_a_volume_its_node_reaches():
    # no provisioner: only the static volume in zone b can serve the claim
    objs = NODES + [storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
                    pv("v", zone="b"), pvc("c")]
    rec = run(objs, using("c"), one_plugin_config(VB), "numpy")
    assert rec["filter"] == {"a1": unresolvable(ERR_BIND_CONFLICT)}
    assert rec["selected"] == "b1"


def test_a_too_small_volume_does_not_match():
    objs = NODES + [storage_class("wffc", provisioner="kubernetes.io/no-provisioner"),
                    pv("v", zone="b", size="1Gi"), pvc("c", size="5Gi")]
    rec = run(objs, using("c"), one_plugin_config(VB), "numpy")
    assert rec["feasible"] == []


def test_a_provisioner_restricted_by_allowed_topologies():
    objs = NODES + [storage_class("wffc", zones=["a"]), pvc("c")]
    rec = run(objs, using("c"), one_plugin_config(VB), "numpy")
    assert rec["filter"] == {"b1": unresolvable(ERR_BIND_CONFLICT)}
    assert rec["feasible"] == ["a1"]


@pytest.mark.parametrize("objects, claim, code, reason", [
    ([], "nope", "UnschedulableAndUnresolvable", 'persistentvolumeclaim "nope" not found'),
    ([storage_class("now", mode="Immediate"), pvc("c", cls="now")], "c",
     "UnschedulableAndUnresolvable", ERR_UNBOUND_IMMEDIATE),
    ([storage_class("wffc"), pvc("c", volume="v", phase="Lost")], "c",
     "UnschedulableAndUnresolvable",
     'persistentvolumeclaim "c" bound to non-existent persistentvolume "v"'),
    ([pvc("c", cls="gone")], "c", "Error", 'storageclass.storage.k8s.io "gone" not found'),
])
def test_prefilter_failures(objects, claim, code, reason):
    rec = run(NODES + objects, using(claim), one_plugin_config(VB), "numpy")
    assert rec["feasible"] == []
    statuses = list(rec["filter"].values())
    assert statuses and all(s["code"] == code and s["reasons"] == [reason] for s in statuses)


# ----------------------------------------------------------------- helpers

def test_status_of_lists_reasons_in_upstreams_order():
    st = _status_of(B_PV_MISSING | B_NODE_CONFLICT | B_BIND_CONFLICT)
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == (ERR_NODE_CONFLICT, ERR_BIND_CONFLICT, ERR_PV_NOT_EXIST)
    assert _status_of(B_ERROR | B_NODE_CONFLICT).code == Code.ERROR


def test_a_gce_disks_zone_labels_become_a_gke_zone_requirement():
    gce = {"kind": "PersistentVolume", "metadata": {"name": "g", "labels": {ZONE: "a__b"}},
           "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "gcePersistentDisk": {"pdName": "d"}}}
    terms = translated_gce_affinity(parse_persistent_volume(gce))
    assert terms == [{"matchExpressions": [{"key": GKE_ZONE, "operator": "In",
                                            "values": ["a", "b"]}]}]
    plain = parse_persistent_volume(pv("v", zone="a"))
    assert translated_gce_affinity(plain) == plain.node_affinity


def test_allowed_topologies_and_label_selectors_as_node_selector_terms():
    cls = parse_storage_class(storage_class("s", zones=["a", "b"]))
    assert topology_terms(cls) == [{"matchExpressions": [
        {"key": ZONE, "operator": "In", "values": ["a", "b"]}]}]
    assert topology_terms(parse_storage_class(storage_class("t"))) == []
    assert selector_terms({}) is None
    assert selector_terms({"matchLabels": {"k": "v"}, "matchExpressions": [
        {"key": "x", "operator": "Exists"}]}) == [{"matchExpressions": [
            {"key": "k", "operator": "In", "values": ["v"]}, {"key": "x", "operator": "Exists"}]}]
