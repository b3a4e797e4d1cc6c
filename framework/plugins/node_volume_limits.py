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

All nodes at once: the volumes attached per node and driver are kept by the
catalog as pods are bound and removed and claims change
(``state.volume_counts.AttachCounts``), so a cycle reads one count column
per driver and corrects only the nodes that already hold one of the pod's
volumes; VolumeAttachments are added per cycle.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.parsing.volumes import (
    MIGRATABLE,
    VOL_EPHEMERAL,
    VOL_OTHER,
    pod_volumes,
)
from tensorsched.framework.runtime.cluster_events import NODE_ADD, NODE_UPDATE, POD_DELETE
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.framework.state.derived import StateKey
from tensorsched.framework.state.volume_counts import volume_ids
from tensorsched.kernels import layout as L

from .volume_common import (
    VolumeFilter,
    claim_missing_message,
    not_owner_message,
    owned_by,
)

NAME = names.NODE_VOLUME_LIMITS

ERR_MAX_VOLUMES = "node(s) exceed max volume count"


class _Fail(Exception):
    def __init__(self, status: Status):
        self.status = status


def check_own_claims(cat, pod) -> None:
    """The incoming pod's claims, read before anything of the node: a
    missing one -> UnschedulableAndUnresolvable, an ephemeral claim the pod
    does not own -> Error (raised as _Fail, first problem in volume order)."""
    for v in pod_volumes(pod):
        if v.kind == VOL_OTHER:
            continue
        claim = cat.claim(pod.namespace, v.claim)
        if claim is None:
            raise _Fail(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (
                f"looking up PVC {pod.namespace}/{v.claim}: "
                f"{claim_missing_message(v.claim)}",)))
        if v.kind == VOL_EPHEMERAL and not owned_by(claim, pod):
            raise _Fail(Status(Code.ERROR, (not_owner_message(pod.namespace, v.claim, pod),)))


CSI_LIMITS = StateKey("volumes.csi_limits", __name__,
                      "None and drivers -> CSINode presence and per-driver limits per node")


def limit_columns(state, cat, drivers: tuple) -> tuple[np.ndarray, dict, dict]:
    """([n_rows] bool: the node has a CSINode; {driver: [n_rows] int64
    allocatable count, -1 no limit}; {driver: some node limits it}), kept
    while the nodes and the catalog's CSINodes stay."""
    memo = state.derived.memo(CSI_LIMITS, (state.structure_tag(), id(cat.csi_nodes)))
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
    events = frozenset({POD_DELETE, NODE_ADD, NODE_UPDATE})
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
            check_own_claims(cat, pod)
        except _Fail as f:
            # the pod's own claims are read before anything of the node
            statuses.append(f.status)
            return np.full(rows.shape[0], len(statuses), np.int64), statuses
        if not _any_limit(state, cat):
            return None                     # no CSINode limits any driver
        new = volume_ids(cat, pod, True)
        if not new:
            return None
        new_count: dict[str, int] = {}
        for d in new.values():
            new_count[d] = new_count.get(d, 0) + 1
        has_csi, limit, limited = limit_columns(state, cat, tuple(sorted(new_count)))
        if not any(limited[d] for d in new_count):
            return None                     # no node limits these drivers
        # attached (kept per node as pods come and go, ``state.volume_counts``)
        # plus the pod's volumes not attached there yet, per driver the pod
        # adds to: over the node's limit -> code 1
        counts = cat.attach_counts.ensure()
        n = max(state.n_rows, 1)
        extra = _attachment_extras(state, cat, counts, n)
        over = np.zeros(rows.shape[0], np.bool_)
        for d, k in new_count.items():
            if not limited[d]:
                continue
            fresh = np.full(n, k, np.int64)
            for name, drv in new.items():
                if drv == d:
                    held = counts.rows_holding(name)
                    if held:
                        fresh[np.fromiter(held, np.int64, len(held))] -= 1
            total = counts.driver_column(d, n) + fresh
            if d in extra:
                total += extra[d]
            lim = limit[d]
            over |= ((fresh > 0) & (lim >= 0) & (total > lim))[rows]
        out = over.astype(np.int64)
        return out, statuses


CSI_ANY_LIMIT = StateKey("volumes.csi_any_limit", __name__,
                         "None -> whether some CSINode limits some driver")


def _any_limit(state, cat) -> bool:
    """Some CSINode gives some driver an ``allocatable.count`` (kept while
    the catalog's CSINodes stay)."""
    memo = state.derived.memo(CSI_ANY_LIMIT, id(cat.csi_nodes))
    got = memo.get(None)
    if got is None:
        got = memo[None] = any(v is not None for csi in cat.csi_nodes.values()
                               for v in csi.limits.values())
    return got


def _attachment_extras(state, cat, counts, n: int) -> dict[str, np.ndarray]:
    """{driver: [n] int64} VolumeAttachments on a node whose volume no pod
    there uses (each counts once more)."""
    out: dict[str, np.ndarray] = {}
    for va in cat.attachments:
        r = state.node_rows.get(va.node_name)
        pv = cat.pvs.get(va.pv_name)
        got = pv.csi_id(True) if pv is not None else None
        if r is None or got is None or f"{got[0]}/{got[1]}" in counts.attached(r):
            continue
        col = out.get(got[0])
        if col is None:
            col = out[got[0]] = np.zeros(n, np.int64)
        col[r] += 1
    return out


def new(args, handle):
    return NodeVolumeLimits(handle)
