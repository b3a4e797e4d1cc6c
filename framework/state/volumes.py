"""Storage beside the cluster state: PersistentVolumes, claims, classes, CSI
nodes and drivers, and the bindings the scheduler makes.

:class:`VolumeCatalog` holds the storage records of the loaded objects and
what scheduling changed since (upstream's assume cache): claims bound to
volumes by VolumeBinding's Reserve/PreBind, provisioned claims (their
``volume.kubernetes.io/selected-node`` and the volume the provisioner
creates), all undone exactly by ``Unreserve``.  It follows the pods on the
nodes (a ``ClusterState`` listener): per node row, the bound pods that use
volumes (NodeVolumeLimits' attached volumes, VolumeRestrictions' disks),
and per claim, how many bound pods use it (ReadWriteOncePod conflicts).

Per-node answers (node affinity of volumes, allowed topologies, zone
labels) are read from the state's label columns, for every node at once
(``volume_node_affinity``, ``program_rows``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from tensorsched.framework.parsing.volumes import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    PersistentVolumeClaimRecord,
    PersistentVolumeRecord,
    pod_volumes,
)
from tensorsched.kernels.fused.filters import program_matches

from .cluster_state import ClusterState
from .derived import StateKey
from .query import compile_node_selector_terms
from .volume_counts import AttachCounts

EXTENSION = StateKey("volumes", __name__, "the state's VolumeCatalog (``volume_catalog``)")
MASKS = StateKey("volumes.masks", __name__,
                 "key -> (owner record, [n_rows] bool) node-selector masks (``terms_mask``)")


@dataclass
class Assumed:
    """What one pod's Reserve changed, to be undone by its Unreserve: the
    claims and volumes as they were before (None: did not exist)."""

    claims: dict = field(default_factory=dict)      # claim key -> record before
    volumes: dict = field(default_factory=dict)     # PV name -> record before


class VolumeCatalog:
    """The storage objects of a cluster and the bindings made on it."""

    def __init__(self, objects=None):
        o = objects
        self.pvs: dict[str, PersistentVolumeRecord] = {
            r.name: r for r in (o.persistent_volumes if o else ())}
        self.claims: dict[str, PersistentVolumeClaimRecord] = {
            r.key: r for r in (o.persistent_volume_claims if o else ())}
        self.classes = {r.name: r for r in (o.storage_classes if o else ())}
        self.csi_nodes = {r.name: r for r in (o.csi_nodes if o else ())}
        self.csi_drivers = {r.name: r for r in (o.csi_drivers if o else ())}
        self.capacities = list(o.csi_storage_capacities if o else ())
        self.attachments = list(o.volume_attachments if o else ())
        # bound pods that use volumes, per node row: key -> record
        self.row_pods: dict[int, dict] = {}
        # claim key -> number of bound pods using it
        self.claim_users: dict[str, int] = {}
        # per node row, the CSI volumes its pods attach (NodeVolumeLimits)
        self.attach_counts = AttachCounts(self)
        self.assumed: dict[str, Assumed] = {}           # pod key -> what its Reserve did
        self.version = 0        # bumped by every change of claims or volumes
        self.pods_version = 0   # bumped when a pod with volumes comes or goes
        # volumes by class that a claim may still take: no claimRef (name ->
        # record), and pre-bound ones by the (namespace, name) they name
        self.free_by_class: dict[str, dict] = {}
        self.prebound: dict[tuple, dict] = {}
        for name in self.pvs:
            self._index(name, None)
        self.state: ClusterState | None = None

    # ------------------------------------------------------------ following pods
    def attach(self, state: ClusterState) -> "VolumeCatalog":
        """Follow ``state``'s pods from now on (and count those already bound)."""
        self.state = state
        state.listeners.add(self)
        for name, row in state.node_rows.items():
            if state.pods_on_node[row]:
                for pod in state.pods_on(name):
                    self.on_pod(pod, row, 1)
        return self

    def on_pod(self, pod, row: int, sign: int) -> None:
        # a pod whose manifest lists no volumes (most) has none: no parse
        # and no memo entry per pod (``pod_volumes`` keeps one per name)
        spec = pod.obj.get("spec") if isinstance(pod.obj, dict) else None
        if not (isinstance(spec, dict) and spec.get("volumes")):
            return
        vols = pod_volumes(pod)
        if not vols:
            return
        self.pods_version += 1
        on = self.row_pods.setdefault(int(row), {})
        if sign > 0:
            on[pod.key] = pod
            self.attach_counts.add(pod, row)
        else:
            on.pop(pod.key, None)
            self.attach_counts.remove(pod.key)
        for v in vols:
            if v.claim:
                k = f"{pod.namespace}/{v.claim}"
                n = self.claim_users.get(k, 0) + sign
                if n > 0:
                    self.claim_users[k] = n
                else:
                    self.claim_users.pop(k, None)

    def on_pods(self, pods, rows, sign: int) -> None:
        # Compiled runs and blocks hold only pods without volumes (the volume
        # plugins sign a pod with volumes None and never promise its Skips),
        # so they change nothing here; the records are not built.
        return None

    # ------------------------------------------------------------------ reads
    def claim(self, namespace: str, name: str) -> PersistentVolumeClaimRecord | None:
        return self.claims.get(f"{namespace}/{name}")

    def pods_on_row(self, row: int) -> dict:
        return self.row_pods.get(int(row), {})

    def csi_node(self, node_name: str):
        return self.csi_nodes.get(node_name)

    def free_volumes(self, storage_class: str) -> dict:
        """{name: record} of the class's volumes without a claimRef."""
        return self.free_by_class.get(storage_class, {})

    def prebound_to(self, namespace: str, name: str) -> dict:
        """{name: record} of the volumes whose claimRef names the claim."""
        return self.prebound.get((namespace, name), {})

    def _index(self, name: str, old) -> None:
        """Move volume ``name`` in the indexes from ``old`` (its previous
        record, None: not indexed) to its current record."""
        for rec in (old, self.pvs.get(name)):
            if rec is None:
                continue
            here = (self.free_by_class.setdefault(rec.storage_class, {})
                    if rec.claim_ref is None
                    else self.prebound.setdefault(rec.claim_ref[:2], {}))
            if rec is old:
                here.pop(name, None)
            else:
                here[name] = rec

    def _set_pv(self, name: str, rec) -> None:
        old = self.pvs.get(name)
        if rec is None:
            self.pvs.pop(name, None)
        else:
            self.pvs[name] = rec
        self._index(name, old)

    def _reindex(self) -> None:
        self.free_by_class, self.prebound = {}, {}
        for name in self.pvs:
            self._index(name, None)

    # ----------------------------------------------------------------- writes
    def _save(self, undo: Assumed, claim_key: str | None = None, pv: str | None = None) -> None:
        if claim_key is not None and claim_key not in undo.claims:
            undo.claims[claim_key] = self.claims.get(claim_key)
        if pv is not None and pv not in undo.volumes:
            undo.volumes[pv] = self.pvs.get(pv)

    def bind(self, pod_key: str, claim: PersistentVolumeClaimRecord, pv_name: str) -> None:
        """Bind ``claim`` to the volume ``pv_name`` (both sides, as the PV
        controller completes a binding); undone by ``unreserve(pod_key)``."""
        undo = self.assumed.setdefault(pod_key, Assumed())
        self._save(undo, claim.key, pv_name)
        pv = self.pvs[pv_name]
        self._set_pv(pv_name, replace(pv, claim_ref=(claim.namespace, claim.name, claim.uid),
                                      phase="Bound"))
        self.claims[claim.key] = _bound_claim(
            claim, pv_name, {**claim.annotations, ANN_BIND_COMPLETED: "yes"})
        self.version += 1
        self.attach_counts.claims_changed((claim.key,))

    def provision(self, pod_key: str, claim: PersistentVolumeClaimRecord, node_row: int,
                  topology_keys: tuple[str, ...]) -> str:
        """Provision ``claim`` for the node of ``node_row`` as an external
        provisioner would after the scheduler chose it: the claim gets the
        selected-node annotation and a new volume (``pvc-<claim uid or
        namespace-name>``, the claim's size and class) whose node affinity
        pins it to the node's values of ``topology_keys`` (the class's
        allowed topology keys, else the zone and region labels it has), and
        the claim is bound to it.  Returns the volume's name."""
        state = self.state
        node = state.node(state.node_name(node_row))
        name = f"pvc-{claim.uid or claim.namespace + '-' + claim.name}"
        exprs = [{"key": k, "operator": "In", "values": [node.labels[k]]}
                 for k in topology_keys if k in node.labels]
        if not exprs:
            exprs = [{"key": "kubernetes.io/hostname", "operator": "In",
                      "values": [node.labels.get("kubernetes.io/hostname", node.name)]}]
        undo = self.assumed.setdefault(pod_key, Assumed())
        self._save(undo, claim.key, name)
        self._set_pv(name, PersistentVolumeRecord(
            name=name, labels={k: node.labels[k] for k in topology_keys if k in node.labels},
            capacity=claim.request, access_modes=claim.access_modes,
            volume_mode=claim.volume_mode, storage_class=claim.storage_class,
            claim_ref=(claim.namespace, claim.name, claim.uid),
            node_affinity=[{"matchExpressions": exprs}], phase="Bound", deleting=False,
            source_kind="", obj={}))
        self.claims[claim.key] = _bound_claim(
            claim, name, {**claim.annotations, ANN_BIND_COMPLETED: "yes",
                          ANN_SELECTED_NODE: node.name})
        self.version += 1
        self.attach_counts.claims_changed((claim.key,))
        return name

    def unreserve(self, pod_key: str) -> None:
        """Undo what ``bind`` / ``provision`` did for ``pod_key``."""
        undo = self.assumed.pop(pod_key, None)
        if undo is None:
            return
        for k, rec in undo.claims.items():
            if rec is None:
                self.claims.pop(k, None)
            else:
                self.claims[k] = rec
        changed = set(undo.claims)
        for k, rec in undo.volumes.items():
            for was in (self.pvs.get(k), rec):
                if was is not None and was.claim_ref is not None:
                    changed.add(f"{was.claim_ref[0]}/{was.claim_ref[1]}")
            self._set_pv(k, rec)
        self.version += 1
        self.attach_counts.claims_changed(changed)

    def commit(self, pod_key: str) -> None:
        """PreBind done: the pod's bindings stay (nothing left to undo)."""
        self.assumed.pop(pod_key, None)

    def adopt(self, other: "VolumeCatalog") -> None:
        """Take ``other``'s claims and volumes as they are now (the bindings
        scheduling made there), for a fresh copy of its cluster."""
        self.claims, self.pvs = dict(other.claims), dict(other.pvs)
        self._reindex()
        self.version += 1
        self.attach_counts.recount()

    def pinning_volumes(self, pod) -> list[str]:
        """The volumes bound to ``pod``'s claims whose node affinity limits
        where the pod can run (a zonal or local disk): it goes only where
        they can follow."""
        out = []
        for v in pod_volumes(pod):
            claim = self.claims.get(f"{pod.namespace}/{v.claim}") if v.claim else None
            pv = self.pvs.get(claim.volume_name) if claim is not None and claim.volume_name \
                else None
            if pv is not None and pv.node_affinity is not None:
                out.append(pv.name)
        return out

    def snapshot(self) -> tuple:
        """What ``restore`` needs to put the claims and volumes back."""
        return dict(self.claims), dict(self.pvs), dict(self.assumed)

    def restore(self, snap: tuple) -> None:
        self.claims, self.pvs, self.assumed = dict(snap[0]), dict(snap[1]), dict(snap[2])
        self._reindex()
        self.version += 1
        self.attach_counts.recount()


