"""Pods with volumes through the scheduler: missing and unbound claims stay
pending with upstream's message, WaitForFirstConsumer claims are bound to
a volume or provisioned on the chosen node (later pods see the binding), a
rescheduled StatefulSet pod keeps its volume's zone, and Unreserve undoes a
binding exactly."""

from __future__ import annotations

import pytest
from support.backends import backend_params

from tensorsched.generators.clusters import statefulsets
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state.volumes import volume_catalog

ZONE = "topology.kubernetes.io/zone"


def node(name, zone):
    return {"kind": "Node", "metadata": {"name": name, "labels": {
        ZONE: zone, "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def pod(name, claim=None, ns="db"):
    spec = {"containers": [{"name": "c", "image": "db",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    if claim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def claim(name, cls="zonal", ns="db", size="10Gi"):
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns,
                                                          "uid": f"uid-{name}"},
            "spec": {"storageClassName": cls, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": size}}}}


CLASSES = [
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "zonal"},
     "provisioner": "pd.csi.storage.gke.io", "volumeBindingMode": "WaitForFirstConsumer"},
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "now"},
     "provisioner": "pd.csi.storage.gke.io", "volumeBindingMode": "Immediate"},
]
NODES = [node("a1", "a"), node("a2", "a"), node("b1", "b"), node("b2", "b")]


@pytest.mark.parametrize("backend", backend_params(("numpy", "numba")))
def test_missing_and_immediate_claims_stay_pending(backend):
    cluster = build_cluster(NODES + CLASSES + [claim("late", cls="now")])
    out, _ = Scheduler(cluster, backend).schedule_pending(
        [pod("db-0", "data-db-0"), pod("db-1", "late"), pod("web")])
    by = {b.pod: b for b in out}
    assert by["db/web"].node is not None
    assert by["db/db-0"].node is None
    assert 'persistentvolumeclaim "data-db-0" not found' in by["db/db-0"].message
    assert by["db/db-1"].node is None
    assert "pod has unbound immediate PersistentVolumeClaims" in by["db/db-1"].message


@pytest.mark.parametrize("backend", backend_params(("numpy", "numba")))
def test_statefulset_keeps_its_zone(backend):
    pv = {"kind": "PersistentVolume", "metadata": {"name": "pv-b"}, "spec": {
        "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
        "storageClassName": "zonal", "csi": {"driver": "pd.csi.storage.gke.io",
                                             "volumeHandle": "disk-b"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": ZONE, "operator": "In", "values": ["b"]}]}]}}},
        "status": {"phase": "Available"}}
    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE] for n in NODES}
    static = 0
    # every node fits both pods: the seeded tie rule picks their nodes, so a
    # few seeds see db-0 both in zone b (the static volume) and elsewhere
    for seed in range(4):
        cluster = build_cluster(NODES + CLASSES + [pv, claim("data-db-0"),
                                                   claim("data-db-1")])
        sched = Scheduler(cluster, backend, seed)
        out, _ = sched.schedule_pending([pod("db-0", "data-db-0"), pod("db-1", "data-db-1")])
        nodes = {b.pod: b.node for b in out}
        cat = volume_catalog(cluster.state)
        # db-0 takes the static volume of zone b when it lands there; any
        # other claim is provisioned in its pod's zone
        if zone_of[nodes["db/db-0"]] == "b":
            static += 1
            assert cat.claims["db/data-db-0"].volume_name == "pv-b"
            assert cat.pvs["pv-b"].claim_ref[:2] == ("db", "data-db-0")
        for key, name in (("db/db-0", "db/data-db-0"), ("db/db-1", "db/data-db-1")):
            volume = cat.claims[name].volume_name
            if volume != "pv-b":
                assert cat.pvs[volume].labels[ZONE] == zone_of[nodes[key]]
        # the pods go away (a drain, a crash) and come back: same zones
        for key in ("db/db-0", "db/db-1"):
            cluster.state.remove_pod(key)
        again, _ = sched.schedule_pending([pod("db-0", "data-db-0"), pod("db-1", "data-db-1")])
        for b in again:
            assert zone_of[b.node] == zone_of[nodes[b.pod]]
    assert 0 < static < 4


def test_unreserve_undoes_the_binding():
    cluster = build_cluster(NODES + CLASSES + [claim("data-db-0")])
    p = cluster.resolve(pod("db-0", "data-db-0"))
    fw = cluster.framework_for(p, "numpy")
    cat = volume_catalog(cluster.state)
    before = (dict(cat.claims), dict(cat.pvs))
    vb = fw.plugins["VolumeBinding"]
    ctx = CycleContext(cluster.state, p, fw)
    assert vb.pre_filter(ctx)[0].ok
    assert vb.reserve(ctx, "a1").ok
    assert cat.claims["db/data-db-0"].volume_name
    vb.unreserve(ctx, "a1")
    assert (cat.claims, cat.pvs) == before


@pytest.mark.parametrize("backend", backend_params(("numpy", "numba")))
def test_provisioning_topology_in_failed_scheduling_message(backend):
    """A claim whose class can provision only in zone c: every node is
    rejected by VolumeBinding, except the tainted one, which TaintToleration
    (earlier in the profile) rejects first."""
    tainted = node("a3", "a")
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
    cls = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
           "metadata": {"name": "zone-c"}, "provisioner": "pd.csi.storage.gke.io",
           "volumeBindingMode": "WaitForFirstConsumer",
           "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": ["c"]}]}]}
    cluster = build_cluster(NODES + [tainted, cls, claim("data-db-0", cls="zone-c")])
    out, _ = Scheduler(cluster, backend).schedule_pending([pod("db-0", "data-db-0")])
    assert out[0].node is None
    assert out[0].message.startswith(
        "0/5 nodes are available: 1 node(s) had untolerated taint {dedicated: x}, "
        "4 node(s) didn't find available persistent volumes to bind.")
    rec = explain_pod(cluster, pod("db-0", "data-db-0"), backend=backend)
    assert rec["filter"]["a3"]["plugin"] == "TaintToleration"
    assert {rec["filter"][n]["plugin"] for n in ("a1", "a2", "b1", "b2")} == {"VolumeBinding"}


