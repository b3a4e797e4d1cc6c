"""A drain moves pods with their claims: a pod whose bound volume is zonal
goes only to its zone, and the report names the volumes that pin it."""

from __future__ import annotations

from tensorsched.framework.capacity.drain import removable_nodes
from tensorsched.framework.scheduler.cluster import build_cluster

ZONE = "topology.kubernetes.io/zone"


def _node(name, zone):
    return {"kind": "Node", "metadata": {"name": name, "labels": {ZONE: zone}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}


def _cluster(nodes):
    pv = {"kind": "PersistentVolume", "metadata": {"name": "pv-a"}, "spec": {
        "capacity": {"storage": "1Gi"}, "storageClassName": "zonal",
        "claimRef": {"namespace": "db", "name": "data-db-0"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": ZONE, "operator": "In", "values": ["a"]}]}]}}}, "status": {"phase": "Bound"}}
    pvc = {"kind": "PersistentVolumeClaim", "metadata": {
        "name": "data-db-0", "namespace": "db",
        "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {"storageClassName": "zonal", "volumeName": "pv-a"}}
    pod = {"kind": "Pod", "metadata": {"name": "db-0", "namespace": "db"}, "spec": {
        "nodeName": "a1", "containers": [{"name": "c", "image": "db", "resources": {
            "requests": {"cpu": "1"}}}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]}}
    return build_cluster(nodes + [pv, pvc, pod])


def test_zonal_pod_moves_within_its_zone():
    r = removable_nodes(_cluster([_node("a1", "a"), _node("a2", "a"), _node("b1", "b")]),
                        nodes=["a1"], backend="numpy")
    (n,) = r.nodes
    assert n.removable and n.moves == {"db/db-0": "a2"}
    assert n.pinned == {"db/db-0": ["pv-a"]}
    assert n.to_dict()["pinnedByVolumes"] == [{"pod": "db/db-0", "volumes": ["pv-a"]}]


def test_zonal_pod_cannot_leave_its_zone():
    r = removable_nodes(_cluster([_node("a1", "a"), _node("b1", "b")]), nodes=["a1"],
                        backend="numpy")
    (n,) = r.nodes
    assert not n.removable
    assert "node(s) had volume node affinity conflict" in n.reason
    assert n.pinned == {"db/db-0": ["pv-a"]}
