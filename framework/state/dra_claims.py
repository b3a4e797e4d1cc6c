"""Resource claims as the scheduler tracks them, kept beside a ClusterState.

``ClaimState.of(state)`` attaches one to a state (an extension under
``EXTENSION``, a ``PodListener`` and a ``PodRestorer``).  It holds the cluster's
DeviceClasses, ResourceSlices, ResourceClaimTemplates and ResourceClaims,
and for each claim what changes while pods are scheduled: its allocation,
the pods it is reserved for (``status.reservedFor``), the binding
conditions its devices report, and the allocation the scheduler holds in
memory between Reserve and PreBind (in flight: upstream's
``SignalClaimPendingAllocation``).

Devices in use are counted in ``in_use`` (``dra_in_use.DevicesInUse``) as
upstream gathers them for the allocator: every result of every allocated
or in-flight claim, but admin-access results (``devices_in_use``,
``shared_in_use`` and ``capacity_in_use`` are its live sets).

Lifecycle outside the scheduler, as the control plane would do it:

* a pod's claim from a template is generated (``<pod>-<claim>``, owned by
  the pod) when the pod is queued, if ``controller`` is on and the pod's
  status names none (the resourceclaim controller's job);
* when a pod leaves its node (deleted, evicted, forgotten), it is taken
  out of ``reservedFor`` of its claims; a claim the pod owns is deleted and
  a claim reserved for nobody is deallocated: its devices are free again.
  A pod replaced in place (``update_pod``) or taken off for a while
  (preemption's victim search: ``hold`` / ``regain``) gets its claims back.

While a victim search is under way (``begin_victim_search`` /
``end_victim_search``), a pod taken off frees only what upstream's dry run
frees (DynamicResources' RemovePod with DRAPreemption): the claims its spec
names; the claims a ``kept`` predicate picks (the claim the scheduler made
for the pod's DRA-served extended resources, which the spec does not name)
stay allocated and reserved for it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from tensorsched.framework.errors import ManifestError, StateError
from tensorsched.framework.records.dra_records import (
    AllocationResult,
    ConsumerRef,
    DeviceClassRecord,
    ResourceClaimRecord,
    ResourceClaimTemplateRecord,
    ResourceSliceRecord,
)
from tensorsched.framework.parsing.dra_validation import stored_object
from tensorsched.framework.parsing.meta import invalid_value, parse_timestamp, source_of

from .derived import StateKey
from .dra_cel import CelError, compile_selector
from .dra_cel_types import check_types
from .dra_in_use import DevicesInUse

__all__ = ["ClaimEntry", "ClaimState", "DeviceID", "EXTENSION", "FINALIZER", "restore", "snapshot"]

EXTENSION = StateKey("dra_claims", __name__, "the state's ClaimState (``ClaimState.of``)")
FINALIZER = "resource.kubernetes.io/delete-protection"

DeviceID = tuple  # (driver, pool, device)


@dataclass
class ClaimEntry:
    """One ResourceClaim and what scheduling changed of it.

    ``record`` is the claim as loaded or generated (its spec);
    ``allocation`` / ``reserved_for`` are the current status (the record's
    at first); ``allocated_ns`` is status.allocation.allocationTimestamp
    (ns since the epoch, None when unset); ``conditions`` maps a device id
    to the condition types its status.devices entry reports True;
    ``owner`` is the (name, uid) of the Pod that controls the claim."""

    record: ResourceClaimRecord
    allocation: AllocationResult | None = None
    reserved_for: list = field(default_factory=list)
    allocated_ns: int | None = None
    conditions: dict = field(default_factory=dict)
    owner: tuple | None = None
    generated: bool = False

    @property
    def key(self) -> str:
        return self.record.key


def _owner(record: ResourceClaimRecord) -> tuple | None:
    refs = ((record.obj or {}).get("metadata") or {}).get("ownerReferences") or []
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") == "Pod" \
                and ref.get("apiVersion") == "v1":
            return (ref.get("name") or "", ref.get("uid") or "")
    return None


def _status_of(record: ResourceClaimRecord) -> tuple[int | None, dict]:
    """(allocationTimestamp ns, device id -> True condition types) of a
    claim object's status."""
    status = (record.obj or {}).get("status") or {}
    stamp = (status.get("allocation") or {}).get("allocationTimestamp")
    try:
        allocated_ns = parse_timestamp(stamp) if stamp else None
    except ValueError:
        raise StateError(f"ResourceClaim {record.key}: status.allocation.allocationTimestamp: "
                         f"not a timestamp: {stamp!r}") from None
    conditions: dict = {}
    for i, dev in enumerate(status.get("devices") or []):
        if not isinstance(dev, dict):
            raise StateError(f"ResourceClaim {record.key}: status.devices[{i}]: must be a "
                             "mapping")
        did = (dev.get("driver"), dev.get("pool"), dev.get("device"))
        conditions[did] = {c.get("type") for c in dev.get("conditions") or []
                           if isinstance(c, dict) and c.get("status") == "True"}
    return allocated_ns, conditions