def _bound_claim(claim: PersistentVolumeClaimRecord, volume_name: str,
                 annotations: dict) -> PersistentVolumeClaimRecord:
    """A copy of ``claim`` bound to ``volume_name`` with ``annotations``
    (what ``dataclasses.replace`` gives, without re-running the record's
    constructor over every field: Reserve does this once a claim a pod)."""
    out = object.__new__(type(claim))
    out.__dict__.update(claim.__dict__)
    out.volume_name, out.phase, out.annotations = volume_name, "Bound", annotations
    return out


def volume_catalog(state: ClusterState) -> VolumeCatalog:
    """The state's catalog (an empty one, following its pods, when the
    state was built without storage objects)."""
    return state.derived.extension(EXTENSION, lambda s: VolumeCatalog().attach(s))


def install_catalog(state: ClusterState, objects) -> VolumeCatalog:
    """Build the catalog of ``objects`` and keep it beside ``state`` (before
    any pod is added: it follows them from here)."""
    cat = VolumeCatalog(objects).attach(state)
    state.derived.install(EXTENSION, cat)
    return cat


# --------------------------------------------------------------------------
# node-side answers over label columns


def program_rows(state: ClusterState, terms, rows: np.ndarray) -> np.ndarray:
    """[M] bool: the NodeSelectorTerms ``terms`` (ORed; a term's
    requirements ANDed) match the nodes of ``rows``."""
    prog = compile_node_selector_terms(state, terms)
    t = prog.term_offsets.shape[0] - 1
    return program_matches(state.label_vals[rows], state.label_nums[rows],
                           state.label_isnum[rows], prog, 0, t, xp=np)


