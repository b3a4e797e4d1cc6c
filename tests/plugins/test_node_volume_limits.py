"""NodeVolumeLimits alone (PreFilter/Filter), after upstream's
csi_test.go.

Each volume counts once per node as ``<driver>/<handle>``; a node whose
CSINode gives the driver an ``allocatable.count`` rejects a pod whose new
volumes (those not attached there yet) would take the node past it:
Unschedulable 'node(s) exceed max volume count'.  A node without a CSINode
or without a count for the driver fits.  The pod's missing claim fails
every node (UnschedulableAndUnresolvable, 'looking up PVC ...').  A pod
without claims or migratable disks is skipped.  Host filter: numpy only."""

from __future__ import annotations

import pytest
from support.builders import node, one_plugin_config, pod, run

NVL = "NodeVolumeLimits"
DRIVER = "pd.csi.storage.gke.io"
OVER = {"code": "Unschedulable", "plugin": NVL, "reasons": ["node(s) exceed max volume count"]}


def csi_node(name, count, driver=DRIVER):
    entry = {"name": driver, "nodeID": name}
    if count is not None:
        entry["allocatable"] = {"count": count}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [entry]}}


def bound_claim(i, driver=DRIVER):
    """Claim c<i> bound to volume pv<i> (CSI handle h<i>)."""
    pv = {"kind": "PersistentVolume", "metadata": {"name": f"pv{i}"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
        "csi": {"driver": driver, "volumeHandle": f"h{i}"},
        "claimRef": {"namespace": "default", "name": f"c{i}"}}, "status": {"phase": "Bound"}}
    pvc = {"kind": "PersistentVolumeClaim",
           "metadata": {"name": f"c{i}", "namespace": "default",
                        "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
           "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": f"pv{i}",
                    "resources": {"requests": {"storage": "1Gi"}}},
           "status": {"phase": "Bound"}}
    return [pv, pvc]


def using(name, claims, on=None):
    return pod(name, on=on, spec={"volumes": [
        {"name": f"v{j}", "persistentVolumeClaim": {"claimName": c}}
        for j, c in enumerate(claims)]})


def cluster(limit_n0=2, limit_n1=2):
    objs = [node("n0"), node("n1"), node("n2"), csi_node("n0", limit_n0),
            csi_node("n1", limit_n1)]
    for i in range(5):
        objs += bound_claim(i)
    objs += [using("a", ["c0", "c1"], on="n0"), using("b", ["c2"], on="n1")]
    return objs


def test_a_new_volume_past_the_limit_is_rejected():
    rec = run(cluster(), using("p", ["c3"]), one_plugin_config(NVL), "numpy")
    # n0 holds 2 of 2; n1 holds 1 of 2; n2 has no CSINode (no limit)
    assert rec["filter"] == {"n0": OVER}
    assert sorted(rec["feasible"]) == ["n1", "n2"]


def test_two_new_volumes_count_twice():
    rec = run(cluster(), using("p", ["c3", "c4"]), one_plugin_config(NVL), "numpy")
    assert rec["filter"] == {"n0": OVER, "n1": OVER} and rec["feasible"] == ["n2"]


def test_a_volume_already_attached_to_the_node_is_not_new():
    # c1 is attached to n0 (pod a uses it): no new volume there
    rec = run(cluster(), using("p", ["c1"]), one_plugin_config(NVL), "numpy")
    assert rec["filter"] == {} and sorted(rec["feasible"]) == ["n0", "n1", "n2"]


def test_a_csinode_without_a_count_does_not_limit():
    objs = cluster()
    objs[3] = csi_node("n0", None)
    rec = run(objs, using("p", ["c3", "c4"]), one_plugin_config(NVL), "numpy")
    assert rec["filter"] == {"n1": OVER}


def test_another_drivers_limit_does_not_apply():
    objs = cluster() + bound_claim(9, driver="ebs.csi.aws.com")
    rec = run(objs, using("p", ["c9"]), one_plugin_config(NVL), "numpy")
    assert rec["filter"] == {}


def test_a_missing_claim_fails_every_node():
    rec = run(cluster(), using("p", ["nope"]), one_plugin_config(NVL), "numpy")
    want = {"code": "UnschedulableAndUnresolvable", "plugin": NVL,
            "reasons": ['looking up PVC default/nope: persistentvolumeclaim "nope" not found']}
    assert rec["filter"] == {n: want for n in ("n0", "n1", "n2")}


def test_a_pod_without_volumes_is_skipped():
    rec = run(cluster(limit_n0=0, limit_n1=0), pod("p"), one_plugin_config(NVL), "numpy")
    assert rec["filter"] == {} and len(rec["feasible"]) == 3
