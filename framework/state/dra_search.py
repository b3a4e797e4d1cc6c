"""One Allocate call of Dynamic Resource Allocation's structured allocator,
on the host: upstream's search for one node, with upstream's errors.

Upstream: ``k8s.io/dynamic-resource-allocation/structured`` (``Allocate(node,
claims)``), with the semantics of its most complete implementation: claims
are allocated one after the other, each claim's requests in order, each
request's devices one at a time; candidates are tried in pool order (pools
sorted by driver and name, pools of devices with binding conditions last),
slices by name, devices as listed; the first complete solution wins and a
dead end backtracks.  ``firstAvailable`` subrequests are tried in order;
``All`` takes every matching device of the node's complete pools; class and
request CEL selectors, ``matchAttribute`` / ``distinctAttribute``
constraints, admin access, device taints and tolerations, counter sets of
partitionable devices, consumable capacity of multi-allocatable devices,
binding conditions and per-device node selection are honoured when their
feature gates are on (:class:`DraFeatures`).

Errors are :class:`AllocationError` with upstream's message; ``scope`` is
``"node"`` for a node-specific failure (invalid pools: the plugin reports the
node UnschedulableAndUnresolvable) and ``"pod"`` otherwise (an Error status).
Claims are named as ``klog.KObj`` names them ("claim ns/name"; the name
alone for a claim without a namespace).

Share IDs of multi-allocatable devices are derived from the claim, request
and device (upstream draws random UUIDs), so results are deterministic.

The search reads what is node-independent (selector status columns, pool
views, available counters) from the :class:`~.dra_allocator.Allocator` that
runs it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.records.dra_records import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocatedConfig,
    AllocationResult,
    DeviceClassRecord,
    DeviceRequestAllocationResult,
    ExactRequest,
    ResourceClaimRecord,
)

from .dra_devices import Pool, node_matches, qualify

__all__ = ["DraFeatures", "AllocationError", "FEATURE_GATES", "claim_ref", "features_of_gates"]


#: Feature gate -> DraFeatures field (DRADeviceBindingConditions and
#: DRAResourceClaimDeviceStatus together turn on binding_and_status).
FEATURE_GATES = {
    "DRAAdminAccess": "admin_access",
    "DRAPrioritizedList": "prioritized_list",
    "DRAPartitionableDevices": "partitionable_devices",
    "DRADeviceTaints": "device_taints",
    "DRAConsumableCapacity": "consumable_capacity",
    "DRAListTypeAttributes": "list_type_attributes",
    "DRADeviceBindingConditions": None,
    "DRAResourceClaimDeviceStatus": None,
}

NODE_NAME_SELECTOR = "metadata.name"
CLAIM = "\x00claim\x00"  # stands for the claim's name in cached selector errors
STATUS_NO, STATUS_MATCH, STATUS_ERROR = 0, 1, 2


@dataclass(frozen=True)
class DraFeatures:
    """The allocator's switches (upstream ``structured.Features``)."""

    admin_access: bool = False
    prioritized_list: bool = False
    partitionable_devices: bool = False
    device_taints: bool = False
    consumable_capacity: bool = False
    list_type_attributes: bool = False
    binding_and_status: bool = False

    @classmethod
    def from_gates(cls, gates) -> DraFeatures:
        """The gates that are ON; every other DRA gate is off.  An unknown
        gate name is a ValueError."""
        gates = set(gates)
        unknown = gates - set(FEATURE_GATES)
        if unknown:
            raise ValueError(
                f"unknown DRA feature gates: {', '.join(sorted(unknown))} "
                f"(known: {', '.join(FEATURE_GATES)})"
            )
        kw = {f: True for g, f in FEATURE_GATES.items() if f and g in gates}
        kw["binding_and_status"] = {
            "DRADeviceBindingConditions",
            "DRAResourceClaimDeviceStatus",
        } <= gates
        return cls(**kw)

    @classmethod
    def default(cls) -> DraFeatures:
        """Kubernetes 1.35's defaults: admin access and prioritized lists on
        (beta), the alpha features off."""
        return cls(admin_access=True, prioritized_list=True)