def test_statefulsets_place_alike_on_numpy_and_numba():
    """The bench's StatefulSet-per-zone workload, small: the same bindings on
    both backends, every pod in its class's zone."""
    def run(backend):
        objs, pods = statefulsets(60, 30)
        cluster = build_cluster(objs)
        out, _ = Scheduler(cluster, backend).schedule_pending(pods)
        return [(b.pod, b.node) for b in out], cluster

    a, cluster = run("numpy")
    b, _ = run("numba")
    assert a == b and all(node is not None for _, node in a)
    zone = {n.name: n.labels[ZONE] for n in cluster.objects.nodes}
    for key, node_name in a:
        assert zone[node_name] == "zone-" + key.split("-")[1]


def _csi_pv(name, claim_name, handle):
    return {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": {
        "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce", "ReadWriteOncePod"],
        "storageClassName": "zonal", "claimRef": {"namespace": "db", "name": claim_name},
        "csi": {"driver": "pd.csi.storage.gke.io", "volumeHandle": handle}},
        "status": {"phase": "Bound"}}


def _bound_claim(name, pv, modes=("ReadWriteOnce",)):
    c = claim(name)
    c["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    c["spec"].update(volumeName=pv, accessModes=list(modes))
    return c


@pytest.mark.parametrize("backend", backend_params(("numpy", "numba")))
def test_attach_limits_follow_the_pods_placed(backend):
    """One attachable volume per node (CSINode allocatable.count 1): the
    second pod with a volume goes to the other node, the third fits nowhere."""
    nodes = [node("a1", "a"), node("a2", "a")]
    csinodes = [{"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                 "metadata": {"name": n}, "spec": {"drivers": [
                     {"name": "pd.csi.storage.gke.io", "nodeID": n,
                      "allocatable": {"count": 1}}]}} for n in ("a1", "a2")]
    objs = nodes + CLASSES + csinodes
    for i in range(3):
        objs += [_csi_pv(f"pv-{i}", f"data-{i}", f"disk-{i}"),
                 _bound_claim(f"data-{i}", f"pv-{i}")]
    cluster = build_cluster(objs)
    out, _ = Scheduler(cluster, backend).schedule_pending(
        [pod(f"db-{i}", f"data-{i}") for i in range(3)])
    placed = [b.node for b in out]
    assert sorted(placed[:2]) == ["a1", "a2"] and placed[2] is None
    assert "2 node(s) exceed max volume count" in out[2].message


@pytest.mark.parametrize("backend", backend_params(("numpy", "numba")))
def test_read_write_once_pod_claim_is_used_once(backend):
    objs = NODES + CLASSES + [_csi_pv("pv-x", "solo", "disk-x"),
                              _bound_claim("solo", "pv-x", ("ReadWriteOncePod",))]
    cluster = build_cluster(objs)
    out, _ = Scheduler(cluster, backend).schedule_pending(
        [pod("first", "solo"), pod("second", "solo")])
    assert out[0].node is not None and out[1].node is None
    assert ("node has pod using PersistentVolumeClaim with the same name and "
            "ReadWriteOncePod access mode") in out[1].message
