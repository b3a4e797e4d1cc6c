"""NodeVolumeLimits: CSI attach limits per driver (upstream
``nodevolumelimits`` CSILimits).

Every volume counts as the unique name ``<driver>/<handle>``: a bound
claim's CSI volume (driver, volumeHandle), or its in-tree volume of a
migratable plugin (AWS EBS, GCE PD, Azure Disk, Cinder) translated to the
plugin's CSI driver when migration is on (the node has a CSINode); an
unbound claim (or one whose volume is missing) counts through its
StorageClass's provisioner with the handle ``<namespace>/<claim>``; an
inline migratable volume likewise.  Anything else does not count.

PreFilter: Skip unless the pod has a claim, an ephemeral volume or an
inline migratable volume.  Filter: a node without a CSINode, or whose
CSINode gives no ``allocatable.count`` for the pod's drivers, fits.  On the
others the volumes of the pods on the node (plus VolumeAttachments on the
node whose volume no pod there uses) are attached; the pod's volumes that
are not attached yet are new; attached + new above a driver's limit ->
Unschedulable 'node(s) exceed max volume count'.  The incoming pod's missing
claim -> UnschedulableAndUnresolvable 'looking up PVC <ns>/<claim>: ...';
an ephemeral claim the pod does not own -> Error.

All nodes at once: the new set is the same on every node with a CSINode;
only nodes holding pods with volumes or VolumeAttachments differ from it.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.objects.volumes import (
    IN_TREE_TO_CSI,
    MIGRATABLE,
    VOL_EPHEMERAL,
    VOL_OTHER,
    pod_volumes,
)
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.kernels import layout as L

from . import names
from .volume_common import (
    VolumeFilter,
    claim_missing_message,
    not_owner_message,
    owned_by,
    row_positions,
)

NAME = names.NODE_VOLUME_LIMITS

ERR_MAX_VOLUMES = "node(s) exceed max volume count"


class _Fail(Exception):
    def __init__(self, status: Status):
        self.status = status


def pod_volume_ids(cat, pod, migrated: bool, strict: bool) -> dict[str, str]:
    """{unique name: driver} of the volumes of ``pod`` that count against
    CSI limits on a node where in-tree migration is ``migrated``.  With
    ``strict`` (the incoming pod) a missing or foreign claim raises _Fail."""
    out: dict[str, str] = {}
    for v in pod_volumes(pod):
        if v.kind == VOL_OTHER:
            got = MIGRATABLE.get(v.source_kind)
            if got is not None and migrated:
                out[f"{got[1]}/{v.field(got[2], '')}"] = got[1]
            continue
        claim = cat.claim(pod.namespace, v.claim)
        if claim is None:
            if strict:
                raise _Fail(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (
                    f"looking up PVC {pod.namespace}/{v.claim}: "
                    f"{claim_missing_message(v.claim)}",)))
            continue
        if v.kind == VOL_EPHEMERAL and not owned_by(claim, pod):
            if strict:
                raise _Fail(Status(Code.ERROR, (not_owner_message(pod.namespace, v.claim,
                                                                  pod),)))
            continue
        pv = cat.pvs.get(claim.volume_name) if claim.volume_name else None
        if pv is not None:
            got = pv.csi_id(migrated)
            if got is not None:
                out[f"{got[0]}/{got[1]}"] = got[0]
            continue
        cls = cat.classes.get(claim.storage_class) if claim.storage_class else None
        if cls is None:
            continue
        driver = cls.provisioner
        if driver in IN_TREE_TO_CSI:
            if not migrated:
                continue
            driver = IN_TREE_TO_CSI[driver]
        out[f"{driver}/{claim.namespace}/{claim.name}"] = driver
    return out


def limit_columns(state, cat, drivers: tuple) -> tuple[np.ndarray, dict, dict]:
    """([n_rows] bool: the node has a CSINode; {driver: [n_rows] int64
    allocatable count, -1 no limit}; {driver: some node limits it}), kept
    while the nodes and the catalog's CSINodes stay."""
    memo = state.memo("volumes.csi_limits", (state.structure_tag(), id(cat.csi_nodes)))
    has = memo.get(None)
    if has is None:
        has = memo[None] = np.zeros(max(state.n_rows, 1), np.bool_)
        for name in cat.csi_nodes:
            r = state.node_rows.get(name)
            if r is not None:
                has[r] = True
    out, limited = {}, {}
    for d in drivers:
        got = memo.get(d)
        if got is None:
            col = np.full(max(state.n_rows, 1), -1, np.int64)
            for name, csi in cat.csi_nodes.items():
                r = state.node_rows.get(name)
                if r is not None and csi.limits.get(d) is not None:
                    col[r] = csi.limits[d]
            got = memo[d] = (col, bool((col >= 0).any()))
        out[d], limited[d] = got
    return has, out, limited


