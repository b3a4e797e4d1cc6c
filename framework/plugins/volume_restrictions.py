"""VolumeRestrictions: in-tree disks two pods on a node cannot share, and
ReadWriteOncePod claims already in use (upstream ``volumerestrictions``).

PreFilter: every claim of the pod must exist ('persistentvolumeclaim "<name>"
not found'); counts the pod's ReadWriteOncePod claims that a bound pod
already uses; Skip when that count is 0 and the pod has no GCE PD, AWS EBS,
RBD or iSCSI volume.  Filter: 'node(s) had no available disk' when a pod on
the node uses the same disk (GCE PD: same pdName unless both read-only; AWS
EBS: same volumeID; RBD: a common monitor, same pool and image unless both
read-only; iSCSI: same IQN unless both read-only), then 'node has pod using
PersistentVolumeClaim with the same name and ReadWriteOncePod access mode'
on every node when the count is positive (both Unschedulable: preemption
may free them).
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.parsing.volumes import PodVolume, pod_volumes
from tensorsched.framework.runtime.cluster_events import POD_DELETE
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.kernels import layout as L

from .volume_common import (
    DISK_KINDS,
    VolumeFilter,
    claim_missing_message,
    claim_volumes,
    row_positions,
)

NAME = names.VOLUME_RESTRICTIONS

ERR_DISK_CONFLICT = "node(s) had no available disk"
ERR_RWOP_CONFLICT = ("node has pod using PersistentVolumeClaim with the same name and "
                     "ReadWriteOncePod access mode")


def disks_conflict(a: PodVolume, b: PodVolume) -> bool:
    """Upstream's isVolumeConflict for one pair of in-tree volumes."""
    if a.source_kind != b.source_kind or a.source_kind not in DISK_KINDS:
        return False
    both_ro = a.read_only and b.read_only
    kind = a.source_kind
    if kind == "gcePersistentDisk":
        return a.field("pdName") == b.field("pdName") and not both_ro
    if kind == "awsElasticBlockStore":
        return a.field("volumeID") == b.field("volumeID")
    if kind == "iscsi":
        return a.field("iqn") == b.field("iqn") and not both_ro
    # rbd
    mons_a, mons_b = set(a.field("monitors") or ()), set(b.field("monitors") or ())
    return (bool(mons_a & mons_b) and a.field("pool", "rbd") == b.field("pool", "rbd")
            and a.field("image") == b.field("image") and not both_ro)


class VolumeRestrictions(VolumeFilter):
    name = names.VOLUME_RESTRICTIONS
    events = frozenset({POD_DELETE})
    reads_pods = True
    reason_bit = int(L.HOST_BIT_VOLUME_RESTRICTIONS)

    def prepare(self, ctx, cat, data):
        pod = ctx.pod
        rwop = 0
        for v in claim_volumes(pod):
            claim = cat.claim(pod.namespace, v.claim)
            if claim is None:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                              (claim_missing_message(v.claim),))
            if "ReadWriteOncePod" in claim.access_modes and cat.claim_users.get(claim.key, 0):
                rwop += 1
        disks = [v for v in pod_volumes(pod) if v.source_kind in DISK_KINDS]
        data["rwop"], data["disks"] = rwop, disks
        if rwop == 0 and not disks:
            return SKIP
        return None

    def codes(self, ctx, data, rows):
        cat = data["catalog"]
        out = np.zeros(rows.shape[0], np.int64)
        disks = data["disks"]
        if disks:
            where = row_positions(ctx.state, rows)
            for row, pods in cat.row_pods.items():
                i = int(where[row]) if row < where.shape[0] else -1
                if i < 0 or not pods:
                    continue
                if any(disks_conflict(mine, theirs) for p in pods.values()
                       for theirs in pod_volumes(p) for mine in disks):
                    out[i] = 1
        if data["rwop"] > 0:
            out[out == 0] = 2
        return out, [Status(Code.UNSCHEDULABLE, (ERR_DISK_CONFLICT,)),
                     Status(Code.UNSCHEDULABLE, (ERR_RWOP_CONFLICT,))]


def new(args, handle):
    return VolumeRestrictions(handle)
