"""VolumeZone: a pod's bound volumes' zone and region labels against the
nodes' (upstream ``volumezone``).

PreFilter reads every persistentVolumeClaim volume: a missing claim or
volume -> UnschedulableAndUnresolvable with the not-found message; a claim
without a volume name: no class -> 'PersistentVolumeClaim had no pv name
and storageClass name', unknown class -> not found, a class without a
binding mode -> 'VolumeBindingMode not set for StorageClass "<name>"',
WaitForFirstConsumer -> ignored (VolumeBinding decides), else
'PersistentVolume had no name'.  Each bound volume gives (key, values) for
each zone/region label it carries (values split on "__"); none -> Skip.

Filter, for every node at once: a node with none of the four labels fits;
otherwise every (key, values) needs the node's value of key (a beta key
falls back to the node's GA label when the node lacks the beta one) in
values, else 'node(s) had no available volume zone'.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.runtime.cluster_events import NODE_ADD, NODE_UPDATE
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.framework.state.volumes import label_column, value_id
from tensorsched.kernels import layout as L

from .volume_common import VolumeFilter, claim_missing_message

NAME = names.VOLUME_ZONE

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
GA_ZONE = "topology.kubernetes.io/zone"
GA_REGION = "topology.kubernetes.io/region"
TOPOLOGY_KEYS = (BETA_ZONE, BETA_REGION, GA_ZONE, GA_REGION)
GA_OF = {BETA_ZONE: GA_ZONE, BETA_REGION: GA_REGION}

ERR_CONFLICT = "node(s) had no available volume zone"


def _unresolvable(msg: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,))


class VolumeZone(VolumeFilter):
    name = names.VOLUME_ZONE
    events = frozenset({NODE_ADD, NODE_UPDATE})
    reason_bit = int(L.HOST_BIT_VOLUME_ZONE)

    def prepare(self, ctx, cat, data):
        pod = ctx.pod
        topologies = []
        for v in pod.obj.get("spec", {}).get("volumes") or ():
            pvc = v.get("persistentVolumeClaim") if isinstance(v, dict) else None
            if pvc is None:
                continue
            claim = cat.claim(pod.namespace, pvc.get("claimName", ""))
            if claim is None:
                return _unresolvable(claim_missing_message(pvc.get("claimName", "")))
            pv_name = claim.volume_name
            if not pv_name:
                if not claim.storage_class:
                    return _unresolvable("PersistentVolumeClaim had no pv name and "
                                         "storageClass name")
                cls = cat.classes.get(claim.storage_class)
                if cls is None:
                    return _unresolvable(
                        f'storageclass.storage.k8s.io "{claim.storage_class}" not found')
                if not cls.binding_mode:
                    return _unresolvable(
                        f'VolumeBindingMode not set for StorageClass "{cls.name}"')
                if cls.binding_mode == "WaitForFirstConsumer":
                    continue
                return _unresolvable("PersistentVolume had no name")
            pv = cat.pvs.get(pv_name)
            if pv is None:
                return _unresolvable(f'persistentvolume "{pv_name}" not found')
            for key in TOPOLOGY_KEYS:
                if key in pv.labels:
                    topologies.append((key, frozenset(pv.labels[key].split("__"))))
        data["topologies"] = topologies
        return SKIP if not topologies else None

    def full_codes(self, ctx, data):
        """Pods whose volumes carry the same zones share one answer."""
        return self.kept_codes(ctx, data, tuple(data["topologies"]), ())

    def codes(self, ctx, data, rows):
        state = ctx.state
        cols = {k: label_column(state, k, rows) for k in TOPOLOGY_KEYS}
        constrained = np.zeros(rows.shape[0], np.bool_)
        for vals, _k in cols.values():
            constrained |= vals >= 0
        ok = np.ones(rows.shape[0], np.bool_)
        for key, values in data["topologies"]:
            vals, k = cols[key]
            ids = [value_id(state, k, v) for v in values]
            fits = (vals >= 0) & np.isin(vals, ids)
            ga = GA_OF.get(key)
            if ga is not None:
                gvals, gk = cols[ga]
                gids = [value_id(state, gk, v) for v in values]
                fits = np.where(vals >= 0, fits, (gvals >= 0) & np.isin(gvals, gids))
            ok &= fits
        out = np.where(constrained & ~ok, 1, 0).astype(np.int64)
        return out, [_unresolvable(ERR_CONFLICT)]


def new(args, handle):
    return VolumeZone(handle)
