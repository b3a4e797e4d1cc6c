"""``plugins.volume_common``: what the four volume plugins share.  Which
pods use volumes (and so are scheduled one by one), upstream's messages,
ephemeral claim ownership, row positions, and the filter contract: per-row
codes whose statuses explain each rejected node, and a node mask when
every node fits."""

from __future__ import annotations

import numpy as np
import pytest
from support.builders import node, pod

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.volumes import parse_persistent_volume_claim
from tensorsched.framework.plugins import volume_common as VC
from tensorsched.framework.plugins.volume_zone import VolumeZone
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Code
from tensorsched.framework.scheduler.cluster import build_cluster

ZONE = "topology.kubernetes.io/zone"


def with_volumes(*volumes, name="p", uid=""):
    d = pod(name, spec={"volumes": list(volumes)})
    if uid:
        d["metadata"]["uid"] = uid
    return parse_pod(d)


CLAIM = {"name": "data", "persistentVolumeClaim": {"claimName": "c"}}
EPHEMERAL = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}
DISK = {"name": "d", "gcePersistentDisk": {"pdName": "x"}}
EMPTY = {"name": "e", "emptyDir": {}}


@pytest.mark.parametrize("volumes, uses", [
    ((), False), ((EMPTY,), False), ((CLAIM,), True), ((EPHEMERAL,), True), ((DISK,), True),
    ((EMPTY, CLAIM), True)])
def test_uses_volumes_and_signing(volumes, uses):
    rec = with_volumes(*volumes)
    assert VC.uses_volumes(rec) is uses
    assert VC.uses_volumes(rec) is uses                     # kept in the memo
    plugin = VolumeZone()
    assert plugin.sign(rec) == (None if uses else ())
    assert plugin.run_keeps_skip(CycleContext(None, rec, None), "preFilter") is (not uses)


def test_claim_volumes_and_ephemeral_claim_names():
    rec = with_volumes(EMPTY, CLAIM, EPHEMERAL, DISK)
    vols = VC.claim_volumes(rec)
    assert [v.claim for v in vols] == ["c", "p-scratch"]
    assert [VC.is_ephemeral(v) for v in vols] == [False, True]


def test_messages_are_upstreams():
    assert VC.claim_missing_message("c") == 'persistentvolumeclaim "c" not found'
    rec = with_volumes(name="web")
    assert VC.not_owner_message("ns", "web-x", rec) == (
        "PVC ns/web-x was not created for pod default/web (pod is not owner)")


def _claim(controller_uid=None):
    meta = {"name": "p-scratch", "namespace": "default"}
    if controller_uid is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p",
                                    "uid": controller_uid, "controller": True}]
    return parse_persistent_volume_claim({"kind": "PersistentVolumeClaim", "metadata": meta,
                                          "spec": {"accessModes": ["ReadWriteOnce"]}})


def test_an_ephemeral_claim_is_owned_by_the_pod_with_its_uid():
    rec = with_volumes(uid="u1")
    assert VC.owned_by(_claim("u1"), rec)
    assert not VC.owned_by(_claim("u2"), rec)
    assert not VC.owned_by(_claim(), rec)
    assert not VC.owned_by(_claim(""), with_volumes())     # no uid on either side


def test_row_positions():
    state = build_cluster([node(f"n{i}") for i in range(4)]).state
    pos = VC.row_positions(state, np.array([3, 1], np.int64))
    assert pos.tolist() == [-1, 1, -1, 0]


def _zone_cycle(volume_zone):
    pv = {"kind": "PersistentVolume", "metadata": {"name": "v", "labels": {ZONE: volume_zone}},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}}
    pvc = {"kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "default"},
           "spec": {"volumeName": "v", "accessModes": ["ReadWriteOnce"]}}
    cluster = build_cluster([node("a", labels={ZONE: "a"}), node("b", labels={ZONE: "b"}),
                             node("c", labels={ZONE: "a"}), pv, pvc])
    rec = cluster.resolve(with_volumes(CLAIM))
    return cluster.state, CycleContext(cluster.state, rec, None), VolumeZone()


def test_the_filter_reads_per_row_codes_and_explains_them():
    state, ctx, plugin = _zone_cycle("a")
    st, names = plugin.pre_filter(ctx)
    assert st.ok and names is None
    rows = np.array([state.node_rows[n] for n in ("a", "b", "c")], np.int64)
    assert plugin.filter(ctx, rows).tolist() == [True, False, True]
    rejected = plugin.explain_status(ctx, state.node_rows["b"])
    assert rejected.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and rejected.plugin == "VolumeZone"
    assert plugin.explain_reasons(ctx, state.node_rows["b"]) == [
        "node(s) had no available volume zone"]
    ids, table = plugin.explain_many(ctx, rows)
    assert [table[i].ok for i in ids] == [True, False, True]
    key, ok = plugin.node_mask(ctx)            # VolumeZone reads no pods: a mask
    assert ok[rows].tolist() == [True, False, True]


def test_every_node_fitting_masks_no_node():
    state, ctx, plugin = _zone_cycle("a__b")
    plugin.pre_filter(ctx)
    rows = np.arange(3, dtype=np.int64)
    assert plugin.filter(ctx, rows).all()
    key, ok = plugin.node_mask(ctx)
    assert ok[rows].all()


def test_a_skipped_pod_fits_every_node_without_a_mask():
    state, ctx, plugin = _zone_cycle("a")
    ctx.pod = with_volumes(EMPTY)
    plugin.pre_filter(ctx)
    assert plugin.filter(ctx, np.arange(3, dtype=np.int64)).all()
    assert plugin.node_mask(ctx) == ("all", None)


def test_a_pod_without_volumes_is_skipped_by_prefilter():
    state, ctx, plugin = _zone_cycle("a")
    ctx.pod = with_volumes(EMPTY)
    st, _ = plugin.pre_filter(ctx)
    assert st.code == Code.SKIP