def features_of_gates(gates) -> DraFeatures:
    """``DraFeatures.from_gates`` of the gate names ``gates`` the allocator
    reads (others, e.g. DRAExtendedResource, are the plugin's own)."""
    return DraFeatures.from_gates(set(gates) & set(FEATURE_GATES))


class AllocationError(TensorschedError):
    """The claims cannot be allocated because of an error (not merely for
    lack of devices).  ``scope``: ``"pod"`` or ``"node"``."""

    def __init__(self, message: str, scope: str = "pod"):
        super().__init__(message)
        self.scope = scope


class _MaxSize(Exception):
    """A claim would get more than ALLOCATION_RESULTS_MAX_SIZE devices."""


def claim_ref(claim: ResourceClaimRecord) -> str:
    """klog.KObj: namespace/name, the name alone without a namespace."""
    return f"{claim.namespace}/{claim.name}" if claim.namespace else claim.name


# --------------------------------------------------------------------------
# per-request data


@dataclass
class _Request:
    key: tuple  # (claim index, request index, subrequest index or -1)
    spec: ExactRequest
    name: str  # the request's or subrequest's own name
    parent: str | None  # the parent request's name for a subrequest
    cls: DeviceClassRecord
    num_devices: int = 0
    all_rows: list = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name

    @property
    def admin(self) -> bool:
        return bool(self.spec.admin_access)


@dataclass
class NodeView:
    """What one node reaches: its pools, and per pool the device rows of the
    slices targeting it, in search order."""

    name: str
    labels: dict
    pools: list[Pool]
    rows: np.ndarray  # [V] device rows, search order (complete, valid pools)
    pool_of: np.ndarray  # [V] index into pools
    any_invalid: bool
    any_incomplete: bool


# --------------------------------------------------------------------------
# the allocator


_NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or "
    "guarding the check with has() for optional fields"
)


def with_cel_hint(message: str) -> str:
    """Upstream appends advice to a missing attribute's error."""
    return message + _NO_SUCH_KEY_HINT if message.startswith("no such key") else message


# --------------------------------------------------------------------------
# constraints


class _Constraint:
    def __init__(self, search: NodeSearch, claim_index: int, index: int, requests, attribute: str):
        self.search = search
        self.claim_index = claim_index
        self.index = index
        self.requests = set(requests)
        self.attribute = attribute
        self.stack: list = []

    def applies(self, req: _Request) -> bool:
        if not self.requests:
            return True
        return (
            req.name in self.requests
            if req.parent is None
            else (req.parent in self.requests or req.full_name in self.requests)
        )

    def lookup(self, row: int):
        sl, dev = self.search.cols.device(row)
        attr = dev.attributes.get(self.attribute)
        if attr is None:
            dom, _, ident = self.attribute.partition("/")
            if dom != sl.driver:
                return None
            attr = dev.attributes.get(ident)
            if attr is None:
                return None
        lists = self.search.features.list_type_attributes
        if (
            attr.kind == "none"
            or (attr.is_list and not lists)
            or (attr.is_list and not attr.value)
        ):
            claim = self.search.alloc.claims[self.claim_index]
            raise AllocationError(
                f"claim {claim_ref(claim)}, constraint #{self.index}: "
                f"attribute {self.attribute}: unsupported attribute value"
            )
        return attr.as_set() if lists else (attr.kind, attr.value)

    def add(self, req: _Request, row: int) -> bool:
        if not self.applies(req):
            return True
        value = self.lookup(row)
        if value is None or not self._accepts(value):
            return False
        self._push(value)
        return True

    def remove(self, req: _Request, row: int) -> None:
        if self.applies(req):
            self.stack.pop()


