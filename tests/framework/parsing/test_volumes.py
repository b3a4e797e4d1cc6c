"""Storage objects: parsing, validation errors (object and field named),
a pod's volumes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import parse_objects, parse_pod
from tensorsched.framework.parsing.priorities import PriorityResolver
from tensorsched.framework.parsing.volumes import (
    READ_SOURCES,
    VOL_CLAIM,
    VOL_EPHEMERAL,
    pod_volumes,
    read_volumes,
)

SC = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "zonal"},
      "provisioner": "pd.csi.storage.gke.io", "volumeBindingMode": "WaitForFirstConsumer",
      "allowedTopologies": [{"matchLabelExpressions": [
          {"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}]}
PV = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
      "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
               "storageClassName": "zonal", "csi": {"driver": "d", "volumeHandle": "h1"},
               "claimRef": {"namespace": "db", "name": "data-0"},
               "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                   {"key": "topology.kubernetes.io/zone", "operator": "In",
                    "values": ["a"]}]}]}}},
      "status": {"phase": "Bound"}}
PVC = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
       "metadata": {"name": "data-0", "namespace": "db"},
       "spec": {"storageClassName": "zonal", "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "5Gi"}}, "volumeName": "pv-1"}}
CSINODE = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"},
           "spec": {"drivers": [{"name": "d", "nodeID": "n1", "allocatable": {"count": 3}}]}}


def test_storage_objects_parse_into_records():
    objs = parse_objects([SC, PV, PVC, CSINODE])
    (sc,), (pv,), (pvc,), (csi,) = (objs.storage_classes, objs.persistent_volumes,
                                    objs.persistent_volume_claims, objs.csi_nodes)
    assert sc.binding_mode == "WaitForFirstConsumer" and sc.provisionable
    assert sc.allowed_topologies == [[("topology.kubernetes.io/zone", ("a", "b"))]]
    assert pv.capacity == 10 * 2**30 and pv.claim_ref == ("db", "data-0", "")
    assert pv.csi_id(False) == ("d", "h1")
    assert pvc.request == 5 * 2**30 and pvc.volume_name == "pv-1" and not pvc.bind_completed
    assert csi.limits == {"d": 3}
    assert not objs.ignored_kinds


@pytest.mark.parametrize("obj,path,field,text", [
    (PV, ("spec", "capacity", "storage"), "spec.capacity.storage", "invalid quantity"),
    (PV, ("spec", "accessModes"), "spec.accessModes[0]", "unsupported value"),
    (PVC, ("spec", "volumeMode"), "spec.volumeMode", "must be one of"),
    (SC, ("volumeBindingMode",), "volumeBindingMode", "must be one of"),
    (CSINODE, ("spec", "drivers"), "spec.drivers[0].allocatable.count", "must be >= 0"),
])
def test_bad_fields_are_named(obj, path, field, text):
    import copy
    bad = copy.deepcopy(obj)
    target = bad
    for k in path[:-1]:
        target = target[k]
    value = {"spec.capacity.storage": "ten", "spec.accessModes[0]": ["Sometimes"],
             "spec.volumeMode": "Stream", "volumeBindingMode": "Later",
             "spec.drivers[0].allocatable.count": [{"name": "d", "allocatable": {"count": -1}}],
             }[field]
    target[path[-1]] = value
    with pytest.raises(ManifestError) as err:
        parse_objects([bad])
    assert err.value.field == field and text in err.value.problem
    assert bad["metadata"]["name"] in err.value.obj


def test_duplicate_volume_is_an_error():
    with pytest.raises(ManifestError, match="duplicate PersistentVolume"):
        parse_objects([PV, PV])


def test_pod_volumes():
    pod = parse_pod({"kind": "Pod", "metadata": {"name": "web-0", "namespace": "db"}, "spec": {
        "containers": [], "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            {"name": "disk", "gcePersistentDisk": {"pdName": "pd", "readOnly": True}},
            {"name": "cfg", "configMap": {"name": "c"}}]}})
    vols = pod_volumes(pod)
    assert [(v.kind, v.claim) for v in vols[:2]] == [(VOL_CLAIM, "data-0"),
                                                      (VOL_EPHEMERAL, "web-0-scratch")]
    assert vols[2].source_kind == "gcePersistentDisk" and vols[2].read_only
    assert vols[3].source_kind == ""


def test_pod_volume_without_claim_name_is_named():
    with pytest.raises(ManifestError) as err:
        parse_pod({"kind": "Pod", "metadata": {"name": "p"}, "spec": {
            "containers": [], "volumes": [{"name": "d", "persistentVolumeClaim": {}}]}})
    assert err.value.field == "spec.volumes[0].persistentVolumeClaim.claimName"
    assert err.value.obj == "Pod default/p"


def test_resolved_copy_keeps_the_volumes_parsed_with_the_pod():
    """Resolving a pod's priority makes a copy with its own memo; the
    volumes parsed with the pod go with it (not parsed a second time)."""
    pod = parse_pod({"kind": "Pod", "metadata": {"name": "db-0", "namespace": "db"},
                     "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": [
                         {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]}})
    parsed = pod_volumes(pod)
    resolved = PriorityResolver([]).resolve(pod)
    assert resolved is not pod and resolved.memo is not pod.memo
    assert pod_volumes(resolved) is parsed
    assert [v.claim for v in parsed] == ["data-db-0"]


_VOLUME = st.dictionaries(st.sampled_from(READ_SOURCES + ("name", "projected", "configMap", 1)),
                          st.sampled_from([None, {}, "x", 0]), max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.lists(st.one_of(_VOLUME, st.sampled_from([None, "v", 3, []])), max_size=5),
                 st.sampled_from([None, "v", {}])))
def test_read_volumes_keeps_the_volumes_the_plugins_read(volumes):
    """A volume stays when it is not a dict or one of the read sources is
    set (not None); the keys' quick test leaves the answer as it was."""
    want = volumes if type(volumes) is not list else [
        v for v in volumes
        if type(v) is not dict or any(v.get(k) is not None for k in READ_SOURCES)]
    assert read_volumes(volumes) == want