def _selector_fields(requests, path: str):
    """(field path, CEL expression) of every selector of ``requests``
    (DeviceRequest records) under ``path`` (``spec.devices``)."""
    for i, r in enumerate(requests):
        rpath = f"{path}.requests[{i}]"
        if r.exactly is not None:
            subs = [(f"{rpath}.exactly", r.exactly)]
        else:
            subs = [(f"{rpath}.firstAvailable[{j}]", s) for j, s in enumerate(r.first_available)]
        for spath, spec in subs:
            for k, expr in enumerate(spec.selectors):
                yield f"{spath}.selectors[{k}].cel.expression", expr


def check_selectors(classes=(), templates=(), claims=()) -> None:
    """Every CEL selector of the DeviceClasses, ResourceClaimTemplates and
    ResourceClaims compiles and type-checks (:func:`dra_cel.check_types`:
    a bool result, operands some overload accepts), as the API server checks
    on create; else a
    ManifestError naming the object and the field, with the compiler's
    message.  A selector whose estimated worst-case cost exceeds the limit
    (``dra_cel_estimate``) is refused as upstream refuses it on create:
    ``Forbidden: too complex, exceeds cost limit``; not in a stored object
    (``dra_validation.stored_object``: upstream does not estimate a stored
    expression again, the runtime limit still applies).  (The allocator meets an expression that does not compile
    with an error of its own; objects read as a cluster never carry one.)"""
    def fields():
        for c in classes:
            for k, expr in enumerate(c.selectors):
                yield (f"DeviceClass {c.name}", c.obj,
                       f"spec.selectors[{k}].cel.expression", expr)
        for t in templates:
            for path, expr in _selector_fields(t.claim.requests, "spec.spec.devices"):
                yield f"ResourceClaimTemplate {t.key}", t.obj, path, expr
        for c in claims:
            for path, expr in _selector_fields(c.requests, "spec.devices"):
                yield f"ResourceClaim {c.key}", c.obj, path, expr

    for label, obj, path, expr in fields():
        if expr is None:
            continue
        try:
            compile_selector(expr)
            check_types(expr)
        except CelError as exc:
            raise ManifestError(label, path, invalid_value(expr, [str(exc)]),
                                source_of(obj)) from None
        if not stored_object(obj):
            # the estimator walks cel-python's parse tree: imported only
            # where a selector exists, so a cluster without DRA objects
            # loads without the dra extra
            from .dra_cel_estimate import TOO_COMPLEX, exceeds_cost_limit
            if exceeds_cost_limit(expr):
                raise ManifestError(label, path, TOO_COMPLEX, source_of(obj))


#: the namespace label that allows ``adminAccess`` requests (DRAAdminAccess)
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"


