"""VolumeRestrictions alone (PreFilter/Filter), after upstream's
volume_restrictions_test.go.

In-tree disks two pods on one node cannot share (GCE PD: same pdName
unless both read-only; AWS EBS: same volumeID, read-only or not; iSCSI:
same IQN unless both read-only; RBD: a common monitor, same pool and image
unless both read-only) -> 'node(s) had no available disk'; a
ReadWriteOncePod claim another pod already uses -> every node 'node has pod
using PersistentVolumeClaim with the same name and ReadWriteOncePod access
mode'.  Both Unschedulable (preemption may free them).  A missing claim is
UnschedulableAndUnresolvable.  Host filter: numpy only."""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, pod, run

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.volumes import pod_volumes
from tensorsched.framework.plugins.volume_restrictions import disks_conflict

VR = "VolumeRestrictions"
DISK = {"code": "Unschedulable", "plugin": VR, "reasons": ["node(s) had no available disk"]}
RWOP = {"code": "Unschedulable", "plugin": VR, "reasons": [
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod "
    "access mode"]}


def gce(name, ro=False):
    return {"gcePersistentDisk": {"pdName": name, "readOnly": ro}}


def ebs(vid, ro=False):
    return {"awsElasticBlockStore": {"volumeID": vid, "readOnly": ro}}


def iscsi(iqn, ro=False):
    return {"iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": ro}}


def rbd(monitors, image, pool=None, ro=False):
    src = {"monitors": monitors, "image": image, "readOnly": ro}
    if pool:
        src["pool"] = pool
    return {"rbd": src}


def with_volumes(name, sources, on=None):
    return pod(name, on=on, spec={"volumes": [{"name": f"v{i}", **s}
                                               for i, s in enumerate(sources)]})


CASES = [
    case(name="same GCE PD", used=gce("d1"), wanted=gce("d1"), conflict=True),
    case(name="other GCE PD", used=gce("d1"), wanted=gce("d2"), conflict=False),
    case(name="GCE PD both read-only", used=gce("d1", True), wanted=gce("d1", True),
         conflict=False),
    case(name="GCE PD one read-only", used=gce("d1", True), wanted=gce("d1"), conflict=True),
    case(name="same EBS even read-only", used=ebs("e1", True), wanted=ebs("e1", True),
         conflict=True),
    case(name="other EBS", used=ebs("e1"), wanted=ebs("e2"), conflict=False),
    case(name="same IQN", used=iscsi("iqn.a"), wanted=iscsi("iqn.a"), conflict=True),
    case(name="same IQN both read-only", used=iscsi("iqn.a", True),
         wanted=iscsi("iqn.a", True), conflict=False),
    case(name="RBD common monitor same image", used=rbd(["m1", "m2"], "img"),
         wanted=rbd(["m2", "m3"], "img"), conflict=True),
    case(name="RBD no common monitor", used=rbd(["m1"], "img"), wanted=rbd(["m2"], "img"),
         conflict=False),
    case(name="RBD other pool", used=rbd(["m1"], "img", "p1"), wanted=rbd(["m1"], "img", "p2"),
         conflict=False),
    # the pool defaults to "rbd"
    case(name="RBD default pool", used=rbd(["m1"], "img"), wanted=rbd(["m1"], "img", "rbd"),
         conflict=True),
    case(name="RBD both read-only", used=rbd(["m1"], "img", ro=True),
         wanted=rbd(["m1"], "img", ro=True), conflict=False),
    case(name="GCE PD and EBS of one name", used=gce("x"), wanted=ebs("x"), conflict=False),
]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_disk_conflicts(case):
    objects = [node("a"), node("b"), with_volumes("e", [case["used"]], on="a")]
    rec = run(objects, with_volumes("p", [case["wanted"]]), one_plugin_config(VR), "numpy")
    if case["conflict"]:
        assert rec["filter"] == {"a": DISK} and rec["feasible"] == ["b"]
    else:
        assert rec["filter"] == {} and sorted(rec["feasible"]) == ["a", "b"]


def test_disks_conflict_is_symmetric_over_the_cases():
    def vol(source):
        (v,) = pod_volumes(parse_pod(with_volumes("x", [source])))
        return v

    for c in CASES:
        a, b = vol(c["used"]), vol(c["wanted"])
        assert disks_conflict(a, b) == disks_conflict(b, a) == c["conflict"], c["name"]
    other = vol({"nfs": {"server": "s", "path": "/"}})
    assert not disks_conflict(other, other)          # not a disk kind


def claim(name, modes=("ReadWriteOncePod",)):
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"accessModes": list(modes), "volumeName": f"pv-{name}",
                     "resources": {"requests": {"storage": "1Gi"}}}}


def with_claim(name, claim_name, on=None):
    return pod(name, on=on, spec={"volumes": [{"name": "d", "persistentVolumeClaim": {
        "claimName": claim_name}}]})


def test_a_read_write_once_pod_claim_in_use_rejects_every_node():
    objects = [node("a"), node("b"), claim("c"), with_claim("user", "c", on="a")]
    rec = run(objects, with_claim("p", "c"), one_plugin_config(VR), "numpy")
    assert rec["filter"] == {"a": RWOP, "b": RWOP} and rec["selected"] is None


def test_an_unused_or_shared_mode_claim_fits():
    objects = [node("a"), claim("c"), claim("rwo", ("ReadWriteOnce",)),
               with_claim("user", "rwo", on="a")]
    for wanted in ("c", "rwo"):
        rec = run(objects, with_claim("p", wanted), one_plugin_config(VR), "numpy")
        assert rec["filter"] == {} and rec["feasible"] == ["a"]


def test_a_missing_claim_is_unresolvable():
    rec = run([node("a")], with_claim("p", "nope"), one_plugin_config(VR), "numpy")
    assert rec["filter"] == {"a": {"code": "UnschedulableAndUnresolvable", "plugin": VR,
                                   "reasons": ['persistentvolumeclaim "nope" not found']}}
