"""VolumeBinding: a pod's claims against every node at once (upstream
``volumebinding`` and its volume binder's FindPodVolumes).

PreFilter reads the pod's claims (persistentVolumeClaim volumes and generic
ephemeral volumes, whose claim is ``<pod>-<volume>`` and must be controlled
by the pod): a missing claim, a Lost claim or a foreign ephemeral claim ->
UnschedulableAndUnresolvable; a claim bound (volumeName set and
``pv.kubernetes.io/bind-completed``) is *bound*, an unbound one of a
WaitForFirstConsumer class is *delayed*, any other ->
'pod has unbound immediate PersistentVolumeClaims'.  No claim -> Skip.

Filter (UnschedulableAndUnresolvable, reasons in this order):
'node(s) had volume node affinity conflict' (a bound claim's volume, its
in-tree GCE PD translated to CSI where the node's CSINode migrates it, does
not allow the node), 'node(s) didn't find available persistent volumes to
bind' (a delayed claim's selected node is another; or no volume matches and
the class cannot provision there: no provisioner, or the node outside its
allowedTopologies), 'node(s) did not have enough free storage' (the
provisioner's CSIDriver tracks capacity and no CSIStorageCapacity of the
class reaching the node holds the claim), 'node(s) unavailable due to one
or more pvc(s) bound to non-existent pv(s)'.  Delayed claims take volumes
smallest request first, each the smallest fitting volume
(``kernels.volumes.match_claims``, all nodes in one pass per claim).

Score, only with the StorageCapacityScoring gate (off by default: PreScore
Skips): the utilization of the volumes a node would use, per class, through
the broken-linear ``shape``.  Reserve binds the node's chosen volumes and
provisions the rest in the catalog (``state.volumes``); Unreserve undoes it;
PreBind keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.parsing.volumes import (
    ANN_SELECTED_NODE,
    VOL_EPHEMERAL,
    PersistentVolumeRecord,
)
from tensorsched.framework.runtime.cluster_events import NODE_ADD, NODE_UPDATE, POD_ADD, POD_DELETE
from tensorsched.framework.runtime.plugin import NORMALIZE_NONE, PRE_SCORE
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.framework.parsing.selectors import compile_selector, selector_matches
from tensorsched.framework.state.derived import StateKey
from tensorsched.framework.state.volumes import (
    program_rows,
    terms_mask,
    volume_catalog,
    volume_node_affinity,
)
from tensorsched.kernels import layout as L
from tensorsched.kernels.fused.scores import broken_linear
from tensorsched.kernels.volumes import match_claims

from .volume_common import (
    VolumeFilter,
    row_positions,
    claim_missing_message,
    claim_volumes,
    not_owner_message,
    owned_by,
)

NAME = names.VOLUME_BINDING

ERR_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# reason bits of a node, in upstream's order
B_NODE_CONFLICT, B_BIND_CONFLICT, B_NOT_ENOUGH, B_PV_MISSING, B_ERROR = 1, 2, 4, 8, 16
_REASONS = ((B_NODE_CONFLICT, ERR_NODE_CONFLICT), (B_BIND_CONFLICT, ERR_BIND_CONFLICT),
            (B_NOT_ENOUGH, ERR_NOT_ENOUGH_SPACE), (B_PV_MISSING, ERR_PV_NOT_EXIST))

GKE_ZONE = "topology.gke.io/zone"
_ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
DEFAULT_SHAPE = ((0, 0), (100, 10))
MAX_UTILIZATION = 100


def _unresolvable(msg: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,))


def _status_of(bits: int) -> Status:
    if bits & B_ERROR:
        return Status(Code.ERROR, ("no class for a claim to provision",))
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                  tuple(text for b, text in _REASONS if bits & b))


def translated_gce_affinity(pv: PersistentVolumeRecord) -> list | None:
    """The node affinity of an in-tree GCE PD volume once translated to CSI:
    its zone labels become a ``topology.gke.io/zone`` requirement."""
    zones = next((pv.labels[k] for k in _ZONE_LABELS if k in pv.labels), None)
    if zones is None:
        return pv.node_affinity
    req = {"key": GKE_ZONE, "operator": "In", "values": zones.split("__")}
    terms = pv.node_affinity or [{}]
    return [{**t, "matchExpressions": [*(t.get("matchExpressions") or []), req]}
            for t in terms]


def topology_terms(cls) -> list:
    """A StorageClass's allowedTopologies as NodeSelectorTerms (In)."""
    return [{"matchExpressions": [{"key": k, "operator": "In", "values": list(v)}
                                  for k, v in t]} for t in cls.allowed_topologies]