def check_admin_access(namespace_labels, templates=(), claims=()) -> None:
    """A request with ``adminAccess: true`` only in a namespace labelled
    ``resource.kubernetes.io/admin-access: "true"``, as the API server
    checks on create; namespaces without a Namespace object in the input
    (``namespace_labels`` lacks them) and stored objects
    (``dra_validation.stored_object``) are not judged."""
    def objects():
        for t in templates:
            yield f"ResourceClaimTemplate {t.key}", t.obj, t.namespace, t.claim, "spec.spec"
        for c in claims:
            yield f"ResourceClaim {c.key}", c.obj, c.namespace, c, "spec"

    for label, obj, namespace, claim, path in objects():
        labels = namespace_labels.get(namespace)
        if labels is None or labels.get(ADMIN_ACCESS_LABEL) == "true" or stored_object(obj):
            continue
        for i, r in enumerate(claim.requests):
            if r.exactly is not None and r.exactly.admin_access:
                raise ManifestError(
                    label, f"{path}.devices.requests[{i}].exactly.adminAccess",
                    f"Forbidden: admin access to devices requires the `{ADMIN_ACCESS_LABEL}: "
                    "true` label on the containing namespace", source_of(obj))


def consumer_matches(ref: ConsumerRef, name: str, uid: str) -> bool:
    """A reservedFor entry names this pod: by uid when both have one (as
    upstream), else by name (pods written without a uid)."""
    if ref.resource != "pods" or ref.api_group:
        return False
    if ref.uid and uid:
        return ref.uid == uid
    return ref.name == name