class NodeVolumeLimits(VolumeFilter):
    name = names.NODE_VOLUME_LIMITS
    events = frozenset({"Pod/Delete", "Node/Add", "Node/Update"})
    reads_pods = True
    reason_bit = int(L.HOST_BIT_NODE_VOLUME_LIMITS)

    def prepare(self, ctx, cat, data):
        vols = pod_volumes(ctx.pod)
        if not any(v.kind != VOL_OTHER or v.source_kind in MIGRATABLE for v in vols):
            return SKIP
        return None

    def codes(self, ctx, data, rows):
        state, cat, pod = ctx.state, data["catalog"], ctx.pod
        statuses = [Status(Code.UNSCHEDULABLE, (ERR_MAX_VOLUMES,))]
        try:
            new = pod_volume_ids(cat, pod, True, strict=True)
        except _Fail as f:
            # the pod's own claims are read before anything of the node
            statuses.append(f.status)
            return np.full(rows.shape[0], len(statuses), np.int64), statuses
        if not new:
            return None
        new_count: dict[str, int] = {}
        for d in new.values():
            new_count[d] = new_count.get(d, 0) + 1
        has_csi, limit, limited = limit_columns(state, cat, tuple(sorted(new_count)))
        if not any(limited[d] for d in new_count):
            return None                     # no node limits these drivers
        out = np.zeros(rows.shape[0], np.int64)
        # nodes with nothing attached: the pod's volumes against the limits
        over = np.zeros(rows.shape[0], np.bool_)
        for d, n in new_count.items():
            lim = limit[d][rows]
            over |= (lim >= 0) & (n > lim)
        out[over] = 1
        # nodes holding pods with volumes or VolumeAttachments: count them
        attach_by_node: dict[str, list] = {}
        for va in cat.attachments:
            attach_by_node.setdefault(va.node_name, []).append(va)
        busy = [r for r in cat.row_pods if r < has_csi.shape[0] and has_csi[r]]
        busy += [state.node_rows[n] for n in attach_by_node if n in state.node_rows]
        where = row_positions(state, rows)
        for r in dict.fromkeys(busy):
            i = int(where[r])
            if i < 0:
                continue
            attached: dict[str, str] = {}
            for p in cat.pods_on_row(r).values():
                attached.update(pod_volume_ids(cat, p, True, strict=False))
            counts: dict[str, int] = {}
            for d in attached.values():
                counts[d] = counts.get(d, 0) + 1
            for va in attach_by_node.get(state.node_name(r), ()):
                pv = cat.pvs.get(va.pv_name)
                got = pv.csi_id(True) if pv is not None else None
                if got is not None and f"{got[0]}/{got[1]}" not in attached:
                    counts[got[0]] = counts.get(got[0], 0) + 1
            fresh: dict[str, int] = {}
            for k, d in new.items():
                if k not in attached:
                    fresh[d] = fresh.get(d, 0) + 1
            out[i] = int(any(0 <= limit[d][r] < counts.get(d, 0) + n
                             for d, n in fresh.items()))
        return out, statuses


def new(args, handle):
    return NodeVolumeLimits(handle)