def selector_terms(sel: dict | None) -> list | None:
    """A LabelSelector as NodeSelectorTerms (None: selects every node)."""
    reqs = [{"key": k, "operator": "In", "values": [v]}
            for k, v in (sel.get("matchLabels") or {}).items()]
    reqs += [dict(e) for e in sel.get("matchExpressions") or ()]
    return [{"matchExpressions": reqs}] if reqs else None


@dataclass
class ClaimPlan:
    """The pod's delayed claims against the evaluated rows."""

    rows: np.ndarray                # [M] node rows
    claims: list                    # delayed claims, smallest request first
    pvs: list                       # candidate volumes, by capacity
    chosen: np.ndarray              # [C, M] index into pvs, -1 none
    provision: list                 # [(claim, [M] bool needs provisioning)]
    capacity_of: dict               # claim key -> [M] int64 index into capacities, -1 none
    everywhere: bool = False        # rows are every row in order (position = row)

    def col(self, row: int) -> int:
        """The position of node row ``row`` in ``rows``."""
        if self.everywhere:
            return int(row)
        return int(np.flatnonzero(self.rows == row)[0])


BINDING_CODES = StateKey("volumes.binding_codes", __name__,
                         "ids of the provision outcomes -> the delayed claims' codes per node")


PROVISION = StateKey("volumes.provision", __name__,
                     "storage class (and size) -> provisioning outcome per node")