def terms_mask(state: ClusterState, key, owner, terms) -> np.ndarray:
    """[n_rows] bool: the NodeSelectorTerms ``terms`` (or ``terms()``)
    match each node row; kept under ``key`` while ``owner`` (the record
    they come from) is the same object and the nodes' labels and the node
    set stay (``structure_tag``)."""
    memo = state.derived.memo(MASKS, state.structure_tag())
    got = memo.get(key)
    if got is None or got[0] is not owner:
        rows = np.arange(max(state.n_rows, 1), dtype=np.int64)
        t = terms() if callable(terms) else terms
        got = memo[key] = (owner, program_rows(state, t, rows) if t is not None
                           else np.ones(rows.shape[0], np.bool_))
    return got[1]


def volume_node_affinity(state: ClusterState, pv: PersistentVolumeRecord,
                         rows: np.ndarray) -> np.ndarray:
    """[M] bool: ``pv``'s required node affinity holds on the nodes of
    ``rows`` (a volume without one fits every node)."""
    if pv.node_affinity is None:
        return np.ones(rows.shape[0], np.bool_)
    return terms_mask(state, ("pv", pv.name), pv.node_affinity, pv.node_affinity)[rows]


def label_column(state: ClusterState, key: str, rows: np.ndarray) -> tuple[np.ndarray, int]:
    """([M] int32 value ids of label ``key`` on ``rows``, -1 absent; the key id)."""
    k = state.label_keys.get(key)
    if k < 0:
        return np.full(rows.shape[0], -1, np.int32), k
    return state.label_vals[rows, k], k


def value_id(state: ClusterState, k: int, value: str) -> int:
    return state.label_values[k].get(value) if k >= 0 else -1