class ClaimState:
    """The DRA objects of a cluster and the claims' scheduling state; a
    ``PodListener`` and ``PodRestorer`` of its ClusterState."""

    def __init__(self, state):
        self.state = state
        self.classes: dict[str, DeviceClassRecord] = {}
        self.slices: list[ResourceSliceRecord] = []
        self.templates: dict[str, ResourceClaimTemplateRecord] = {}
        self.claims: dict[str, ClaimEntry] = {}
        self.in_flight: dict[str, AllocationResult] = {}
        # (pod key, pod claim name) -> name of the claim generated for it
        self.generated: dict[tuple[str, str], str] = {}
        # pod key -> claim keys reserved for it
        self.by_pod: dict[str, list[str]] = {}
        self.controller = True          # generate template claims (simulated controller)
        self.consumable_capacity = False  # DRAConsumableCapacity: share ids share devices
        # snapshots taken and not yet restored: a look at a pod (explain)
        # whose claim changes are undone after it, so no cluster event
        self.looking = 0
        self.objects_version = 0        # moves when classes / slices change
        # the devices the claims hold (``dra_in_use``); its sets are live
        self.in_use = DevicesInUse(self)
        self.devices_in_use = self.in_use.exclusive
        self.shared_in_use = self.in_use.shared
        self.capacity_in_use = self.in_use.capacity
        self._just_released: tuple | None = None
        # predicates of the victim searches under way (innermost last): a
        # claim one of them picks is not freed by a pod taken off
        self._kept_in_search: list = []
        state.listeners.add(self)
        state.restorers.append(self)

    # ----------------------------------------------------------- attach
    @classmethod
    def of(cls, state) -> ClaimState:
        return state.derived.extension(EXTENSION, cls)

    @staticmethod
    def attached(state) -> ClaimState | None:
        return state.derived.extension_if_any(EXTENSION)

    def load(self, classes=(), slices=(), templates=(), claims=()) -> None:
        """Add loaded objects (records of ``records.dra_records``); all of
        them are checked before any is kept, so an error changes nothing."""
        check_selectors(classes, templates, claims)
        check_admin_access(self.state.namespace_labels, templates, claims)
        entries = []
        seen = set(self.claims)
        for rec in claims:
            if rec.key in seen:
                raise StateError(f"ResourceClaim {rec.key}: already in the cluster state")
            seen.add(rec.key)
            allocated_ns, conditions = _status_of(rec)
            entries.append(ClaimEntry(rec, rec.allocation, list(rec.reserved_for),
                                      allocated_ns, conditions, _owner(rec)))
        for c in classes:
            self.classes[c.name] = c
        self.slices.extend(slices)
        for t in templates:
            self.templates[t.key] = t
        for e in entries:
            self._add(e)
        self.objects_version += 1

    def _add(self, e: ClaimEntry) -> None:
        self.claims[e.key] = e
        if e.allocation is not None:
            self.in_use.count(e.allocation, +1)
        for ref in e.reserved_for:
            if ref.resource == "pods" and not ref.api_group:
                self.by_pod.setdefault(f"{e.record.namespace}/{ref.name}", []).append(e.key)

    def columns(self):
        """The devices of the loaded slices (``DevicesInUse.columns``)."""
        return self.in_use.columns()

    def in_use_rows(self):
        """[D] bool over ``columns()`` rows: devices in exclusive use."""
        return self.in_use.in_use_rows()

    def claim_has_pending_allocation(self, key: str) -> bool:
        return key in self.in_flight

    # --------------------------------------------------------- lifecycle
    def get(self, namespace: str, name: str) -> ClaimEntry | None:
        return self.claims.get(f"{namespace}/{name}")

    def generate(self, pod, pod_claim) -> ClaimEntry:
        """The claim the resourceclaim controller makes for ``pod``'s
        template claim ``pod_claim`` (``<pod>-<claim>``, owned by the pod),
        made once; StateError when the template is missing."""
        name = self.generated.get((pod.key, pod_claim.name))
        if name is not None and f"{pod.namespace}/{name}" in self.claims:
            return self.claims[f"{pod.namespace}/{name}"]
        tkey = f"{pod.namespace}/{pod_claim.template_name}"
        template = self.templates.get(tkey)
        if template is None:
            raise StateError(f'pod "{pod.key}": waiting for resource claim template {tkey} '
                             "(not found)")
        name = f"{pod.name}-{pod_claim.name}"
        n = 0
        while f"{pod.namespace}/{name}" in self.claims:
            n += 1
            name = f"{pod.name}-{pod_claim.name}-{n}"
        rec = template.instantiate(pod.namespace, name)
        e = ClaimEntry(rec, owner=(pod.name, pod.uid), generated=True)
        self._add(e)
        self.generated[(pod.key, pod_claim.name)] = name
        return e

    def forget_generated(self, keep) -> None:
        """Drop the generated claims not in ``keep`` (claim keys) that hold
        nothing: what a look at a pod (explain) made and did not use."""
        for key, e in list(self.claims.items()):
            if key in keep or not e.generated or e.allocation is not None or e.reserved_for \
                    or key in self.in_flight:
                continue
            del self.claims[key]
            for k, name in list(self.generated.items()):
                if f"{e.record.namespace}/{name}" == key:
                    del self.generated[k]

    def create(self, e: ClaimEntry) -> None:
        """A claim the scheduler makes (DRA extended resources), added as
        written; StateError when one of that name exists."""
        if e.key in self.claims:
            raise StateError(f"resourceclaim {e.key} already exists")
        self._add(e)

    def hold_in_flight(self, key: str, allocation: AllocationResult) -> None:
        """Reserve: the allocation is held in memory until PreBind."""
        if key in self.in_flight:
            self.in_use.count(self.in_flight.pop(key), -1)
        self.in_flight[key] = allocation
        self.in_use.count(allocation, +1)

    def drop_in_flight(self, key: str) -> AllocationResult | None:
        got = self.in_flight.pop(key, None)
        if got is not None:
            self.in_use.count(got, -1)
        return got

    def commit(self, key: str, allocation: AllocationResult, now_ns: int | None) -> None:
        """PreBind: the in-flight allocation becomes the claim's status."""
        self.drop_in_flight(key)
        e = self.claims[key]
        if e.allocation is not None:
            self.in_use.count(e.allocation, -1)
        e.allocation = allocation
        e.allocated_ns = now_ns
        e.conditions = {}
        self.in_use.count(allocation, +1)

    def report_conditions(self, key: str, device: tuple, true_types) -> None:
        """A driver reports the conditions of one allocated device of claim
        ``key`` (its ``status.devices[]`` entry): ``true_types``, the
        condition types now True, replace what it reported before.
        StateError for an unknown claim or a device the claim was not
        allocated; nothing changes then."""
        e = self.claims.get(key)
        if e is None:
            raise StateError(f"resourceclaim {key} not found")
        did = tuple(device)
        if e.allocation is None or all(r.device_id != did for r in e.allocation.results):
            raise StateError(f"resourceclaim {key}: device {'/'.join(map(str, did))} "
                             "is not allocated to it")
        e.conditions = {**e.conditions, did: set(true_types)}

    def reserve(self, key: str, pod) -> None:
        """Add ``pod`` to the claim's reservedFor."""
        e = self.claims[key]
        if any(consumer_matches(r, pod.name, pod.uid) for r in e.reserved_for):
            return
        e.reserved_for.append(ConsumerRef("pods", pod.name, pod.uid))
        got = self.by_pod.setdefault(pod.key, [])
        if key not in got:
            got.append(key)

    def deallocate(self, key: str) -> None:
        """Clear the claim's allocation and reservations (PostFilter, the
        controller for a claim reserved for nobody)."""
        e = self.claims[key]
        if e.allocation is not None:
            self.in_use.count(e.allocation, -1)
        e.allocation = None
        e.allocated_ns = None
        e.conditions = {}
        for ref in e.reserved_for:
            keys = self.by_pod.get(f"{e.record.namespace}/{ref.name}")
            if keys and key in keys:
                keys.remove(key)
        e.reserved_for = []

    def unreserve(self, key: str, pod) -> None:
        """Take ``pod`` out of the claim's reservedFor."""
        e = self.claims.get(key)
        if e is None:
            return
        e.reserved_for = [r for r in e.reserved_for
                          if not consumer_matches(r, pod.name, pod.uid)]
        keys = self.by_pod.get(pod.key)
        if keys and key in keys:
            keys.remove(key)
            if not keys:
                del self.by_pod[pod.key]

    def delete(self, key: str) -> ClaimEntry | None:
        e = self.claims.pop(key, None)
        if e is None:
            return None
        if e.allocation is not None:
            self.in_use.count(e.allocation, -1)
        self.drop_in_flight(key)
        for ref in e.reserved_for:
            keys = self.by_pod.get(f"{e.record.namespace}/{ref.name}")
            if keys and key in keys:
                keys.remove(key)
        return e

    # ------------------------------------------------------ pods leaving
    def on_pod(self, rec, row: int, delta: int) -> None:
        """ClusterState listener: a pod that leaves its node gives up its claims."""
        if delta > 0:
            jr = self._just_released
            self._just_released = None
            if jr is not None and jr[0] == rec.key and jr[1] == row:
                self._put_back(rec, jr[2])      # update_pod: the same pod, back at once
            return
        held = self._release(rec)
        self._just_released = (rec.key, row, held) if held else None

    def begin_victim_search(self, kept) -> None:
        """A victim search starts: until ``end_victim_search``, a pod taken
        off its node keeps the claims ``kept(ClaimEntry) -> bool`` picks."""
        self._kept_in_search.append(kept)

    def end_victim_search(self) -> None:
        self._kept_in_search.pop()

    def _release(self, rec) -> list:
        """Free what pod ``rec`` holds; the entries as they were (copies)."""
        keys = self.by_pod.get(rec.key)
        if not keys:
            return []
        held = [copy.copy(self.claims[k]) for k in keys if k in self.claims]
        for e in held:
            e.reserved_for = list(e.reserved_for)
        kept = self._kept_in_search[-1] if self._kept_in_search else None
        stay = []
        for k in list(keys):
            e = self.claims.get(k)
            if e is None:
                continue
            if kept is not None and kept(e):
                stay.append(k)          # the dry run does not free it
                continue
            self.unreserve(k, rec)
            if e.owner is not None and e.owner[0] == rec.name and \
                    (not e.owner[1] or not rec.uid or e.owner[1] == rec.uid):
                self.delete(k)          # garbage collected with its pod
            elif not e.reserved_for:
                self.deallocate(k)      # the controller frees an unused claim
        if stay:
            self.by_pod[rec.key] = stay
        else:
            self.by_pod.pop(rec.key, None)
        return held

    def _put_back(self, rec, held: list) -> None:
        for old in held:
            cur = self.claims.get(old.key)
            if cur is not None:
                if cur.allocation is not None:
                    self.in_use.count(cur.allocation, -1)
                self.claims.pop(old.key)
            self.claims[old.key] = old
            if old.allocation is not None:
                self.in_use.count(old.allocation, +1)
            got = self.by_pod.setdefault(rec.key, [])
            if old.key not in got:
                got.append(old.key)

    # ------------------------------------------------------ PodRestorer
    def checkpoint(self):
        return self._just_released

    def rollback(self, mark) -> None:
        self._just_released = mark

    def hold(self, key: str):
        keys = self.by_pod.get(key)
        if not keys:
            return None
        return [copy.copy(self.claims[k]) for k in keys if k in self.claims]

    def regain(self, key: str, rec, row: int, held) -> None:
        self._just_released = None
        if held:
            # fresh copies: ``held`` serves every regain of the pod, and
            # what goes back is live (a later removal changes it)
            fresh = []
            for e in held:
                c = copy.copy(e)
                c.reserved_for = list(e.reserved_for)
                fresh.append(c)
            self._put_back(rec, fresh)