class VolumeBinding(VolumeFilter):
    name = names.VOLUME_BINDING
    events = frozenset({POD_ADD, POD_DELETE, NODE_ADD, NODE_UPDATE})
    reason_bit = int(L.HOST_BIT_VOLUME_BINDING)
    normalize = NORMALIZE_NONE

    def __init__(self, handle=None, capacity_scoring: bool = False, shape=DEFAULT_SHAPE):
        super().__init__(handle)
        self.capacity_scoring = capacity_scoring
        self.shape_util = np.array([u for u, _ in shape], np.int64)
        self.shape_score = np.array([s * 10 for _, s in shape], np.int64)

    # ------------------------------------------------------------- PreFilter
    def prepare(self, ctx, cat, data):
        pod = ctx.pod
        vols = claim_volumes(pod)
        if not vols:
            return SKIP
        bound, delayed, immediate = [], [], False
        for v in vols:
            claim = cat.claim(pod.namespace, v.claim)
            if claim is None:
                if v.kind == VOL_EPHEMERAL:
                    return _unresolvable("waiting for ephemeral volume controller to create "
                                         f'the persistentvolumeclaim "{v.claim}"')
                return _unresolvable(claim_missing_message(v.claim))
            if v.kind == VOL_EPHEMERAL and not owned_by(claim, pod):
                return _unresolvable(not_owner_message(pod.namespace, v.claim, pod))
            if claim.phase == "Lost":
                return _unresolvable(f'persistentvolumeclaim "{claim.name}" bound to '
                                     f'non-existent persistentvolume "{claim.volume_name}"')
            if claim.volume_name and claim.bind_completed:
                bound.append(claim)
                continue
            delay = False
            if claim.storage_class:
                cls = cat.classes.get(claim.storage_class)
                if cls is None:
                    return Status(Code.ERROR, (f'storageclass.storage.k8s.io '
                                               f'"{claim.storage_class}" not found',))
                if not cls.binding_mode:
                    return Status(Code.ERROR, ("VolumeBindingMode not set for StorageClass "
                                               f'"{cls.name}"',))
                delay = cls.binding_mode == "WaitForFirstConsumer"
            if delay and not claim.volume_name:
                delayed.append(claim)
            else:
                immediate = True
        if immediate:
            return _unresolvable(ERR_UNBOUND_IMMEDIATE)
        data["bound"], data["delayed"] = bound, delayed
        return None

    # ---------------------------------------------------------------- Filter
    def codes(self, ctx, data, rows):
        state, cat = ctx.state, data["catalog"]
        m = rows.shape[0]
        bits = np.zeros(m, np.int64)
        # bound claims: the first failing claim decides a node
        pending = np.ones(m, np.bool_)
        for claim in data["bound"]:
            pv = cat.pvs.get(claim.volume_name)
            if pv is None:
                bits[pending] |= B_PV_MISSING
                break
            aff = self._bound_affinity(state, cat, pv, rows)
            bits[pending & ~aff] |= B_NODE_CONFLICT
            pending &= aff
        got = self._plan_delayed(state, cat, data["delayed"], rows)
        data["plan"] = None
        if got is not None:
            data["plan"], more = got
            bits |= more
        # bits < 32: the distinct combinations by counting, each a status
        uniq = np.flatnonzero(np.bincount(bits, minlength=1)[1:]) + 1
        codes = np.zeros(m, np.int64)
        if uniq.shape[0]:
            lookup = np.zeros(B_ERROR << 1, np.int64)
            lookup[uniq] = np.arange(1, uniq.shape[0] + 1)
            codes = lookup[bits]
        return codes, [_status_of(int(b)) for b in uniq]

    def full_codes(self, ctx, data):
        """The common case kept across pods: no bound claim and delayed
        claims that no volume can match (none free in their classes, none
        pre-bound, none with a selected node): each is provisioned, and the
        answer depends on the claims' classes (and sizes, where capacity is
        tracked) alone.  StatefulSet pods on dynamic provisioning are this."""
        delayed = data["delayed"]
        state, cat = ctx.state, data["catalog"]
        if not delayed:
            # bound claims only: the answer is their volumes' (a rescheduled
            # StatefulSet pod); GCE PDs whose translation varies by CSINode aside
            pvs = tuple(cat.pvs.get(c.volume_name) for c in data["bound"])
            if cat.csi_nodes and any(pv is not None and pv.source_kind == "gcePersistentDisk"
                                     for pv in pvs):
                return None
            data["plan"] = None
            return self.kept_codes(ctx, data, ("bound",) + tuple(
                c.volume_name for c in data["bound"]), pvs)
        if data["bound"] or any(ANN_SELECTED_NODE in c.annotations for c in delayed):
            return None
        if any(cat.free_volumes(c.storage_class) or cat.prebound_to(c.namespace, c.name)
               for c in delayed):
            return None
        claims = sorted(delayed, key=lambda c: c.request)
        outcomes = [self._provision_outcome(state, cat, c) for c in claims]
        memo = state.derived.memo(BINDING_CODES, (state.structure_tag(), id(cat)))
        key = tuple(id(o[0]) for o in outcomes)     # the kept arrays name the answer
        got = memo.get(key)
        if got is None:
            failed = outcomes[0][0]
            for bits, _ in outcomes[1:]:
                failed = np.where(failed == 0, bits, failed)
            uniq = np.flatnonzero(np.bincount(failed, minlength=1)[1:]) + 1
            lookup = np.zeros(B_ERROR << 1, np.int64)
            lookup[uniq] = np.arange(1, uniq.shape[0] + 1)
            codes = lookup[failed]
            codes.flags.writeable = False
            ok = codes == 0
            ok.flags.writeable = False
            got = memo[key] = (codes, [Status.OK, *(_status_of(int(b)) for b in uniq)], ok)
        n = got[0].shape[0]
        shared = memo.get(("everywhere", len(claims)))
        if shared is None:      # every row, all needing provisioning, none matched
            shared = memo[("everywhere", len(claims))] = (
                np.arange(n, dtype=np.int64), np.ones(n, np.bool_),
                np.full((len(claims), n), -1, np.int64))
            for a in shared:
                a.flags.writeable = False
        data["ok"] = got[2]
        data["mask_key"] = ("VolumeBinding", id(got[2]))
        data["plan"] = ClaimPlan(
            shared[0], claims, [], shared[2], [(c, shared[1]) for c in claims],
            {c.key: o[1] for c, o in zip(claims, outcomes) if o[1] is not None},
            everywhere=True)
        return got[0], got[1]

    def _bound_affinity(self, state, cat, pv, rows) -> np.ndarray:
        aff = volume_node_affinity(state, pv, rows)
        if pv.source_kind != "gcePersistentDisk" or not cat.csi_nodes:
            return aff
        migrated = np.array([
            "kubernetes.io/gce-pd" in getattr(cat.csi_node(state.node_name(r)), "migrated", ())
            for r in rows.tolist()], np.bool_)
        if not migrated.any():
            return aff
        terms = translated_gce_affinity(pv)
        translated = program_rows(state, terms, rows) if terms else np.ones(rows.shape[0],
                                                                             np.bool_)
        return np.where(migrated, translated, aff)

    def _plan_delayed(self, state, cat, delayed, rows):
        """(ClaimPlan, [M] reason bits) of the delayed claims, or None."""
        if not delayed:
            return None
        m = rows.shape[0]
        # a claim whose node was chosen already goes to that node only
        selected = [c for c in delayed if ANN_SELECTED_NODE in c.annotations]
        alive = np.ones(m, np.bool_)
        for c in selected:
            alive &= rows == state.node_rows.get(c.annotations[ANN_SELECTED_NODE], -1)
        to_match = sorted((c for c in delayed if ANN_SELECTED_NODE not in c.annotations),
                          key=lambda c: c.request)
        pvs, chosen = self._match(state, cat, to_match, rows)
        # claims left to provision, in upstream's order; a node stops at the
        # first claim that cannot be provisioned there
        provision = [(c, alive) for c in selected]
        provision += [(c, alive & (chosen[i] < 0) if pvs else alive)
                      for i, c in enumerate(to_match)]
        failed = None
        capacity_of = {}
        for claim, need in provision:
            pbits, which = self._provision_outcome(state, cat, claim)
            if which is not None:
                capacity_of[claim.key] = which[rows]
            got = pbits[rows]
            if failed is None:
                failed = got if need is alive and not selected else np.where(need, got, 0)
            else:
                failed = np.where((failed == 0) & need, got, failed)
        bits = np.zeros(m, np.int64) if failed is None else failed
        if selected:
            bits = bits | np.where(alive, 0, B_BIND_CONFLICT)
        return ClaimPlan(rows, to_match, pvs, chosen, provision, capacity_of), bits

    def _provision_outcome(self, state, cat, claim):
        """([n_rows] int64 the bit a node fails provisioning ``claim`` with
        (0: it can), [n_rows] int64 the CSIStorageCapacity that holds it or
        None when capacity is not tracked), kept per class (and size, when
        tracked) while the nodes stay: classes, drivers and capacities do
        not change as pods are placed."""
        memo = state.derived.memo(PROVISION, (state.structure_tag(), id(cat)))
        cls = cat.classes.get(claim.storage_class) if claim.storage_class else None
        driver = cat.csi_drivers.get(cls.provisioner) if cls is not None else None
        tracked = driver is not None and driver.storage_capacity and claim.request > 0
        key = (claim.storage_class, claim.request if tracked else None)
        got = memo.get(key)
        if got is None:
            n = max(state.n_rows, 1)
            all_rows = np.arange(n, dtype=np.int64)
            bits = np.zeros(n, np.int64)
            which = None
            if cls is None:
                bits[:] = B_ERROR
            elif not cls.provisionable:
                bits[:] = B_BIND_CONFLICT
            else:
                if cls.allowed_topologies:
                    topo = terms_mask(state, ("class", cls.name), cls,
                                      lambda cls=cls: topology_terms(cls))
                    bits[~topo[:n]] = B_BIND_CONFLICT
                which = self._capacity(state, cat, cls, claim, all_rows)
                if which is not None:
                    bits[(bits == 0) & (which < 0)] = B_NOT_ENOUGH
            got = memo[key] = (bits, which)
        return got

    def _match(self, state, cat, claims, rows):
        """(candidate volumes by capacity, [C, M] chosen index)."""
        m = rows.shape[0]
        # the volumes a claim may take: free ones of its class, pre-bound ones
        found: dict = {}
        for c in claims:
            found.update(cat.free_volumes(c.storage_class))
            found.update(cat.prebound_to(c.namespace, c.name))
        if not found:       # nothing to match: every claim is provisioned
            return [], np.broadcast_to(np.int64(-1), (len(claims), m))
        pvs = sorted(found.values(), key=lambda pv: (pv.capacity, pv.name))
        fits = np.zeros((len(claims), len(pvs)), np.bool_)
        prebound = np.full(len(claims), -1, np.int64)
        for i, c in enumerate(claims):
            for j, pv in enumerate(pvs):
                if pv.storage_class != c.storage_class or pv.deleting:
                    continue
                if pv.capacity < c.request or pv.volume_mode != c.volume_mode:
                    continue
                if pv.claim_ref is not None:
                    ns, name, uid = pv.claim_ref
                    if (ns, name) == (c.namespace, c.name) and uid in ("", c.uid):
                        if prebound[i] < 0:
                            prebound[i] = j
                    continue
                if pv.phase != "Available":
                    continue
                if c.selector is not None and not _labels_match(c.selector, pv.labels):
                    continue
                if not set(c.access_modes) <= set(pv.access_modes):
                    continue
                fits[i, j] = True
        used = fits.any(axis=0) | np.isin(np.arange(len(pvs)), prebound)
        affinity = np.zeros((len(pvs), m), np.bool_)
        for j in np.flatnonzero(used).tolist():
            affinity[j] = volume_node_affinity(state, pvs[j], rows)
        return pvs, match_claims(fits, prebound, affinity)

    def _capacity(self, state, cat, cls, claim, rows):
        """[M] int64: the first CSIStorageCapacity of the class that reaches
        the node and holds the claim (-1 none), or None when the class's
        driver does not track capacity (or the claim asks no storage)."""
        driver = cat.csi_drivers.get(cls.provisioner)
        if driver is None or not driver.storage_capacity or claim.request == 0:
            return None
        m = rows.shape[0]
        which = np.full(m, -1, np.int64)
        for i, cap in enumerate(cat.capacities):
            if cap.storage_class != claim.storage_class or cap.node_topology is None:
                continue
            limit = cap.maximum_volume_size if cap.maximum_volume_size is not None \
                else cap.capacity
            if limit is None or limit < claim.request:
                continue
            reach = terms_mask(state, ("capacity", cap.namespace, cap.name), cap,
                               lambda cap=cap: selector_terms(cap.node_topology))[rows]
            which[(which < 0) & reach] = i
        return which

    # ----------------------------------------------------------------- Score
    def pre_score(self, ctx):
        if not self.capacity_scoring:
            return SKIP
        return Status.OK if self._cycle(ctx)["status"] is None else SKIP

    def spec_answer(self, pod, point):
        """``SpecAnswerPlugin``: PreScore skips every pod without capacity
        scoring; PreFilter as every volume plugin's."""
        if point == PRE_SCORE:
            return None if self.capacity_scoring else Code.SKIP
        return super().spec_answer(pod, point)

    def score(self, ctx, rows: np.ndarray) -> np.ndarray:
        data = self._cycle(ctx)
        self._node_codes(ctx)
        plan = data.get("plan")
        out = np.zeros(rows.shape[0], np.int64)
        if plan is None:
            return out
        col = row_positions(ctx.state, plan.rows)
        cat = data["catalog"]
        for j, r in enumerate(rows.tolist()):
            i = int(col[r])
            if i < 0:
                continue
            per_class: dict[str, list] = {}
            static = [(c, plan.pvs[int(plan.chosen[k, i])]) for k, c in enumerate(plan.claims)
                      if plan.chosen[k, i] >= 0]
            if static:
                for c, pv in static:
                    e = per_class.setdefault(c.storage_class, [0, 0])
                    e[0] += c.request
                    e[1] += pv.capacity
            else:
                for c, need in plan.provision:
                    which = plan.capacity_of.get(c.key)
                    if not need[i] or which is None or which[i] < 0:
                        continue
                    e = per_class.setdefault(c.storage_class, [0, 0])
                    e[0] += c.request
                    e[1] = cat.capacities[int(which[i])].capacity or 0
            if not per_class:
                continue
            req = np.array([v[0] for v in per_class.values()], np.int64)
            cap = np.array([v[1] for v in per_class.values()], np.int64)
            util = np.where((cap == 0) | (req > cap), MAX_UTILIZATION,
                            req * MAX_UTILIZATION // np.maximum(cap, 1))
            s = broken_linear(util, self.shape_util, self.shape_score, xp=np)
            total, n = int(s.sum()), len(per_class)
            out[j] = (2 * total + n) // (2 * n)        # round half away (scores >= 0)
        return out

    # ------------------------------------------------------ Reserve, PreBind
    def reserve(self, ctx, node_name: str) -> Status:
        data = self._cycle(ctx)
        if data["status"] is not None or not data.get("delayed"):
            return Status.OK
        cat = data["catalog"]
        row = ctx.state.node_rows[node_name]
        self._node_codes(ctx)
        plan = data.get("plan")
        i = plan.col(row)
        for k, c in enumerate(plan.claims):
            if plan.chosen[k, i] >= 0:
                cat.bind(ctx.pod.key, c, plan.pvs[int(plan.chosen[k, i])].name)
        for c, need in plan.provision:
            if need[i]:
                cls = cat.classes.get(c.storage_class)
                keys = tuple(dict.fromkeys(k for t in (cls.allowed_topologies if cls else ())
                                           for k, _ in t)) or _ZONE_KEYS
                cat.provision(ctx.pod.key, c, row, keys)
        return Status.OK

    def unreserve(self, ctx, node_name: str) -> None:
        volume_catalog(ctx.state).unreserve(ctx.pod.key)

    def pre_bind(self, ctx, node_name: str) -> Status:
        volume_catalog(ctx.state).commit(ctx.pod.key)
        return Status.OK


_ZONE_KEYS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")


def _labels_match(selector: dict, labels: dict) -> bool:
    return selector_matches(compile_selector(selector), labels)


def new(args, handle):
    """The plugin as its profile's args say: ``VolumeBindingArgs`` with the
    StorageCapacityScoring gate on (``load_config(..., feature_gates=...)``)
    score with their ``shape``; otherwise (the default profile) no score."""
    if getattr(args, "storage_capacity_scoring", False):
        return VolumeBinding(handle, True, tuple((p.utilization, p.score) for p in args.shape))
    return VolumeBinding(handle)


def with_capacity_scoring(shape=DEFAULT_SHAPE):
    """A factory of VolumeBinding with the StorageCapacityScoring gate on
    and the given shape ((utilization, score 0..10) pairs), for a registry
    that models the gate (``Registry.register``)."""
    return lambda args, handle: VolumeBinding(handle, True, shape)