class _MatchAttribute(_Constraint):
    """All devices share a value (with list values: one common element)."""

    def _accepts(self, value) -> bool:
        if not self.stack:
            return True
        if isinstance(value, frozenset):
            return bool(self.stack[-1] & value)
        return value == self.stack[0]

    def _push(self, value) -> None:
        if isinstance(value, frozenset) and self.stack:
            value = self.stack[-1] & value
        self.stack.append(value)


class _DistinctAttribute(_Constraint):
    """No two devices share a value (with list values: disjoint sets)."""

    def _accepts(self, value) -> bool:
        if isinstance(value, frozenset):
            return all(not (value & other) for other in self.stack)
        return all(value != other for other in self.stack)

    def _push(self, value) -> None:
        self.stack.append(value)


# --------------------------------------------------------------------------
# consumable capacity


def _consumed_amount(requested, cap):
    policy = cap.request_policy
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else cap.value
    if policy is None:
        return requested
    if policy.has_range:
        if requested < policy.range_min:
            return policy.range_min
        if policy.range_step is None:
            return requested
        steps = -(-(requested - policy.range_min) // policy.range_step)
        return policy.range_min + steps * policy.range_step
    if policy.valid_values is not None:
        for v in policy.valid_values:
            if requested <= v:
                return v
    return requested


def _violates(value, policy) -> bool:
    if policy is None or (policy.default is not None and value == policy.default):
        return False
    if policy.has_range:
        if policy.range_max is not None and value > policy.range_max:
            return True
        return (
            policy.range_step is not None and (value - policy.range_min) % policy.range_step != 0
        )
    if policy.valid_values:
        return value not in policy.valid_values
    return False


# --------------------------------------------------------------------------
# one Allocate call


@dataclass
class _Pick:
    req: _Request
    row: int
    share_id: str | None = None
    consumed: dict | None = None


class NodeSearch:
    """One Allocate for one node; ``alloc`` is the Allocator that holds the
    node-independent parts."""

    def __init__(self, alloc, view: NodeView):
        self.alloc = alloc
        self.view = view
        self.cols = alloc.columns
        self.features = alloc.features
        self.requests: dict[tuple, _Request] = {}
        self.selected_sub: dict[tuple, int] = {}
        self.constraints: list[list[_Constraint]] = []
        self.allocating: dict[tuple, set] = {}
        self.allocating_capacity: dict[tuple, dict] = {}
        self.consumed_counters: dict[tuple, dict] = {}
        self.shares: dict[tuple, int] = {}  # shares of multi-allocatable devices taken
        self.results: list[list[_Pick]] = [[] for _ in alloc.claims]
        self._candidates: dict[tuple, list] = {}
        self._row_id: dict[int, tuple] = {}

    # ------------------------------------------------------------ helpers

    def device_id(self, row: int) -> tuple:
        got = self._row_id.get(row)
        if got is None:
            got = self._row_id[row] = self.cols.device_id(row)
        return got

    def in_use(self, row: int, dev: tuple) -> bool:
        return self.alloc.in_use_rows[row] or bool(self.allocating.get(dev))

    def selectable(self, req: _Request, row: int) -> bool:
        status, errors = self.alloc.status(req.key, req.spec, req.cls)
        s = status[row]
        if s == STATUS_ERROR:
            claim = self.alloc.claims[req.key[0]]
            raise AllocationError(errors[row].replace(CLAIM, claim_ref(claim)))
        if s == STATUS_NO:
            return False
        if self.cols.per_device_node[row]:
            _, dev = self.cols.device(row)
            return node_matches(
                self.view.name, self.view.labels, dev.node_name, dev.all_nodes, dev.node_selector
            )
        return True

    def candidates(self, req: _Request) -> list:
        """(row, pool) of the node's devices in search order whose status is
        not 'no match' (errors included: raised when reached)."""
        got = self._candidates.get(req.key)
        if got is None:
            status, _ = self.alloc.status(req.key, req.spec, req.cls)
            keep = status[self.view.rows] != STATUS_NO
            pools = self.view.pools
            got = [
                (int(r), pools[p]) for r, p in zip(self.view.rows[keep], self.view.pool_of[keep])
            ]
            self._candidates[req.key] = got
        return got

    # ------------------------------------------------------------ validation

    def validate(self, claim, spec: ExactRequest, key, parent: str | None) -> _Request:
        ref = claim_ref(claim)
        name = spec.name if parent else claim.requests[key[1]].name
        for i, sel in enumerate(spec.selectors):
            if sel is None:
                raise AllocationError(
                    f"claim {ref}, request {name}, selector #{i}: "
                    "CEL expression empty (unsupported selector type?)"
                )
        if not self.features.admin_access and spec.admin_access is not None:
            raise AllocationError(
                f"claim {ref}, request {name}: admin access is requested, "
                "but the feature is disabled"
            )
        if not spec.device_class_name:
            raise AllocationError(
                f"claim {ref}, request {name}: missing device class name "
                "(unsupported request type?)"
            )
        cls = self.alloc.classes.get(spec.device_class_name)
        if cls is None:
            raise AllocationError(
                f"claim {ref}, request {name}: could not retrieve device class "
                f"{spec.device_class_name}: deviceclass.resource.k8s.io "
                f'"{spec.device_class_name}" not found'
            )
        for i, sel in enumerate(cls.selectors):
            if sel is None:
                raise AllocationError(
                    f"class {cls.name}: selector #{i}: CEL expression empty "
                    "(unsupported selector type?)"
                )
        req = _Request(key, spec, name, parent, cls)
        if spec.allocation_mode == "ExactCount":
            req.num_devices = spec.count
            return req
        for pool in self.view.pools:
            if pool.incomplete:
                raise AllocationError(
                    f"claim {ref}, request {name}: asks for all devices, but "
                    f"resource pool {pool.pool_id} is currently being updated"
                )
            if pool.invalid:
                raise AllocationError(
                    f"claim {ref}, request {name}: asks for all devices, but "
                    f"resource pool {pool.pool_id} is currently invalid"
                )
        for row, pool in self.candidates(req):
            if not self.selectable(req, row):
                continue
            if self.features.consumable_capacity:
                _, ok = self.capacity_fits(req, row)
                if not ok:
                    continue
            req.all_rows.append((row, pool))
        req.num_devices = len(req.all_rows)
        return req

    def prepare(self) -> None:
        f = self.features
        for ci, claim in enumerate(self.alloc.claims):
            ref = claim_ref(claim)
            min_devices = 0
            for ri, request in enumerate(claim.requests):
                subs = request.first_available
                if subs and not f.prioritized_list:
                    raise AllocationError(
                        f"claim {ref}, request {request.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                if (
                    not f.consumable_capacity
                    and request.exactly is not None
                    and request.exactly.capacity_requests is not None
                ):
                    raise AllocationError(
                        f"claim {ref}, request {request.name}: has capacity "
                        "requests, but the DRAConsumableCapacity feature is disabled"
                    )
                if subs:
                    fewest = None
                    for si, sub in enumerate(subs):
                        if not f.consumable_capacity and sub.capacity_requests is not None:
                            raise AllocationError(
                                f"claim {ref}, subrequest {sub.name}: has capacity "
                                "requests, but the DRAConsumableCapacity feature "
                                "is disabled"
                            )
                        req = self.validate(claim, sub, (ci, ri, si), request.name)
                        self.requests[(ci, ri, si)] = req
                        fewest = (
                            req.num_devices if fewest is None else min(fewest, req.num_devices)
                        )
                    min_devices += fewest
                else:
                    req = self.validate(claim, request.exactly, (ci, ri, -1), None)
                    self.requests[(ci, ri, -1)] = req
                    min_devices += req.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {ref}: number of requested devices {min_devices} "
                    f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            constraints = []
            for i, c in enumerate(claim.constraints):
                if c.match_attribute is not None:
                    constraints.append(_MatchAttribute(self, ci, i, c.requests, c.match_attribute))
                elif c.distinct_attribute is not None:
                    constraints.append(
                        _DistinctAttribute(self, ci, i, c.requests, c.distinct_attribute)
                    )
                else:
                    raise AllocationError(
                        f"claim {ref}, constraint #{i}: empty constraint "
                        "(unsupported constraint type?)"
                    )
            self.constraints.append(constraints)

    # ------------------------------------------------------------ search

    def run(self) -> list[AllocationResult] | None:
        self.prepare()
        try:
            done = self.allocate_one(0, 0, -1, 0, False)
        except _MaxSize:
            done = False
        if not done:
            if self.view.any_invalid:
                raise AllocationError("invalid resource pools were encountered", scope="node")
            return None
        return [self.result(ci) for ci in range(len(self.alloc.claims))]

    def allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub: bool) -> bool:
        claims = self.alloc.claims
        if ci >= len(claims):
            return True
        claim = claims[ci]
        if ri >= len(claim.requests):
            try:
                return self.allocate_one(ci + 1, 0, -1, 0, False)
            except _MaxSize:
                return False
        has_subs = bool(claim.requests[ri].first_available)
        if has_subs and not in_sub:
            all_exceeded = True
            for sub in range(len(claim.requests[ri].first_available)):
                try:
                    ok = self.allocate_one(ci, ri, sub, di, True)
                except _MaxSize:
                    continue
                all_exceeded = False
                if ok:
                    self.selected_sub[(ci, ri)] = sub
                    return True
            if all_exceeded:
                raise _MaxSize
            return False
        req = self.requests[(ci, ri, si if has_subs else -1)]
        do_all = req.spec.allocation_mode == "All"
        if do_all and not req.all_rows:
            return False
        if di >= req.num_devices:
            return self.allocate_one(ci, ri + 1, -1, 0, False)
        if len(self.results[ci]) + req.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSize
        if do_all:
            row, pool = req.all_rows[di]
            undo = self.allocate_device(ci, req, row, pool, must=True)
            if undo is None:
                return False
            try:
                done = self.allocate_one(ci, ri, si, di + 1, in_sub)
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        admin = req.admin
        for row, pool in self.candidates(req):
            dev = self.device_id(row)
            if admin and ci in self.allocating.get(dev, ()):
                continue
            if not admin and self.in_use(row, dev):
                continue
            if not self.selectable(req, row):
                continue
            if self.features.consumable_capacity and not self.capacity_fits(req, row)[1]:
                continue
            undo = self.allocate_device(ci, req, row, pool, must=False)
            if undo is None:
                continue
            try:
                done = self.allocate_one(ci, ri, si, di + 1, in_sub)
            except BaseException:
                undo()
                raise
            if done:
                return True
            undo()
        return False

    def allocate_device(self, ci: int, req: _Request, row: int, pool: Pool, must: bool):
        """Take ``row`` for ``req`` if it is free, its counters, taints and
        the claim's constraints allow; returns the undo function, or None."""
        f = self.features
        _, dev = self.cols.device(row)
        dev_id = self.device_id(row)
        multi = f.consumable_capacity and dev.allow_multiple_allocations
        if not multi and req.admin and ci in self.allocating.get(dev_id, ()):
            return None
        if not req.admin and self.in_use(row, dev_id):
            return None
        if dev.consumes_counters and not f.partitionable_devices:
            return None
        counted = False
        # a device's counters are consumed once, by its first allocation: the
        # shares of a multi-allocatable device use the same partition
        shared_already = multi and (
            self.shares.get(dev_id, 0) > 0 or bool(self.alloc.shared_capacity(dev_id))
        )
        if dev.consumes_counters and not shared_already:
            if not self.take_counters(pool, dev):
                return None
            counted = True

        def release_counters():
            if counted:
                self.return_counters(pool, dev)

        if f.device_taints and any(
            t.effect in ("NoSchedule", "NoExecute")
            and not any(tol.tolerates(t) for tol in req.spec.tolerations)
            for t in dev.taints
        ):
            release_counters()
            return None
        added = []
        for c in self.constraints[ci]:
            if not c.add(req, row):
                if must:
                    claim = self.alloc.claims[ci]
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {req.name}: cannot add device "
                        f"{'/'.join(dev_id)} because a claim constraint would not be satisfied"
                    )
                for done in reversed(added):
                    done.remove(req, row)
                release_counters()
                return None
            added.append(c)
        consumed = None
        share_id = None
        if f.consumable_capacity:
            resolved, ok = self.capacity_fits(req, row)
            if not ok:
                for done in reversed(added):
                    done.remove(req, row)
                release_counters()
                return None
            if multi:
                consumed = {}
                for name, cap in dev.capacity.items():
                    fq = qualify(name, dev_id[0])
                    consumed[name] = _consumed_amount(resolved.get(fq), cap)
                share_id = self.share_id(ci, req, dev_id)
                used = self.allocating_capacity.setdefault(dev_id, {})
                for name, q in consumed.items():
                    fq = qualify(name, dev_id[0])
                    used[fq] = used.get(fq, Fraction(0)) + q
        holders = self.allocating.setdefault(dev_id, set())
        if not multi:
            holders.add(ci)
        else:
            self.shares[dev_id] = self.shares.get(dev_id, 0) + 1
        self.results[ci].append(_Pick(req, row, share_id, consumed or None))

        def undo():
            for c in reversed(added):
                c.remove(req, row)
            holders.discard(ci)
            if multi:
                self.shares[dev_id] -= 1
            if consumed:
                used = self.allocating_capacity[dev_id]
                for name, q in consumed.items():
                    fq = qualify(name, dev_id[0])
                    used[fq] -= q
            release_counters()
            self.results[ci].pop()

        return undo

    def share_id(self, ci: int, req: _Request, dev_id: tuple) -> str:
        claim = self.alloc.claims[ci]
        n = sum(1 for p in self.results[ci] if self.device_id(p.row) == dev_id)
        return str(
            uuid.uuid5(
                uuid.NAMESPACE_URL,
                "/".join((claim.namespace, claim.name, req.full_name, *dev_id, str(n))),
            )
        )

    # ------------------------------------------------------------ counters

    def take_counters(self, pool: Pool, dev) -> bool:
        key = (pool.driver, pool.name)
        available = self.alloc.available_counters(pool)
        used = self.consumed_counters.setdefault(key, {})
        for use in dev.consumes_counters:
            for c, q in use.counters.items():
                k = (use.counter_set, c)
                used[k] = used.get(k, Fraction(0)) + q
        if any(available[k] < used.get(k, 0) for k in available):
            self.return_counters(pool, dev)
            return False
        return True

    def return_counters(self, pool: Pool, dev) -> None:
        used = self.consumed_counters[(pool.driver, pool.name)]
        for use in dev.consumes_counters:
            for c, q in use.counters.items():
                used[(use.counter_set, c)] -= q

    # ------------------------------------------------------------ capacity

    def capacity_fits(self, req: _Request, row: int) -> tuple[dict, bool]:
        """Can ``row`` give ``req`` its capacity (requests resolved to fully
        qualified names), given what is held and being allocated?"""
        _, dev = self.cols.device(row)
        dev_id = self.device_id(row)
        driver = dev_id[0]
        resolved = {}
        for name, q in (req.spec.capacity_requests or {}).items():
            fq = None
            if name in dev.capacity:
                fq = qualify(name, driver)
            elif "/" in name:
                dom, ident = name.split("/", 1)
                if dom == driver and ident in dev.capacity:
                    fq = name
            elif f"{driver}/{name}" in dev.capacity:
                fq = f"{driver}/{name}"
            if fq is None:
                return resolved, False
            resolved[fq] = q
        held = self.alloc.shared_capacity(dev_id)
        taking = self.allocating_capacity.get(dev_id, {})
        for name, cap in dev.capacity.items():
            fq = qualify(name, driver)
            amount = _consumed_amount(resolved.get(fq), cap)
            if _violates(amount, cap.request_policy):
                return resolved, False
            if held.get(fq, 0) + amount + taking.get(fq, 0) > cap.value:
                return resolved, False
        return resolved, True

    # ------------------------------------------------------------ results

    def result(self, ci: int) -> AllocationResult:
        f = self.features
        results = []
        for pick in self.results[ci]:
            _, dev = self.cols.device(pick.row)
            driver, pool, name = self.device_id(pick.row)
            results.append(
                DeviceRequestAllocationResult(
                    request=pick.req.full_name,
                    driver=driver,
                    pool=pool,
                    device=name,
                    admin_access=True if pick.req.admin else None,
                    tolerations=pick.req.spec.tolerations,
                    binding_conditions=dev.binding_conditions if f.binding_and_status else (),
                    binding_failure_conditions=dev.binding_failure_conditions
                    if f.binding_and_status
                    else (),
                    share_id=pick.share_id,
                    consumed_capacity=pick.consumed,
                )
            )
        return AllocationResult(tuple(results), self.configs(ci), self.node_selector(ci))

    def chosen(self, ci: int, ri: int) -> _Request:
        request = self.alloc.claims[ci].requests[ri]
        if request.first_available:
            return self.requests[(ci, ri, self.selected_sub.get((ci, ri), 0))]
        return self.requests[(ci, ri, -1)]

    def configs(self, ci: int) -> tuple:
        claim = self.alloc.claims[ci]
        out: list[AllocatedConfig] = []
        by_class: dict[str, tuple[int, int]] = {}
        for ri in range(len(claim.requests)):
            req = self.chosen(ci, ri)
            span = by_class.get(req.cls.name)
            if span is not None:
                for i in range(*span):
                    out[i] = AllocatedConfig(
                        out[i].source, out[i].requests + (req.full_name,), out[i].config
                    )
                continue
            start = len(out)
            out.extend(
                AllocatedConfig("FromClass", (req.full_name,), cfg) for cfg in req.cls.config
            )
            by_class[req.cls.name] = (start, len(out))
        for cfg in claim.config:
            if not cfg.requests:
                out.append(AllocatedConfig("FromClaim", (), cfg))
                continue
            for ri, request in enumerate(claim.requests):
                if request.name in cfg.requests:
                    out.append(AllocatedConfig("FromClaim", cfg.requests, cfg))
                    continue
                if request.first_available and self.chosen(ci, ri).full_name in cfg.requests:
                    out.append(AllocatedConfig("FromClaim", cfg.requests, cfg))
        return tuple(out)

    def node_selector(self, ci: int) -> dict | None:
        fields: list[dict] = []
        expressions: list[dict] = []
        for pick in self.results[ci]:
            sl, dev = self.cols.device(pick.row)
            if sl.per_device_node_selection:
                node_name, selector = dev.node_name, dev.node_selector
            else:
                node_name, selector = sl.node_name, sl.node_selector
            if node_name or dev.binds_to_node:
                return {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": NODE_NAME_SELECTOR,
                                    "operator": "In",
                                    "values": [self.view.name],
                                }
                            ]
                        }
                    ]
                }
            if selector is None:
                continue
            terms = selector.obj.get("nodeSelectorTerms") or []
            if len(terms) > 1:
                raise AllocationError(
                    f"create NodeSelector for claim {self.alloc.claims[ci].name}: "
                    f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms"
                )
            if terms:
                _add_requirements(terms[0].get("matchFields") or [], fields)
                _add_requirements(terms[0].get("matchExpressions") or [], expressions)
        if not fields and not expressions:
            return None
        term: dict = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


def _add_requirements(source: list, into: list) -> None:
    for req in source:
        values = set(req.get("values") or ())
        if any(
            r.get("key") == req.get("key")
            and r.get("operator") == req.get("operator")
            and set(r.get("values") or ()) == values
            for r in into
        ):
            continue
        into.append(dict(req))