def snapshot(store: ClaimState) -> dict:
    """What a scheduling cycle may change of ``store``'s claims there are
    now: per claim its allocation, allocation time, binding conditions and
    reservations.  ``restore`` puts them back (explain's PostFilter
    deallocates, and explaining leaves the cluster as it was); until then
    ``store.looking`` counts it."""
    store.looking += 1
    return {k: (e.allocation, e.allocated_ns, e.conditions, tuple(e.reserved_for))
            for k, e in store.claims.items()}


def restore(store: ClaimState, snap: dict) -> None:
    """Each claim of ``snap`` that is still in ``store`` as it was then: its
    devices counted in use again, its pods' reservations back."""
    store.looking = max(store.looking - 1, 0)
    for key, (allocation, allocated_ns, conditions, reserved) in snap.items():
        e = store.claims.get(key)
        if e is None:
            continue
        if e.allocation is not allocation:
            if e.allocation is not None:
                store.in_use.count(e.allocation, -1)
            if allocation is not None:
                store.in_use.count(allocation, +1)
        e.allocation, e.allocated_ns, e.conditions = allocation, allocated_ns, conditions
        if tuple(e.reserved_for) == reserved:
            continue
        for ref in e.reserved_for:
            keys = store.by_pod.get(f"{e.record.namespace}/{ref.name}")
            if keys and key in keys:
                keys.remove(key)
        e.reserved_for = list(reserved)
        for ref in reserved:
            if ref.resource == "pods" and not ref.api_group:
                got = store.by_pod.setdefault(f"{e.record.namespace}/{ref.name}", [])
                if key not in got:
                    got.append(key)


def binding_claims(state) -> dict[str, dict[str, list[dict]]]:
    """pod key -> {claim key: the devices allocated to it
    (``status.allocation.devices.results`` entries as dicts)} for every pod
    a claim with an allocation is reserved for; empty without DRA state."""
    store = ClaimState.attached(state)
    if store is None:
        return {}
    out: dict[str, dict[str, list[dict]]] = {}
    for pod_key, keys in store.by_pod.items():
        held = {k: [r.to_dict() for r in store.claims[k].allocation.results]
                for k in keys if k in store.claims and store.claims[k].allocation is not None}
        if held:
            out[pod_key] = held
    return out
