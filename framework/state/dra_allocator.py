"""The structured-parameters allocator of Dynamic Resource Allocation.

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

What is vectorized: every selector is evaluated for all devices at once
(``dra_cel``) into a per-request status column (match / no match / error),
and :meth:`Allocator.feasible` answers "can this node satisfy all claims" for
every node in one compiled pass (``kernels.dra.first_fit_search``): the same
depth-first search over flat arrays, for claims with exact counts,
``matchAttribute`` / ``distinctAttribute`` constraints, taints and counter
sets (no subrequests, ``All``, admin access or capacity requests).  The NumPy
engine runs the vectorized first fit (``kernels.dra.feasible``) for claims
without constraints or counters.  A node the pass cannot decide (a selector
error on the way, a device it does not judge) and every node of other claims
is searched here, on the host.

Errors are :class:`AllocationError` with upstream's message; ``scope`` is
``"node"`` for a node-specific failure (invalid pools: the plugin reports the
node UnschedulableAndUnresolvable) and ``"pod"`` otherwise (an Error status).
Claims are named as ``klog.KObj`` names them ("claim ns/name"; the name
alone for a claim without a namespace).

Share IDs of multi-allocatable devices are derived from the claim, request
and device (upstream draws random UUIDs), so results are deterministic.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.objects.dra_records import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocatedConfig,
    AllocationResult,
    DeviceClassRecord,
    DeviceRequestAllocationResult,
    ExactRequest,
    ResourceClaimRecord,
)
from tensorsched.kernels import dra as dra_kernels

from .dra_cel import CelError, compile_selector
from .dra_devices import AllocatedState, DeviceColumns, Pool, _node_matches, gather_pools, qualify

__all__ = ["DraFeatures", "AllocationError", "Allocator", "allocate", "FEATURE_GATES"]

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

_NODE_NAME_SELECTOR = "metadata.name"
CLAIM = "\x00claim\x00"     # stands for the claim's name in cached selector errors
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
            raise ValueError(f"unknown DRA feature gates: {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(FEATURE_GATES)})")
        kw = {f: True for g, f in FEATURE_GATES.items() if f and g in gates}
        kw["binding_and_status"] = {"DRADeviceBindingConditions",
                                    "DRAResourceClaimDeviceStatus"} <= gates
        return cls(**kw)

    @classmethod
    def default(cls) -> DraFeatures:
        """Kubernetes 1.35's defaults: admin access and prioritized lists on
        (beta), the alpha features off."""
        return cls(admin_access=True, prioritized_list=True)


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
    key: tuple                    # (claim index, request index, subrequest index or -1)
    spec: ExactRequest
    name: str                     # the request's or subrequest's own name
    parent: str | None            # the parent request's name for a subrequest
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
class _NodeView:
    """What one node reaches: its pools, and per pool the device rows of the
    slices targeting it, in search order."""

    name: str
    labels: dict
    pools: list[Pool]
    rows: np.ndarray              # [V] device rows, search order (complete, valid pools)
    pool_of: np.ndarray           # [V] index into pools
    any_invalid: bool
    any_incomplete: bool


# --------------------------------------------------------------------------
# the allocator


class Allocator:
    """Allocation of ``claims`` (all or none) against ``devices``.

    ``classes``: DeviceClass records (a mapping by name or a sequence);
    ``devices``: a :class:`DeviceColumns` or the ResourceSlice records;
    ``allocated``: devices other claims hold (default: what ``devices``
    records as held); ``features``: :class:`DraFeatures` (default
    :meth:`DraFeatures.default`); ``in_use_rows``: bool[D] devices held
    exclusively, aligned with ``devices`` (saves deriving it from
    ``allocated.devices``; must agree with it).  Build once per pod, then ask
    :meth:`allocate` per node or :meth:`feasible` for many nodes.

    Selector columns and per-node pool views are cached on the
    :class:`DeviceColumns` (``cache``), keyed by content (class and request
    selectors, features) and node name, so pods of one template share them;
    a node's labels are taken to stay what they were when first seen.
    """

    def __init__(self, claims: Sequence[ResourceClaimRecord], *, classes, devices,
                 allocated: AllocatedState | None = None, features: DraFeatures | None = None,
                 in_use_rows: np.ndarray | None = None):
        self.claims = list(claims)
        if isinstance(classes, Mapping):
            self.classes = dict(classes)
        else:
            self.classes = {c.name: c for c in classes}
        self.columns = devices if isinstance(devices, DeviceColumns) else DeviceColumns(devices)
        self.features = features or DraFeatures.default()
        self._allocated = allocated
        cols = self.columns
        if in_use_rows is None:
            if allocated is None:
                in_use_rows = cols.allocated_by >= 0
            else:
                in_use_rows = np.zeros(cols.n, bool)
                for dev in allocated.devices:
                    in_use_rows[cols.rows_of(dev)] = True
        self.in_use_rows = in_use_rows
        self._available_counters: dict[tuple, dict] = {}

    @property
    def allocated(self) -> AllocatedState:
        """What other claims hold (derived from the columns when not given)."""
        if self._allocated is None:
            self._allocated = self.columns.in_use()
        return self._allocated

    def shared_capacity(self, dev_id: tuple) -> dict:
        """Capacity other claims consume on a multi-allocatable device."""
        if self._allocated is not None:
            return self._allocated.capacity.get(dev_id, {})
        if not self.columns.consumed:
            return {}
        return self.allocated.capacity.get(dev_id, {})

    # ---------------------------------------------------------------- status

    def status(self, key: tuple, spec: ExactRequest, cls: DeviceClassRecord) -> tuple[np.ndarray, dict]:
        """Per device: does it satisfy the class and request selectors
        (STATUS_* int8[D]), and the error message of STATUS_ERROR rows."""
        cols = self.columns
        f = self.features
        cache_key = ("status", cls.name, cls.selectors, spec.selectors,
                     f.binding_and_status, f.list_type_attributes)
        got = cols.cache.get(cache_key)
        if got is not None:
            return got
        status = np.full(cols.n, STATUS_MATCH, np.int8)
        errors: dict[int, str] = {}
        if not self.features.binding_and_status:
            status[cols.has_binding_conditions] = STATUS_NO
        problems = dict(cols.cel_problem)
        if not self.features.list_type_attributes:
            for row, msg in cols.list_problem.items():
                problems.setdefault(row, msg)
        first = True
        for owner, exprs in ((f"class {cls.name}", cls.selectors),
                             (f"claim {CLAIM}", spec.selectors)):
            for i, expr in enumerate(exprs):
                pending = status == STATUS_MATCH
                if not pending.any():
                    break
                if first and problems:
                    # upstream converts every attribute before evaluating: a
                    # device CEL cannot read fails every selector
                    for row, msg in problems.items():
                        if pending[row]:
                            status[row] = STATUS_ERROR
                            errors[row] = (f"{owner}: selector #{i} on device "
                                           f"{'/'.join(cols.device_id(row))}: CEL runtime error: {msg}")
                    pending = status == STATUS_MATCH
                first = False
                try:
                    sel = compile_selector(expr)
                except CelError as exc:
                    for row in np.flatnonzero(pending):
                        errors[int(row)] = f"{owner}: selector #{i}: CEL compile error: {exc}"
                    status[pending] = STATUS_ERROR
                    continue
                col = sel.evaluate(cols.values)
                bad = pending & (col.error >= 0)
                for row in np.flatnonzero(bad):
                    errors[int(row)] = (f"{owner}: selector #{i} on device "
                                        f"{'/'.join(cols.device_id(int(row)))}: CEL runtime error: "
                                        f"{_hint(col.messages[col.error[row]])}")
                status[bad] = STATUS_ERROR
                status[pending & (col.error < 0) & ~col.value] = STATUS_NO
        cols.cache[cache_key] = (status, errors)
        return status, errors

    # ---------------------------------------------------------------- nodes

    def view(self, node) -> _NodeView:
        name, labels = _node_identity(node)
        cache_key = ("view", name, self.features.partitionable_devices)
        got = self.columns.cache.get(cache_key)
        if got is not None:
            return got
        pools = gather_pools(self.columns, name, labels, self.features.partitionable_devices)
        rows, owner = [], []
        first = self.columns.first_row
        for p_idx, pool in enumerate(pools):
            if pool.incomplete or pool.invalid:
                continue
            for s in pool.slices:
                r = np.arange(first[s], first[s + 1])
                rows.append(r)
                owner.append(np.full(len(r), p_idx, np.int32))
        view = _NodeView(
            name, labels, pools,
            np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64),
            np.concatenate(owner) if owner else np.zeros(0, np.int32),
            any(p.invalid for p in pools), any(p.incomplete for p in pools))
        self.columns.cache[cache_key] = view
        return view

    def allocate(self, node) -> list[AllocationResult] | None:
        """One AllocationResult per claim (claim order), or None when the
        claims cannot all be satisfied on ``node``; AllocationError on an
        error (see the module docstring)."""
        return _Search(self, self.view(node)).run()

    def explain(self, node) -> str | None:
        """Why the claims cannot be allocated on ``node`` (None when they
        can): the error, else the first request that lacks free matching
        devices on the node, else the constraints, else the competition
        between requests.  For diagnosis (not on the scheduling path)."""
        try:
            if self.allocate(node) is not None:
                return None
        except AllocationError as exc:
            return str(exc)
        view = self.view(node)
        search = _Search(self, view)
        search.prepare()
        f = self.features
        for (ci, ri, si), req in search.requests.items():
            claim = self.claims[ci]
            label = f"claim {claim_ref(claim)}, request {req.full_name}"
            if req.spec.allocation_mode == "All":
                if not req.all_rows:
                    return f"{label}: no device on the node matches the selectors (allocationMode All)"
                continue
            matching = [row for row, _ in search.candidates(req) if search.selectable(req, row)]
            free = [row for row in matching if not self.in_use_rows[row]]
            tainted = 0
            if f.device_taints:
                usable = []
                for row in free:
                    _, dev = self.columns.device(row)
                    if any(t.effect in ("NoSchedule", "NoExecute") and
                           not any(tol.tolerates(t) for tol in req.spec.tolerations) for t in dev.taints):
                        tainted += 1
                    else:
                        usable.append(row)
                free = usable
            if len(free) < req.num_devices and (si == -1 or si == len(claim.requests[ri].first_available) - 1):
                why = (f"{label}: {len(free)} of {req.num_devices} devices available "
                       f"({len(matching)} match the selectors")
                why += f", {len(matching) - len(free) - tainted} in use"
                if tainted:
                    why += f", {tainted} tainted"
                return why + ")"
        constrained = [claim_ref(c) for c in self.claims if c.constraints]
        if constrained:
            return (f"claim {constrained[0]}: the constraints (matchAttribute / distinctAttribute) "
                    "cannot be met by the node's available devices")
        return "cannot allocate all claims (their requests compete for the same devices)"

    def feasible(self, nodes, engine: str = "auto") -> np.ndarray:
        """[N] bool: ``allocate(node) is not None`` for every node, answered
        by one kernel pass where the claims allow it (module docstring);
        errors raise as :meth:`allocate` does.  ``engine``: the kernel's
        (``numpy``, ``numba``, ``auto``)."""
        given = nodes
        nodes = nodes if isinstance(nodes, list) else list(nodes)
        out = np.zeros(len(nodes), bool)
        shape = self._shape()
        enc = self.columns.cache.get(("enc", shape)) if shape is not None else None
        if enc is None:
            enc = self._encode()
            if enc is not None and shape is not None:
                self.columns.cache[("enc", shape)] = enc
        if enc is None or (engine == "numpy" and not enc["plain"]):
            # the host search, node by node (the NumPy engine has no
            # vectorized depth-first search)
            for i, node in enumerate(nodes):
                out[i] = self.allocate(node) is not None
            return out
        if engine not in ("auto", "numba", "numpy"):
            raise ValueError(f"unknown engine {engine!r} (numpy, numba, auto)")
        csr = self._csr(given, nodes)
        ptr, rows, invalid = csr
        # answers only change on nodes whose devices changed hands since the
        # last pass of claims like these (pods of one template): redo those
        memo_key = self._memo_key(csr)
        memo = self.columns.cache.get(memo_key) if memo_key is not None else None
        if memo is not None and memo["csr"] is not csr:
            memo = None                  # another node list took that id
        if memo is not None:
            changed = np.flatnonzero(memo["in_use"] != self.in_use_rows)
            where = memo["node_of_row"][changed]
            if (where == -1).any():
                redo = np.arange(len(nodes))
            else:
                redo = np.unique(where[where >= 0])
            out = memo["out"].copy()
        else:
            redo = np.arange(len(nodes))
            out = np.zeros(len(nodes), bool)
        if len(redo):
            if len(redo) == len(nodes):
                sub_ptr, sub_rows = ptr, rows
            else:
                lengths = ptr[redo + 1] - ptr[redo]
                sub_ptr = np.zeros(len(redo) + 1, np.int64)
                np.cumsum(lengths, out=sub_ptr[1:])
                sub_rows = np.concatenate([rows[ptr[i]:ptr[i + 1]] for i in redo])
            out[redo] = self._decide(sub_ptr, sub_rows, invalid[redo], [nodes[i] for i in redo],
                                     enc, engine)
        if memo_key is not None:
            if memo is None:
                memo = {"csr": csr, "node_of_row": self._node_of_row(ptr, rows, self.columns.n)}
                memos = [k for k in self.columns.cache if k[0] == "feasible"]
                for k in memos[:-63]:
                    del self.columns.cache[k]
                self.columns.cache[memo_key] = memo
            memo["in_use"] = self.in_use_rows.copy()
            memo["out"] = out.copy()
        return out

    def _decide(self, ptr, rows, invalid, nodes, enc, engine) -> np.ndarray:
        if engine == "numpy":
            code = dra_kernels.greedy_first_fit(ptr, rows, enc["status"], enc["counts"],
                                                self.in_use_rows, enc["blocked"], engine="numpy")
        else:
            code, _ = dra_kernels.first_fit_search(
                ptr, rows, enc["status"], enc["counts"], enc["req_claim"], self.in_use_rows,
                enc["blocked"], enc["con_first"], enc["con_applies"], enc["con_code"],
                enc["con_kind"], *enc["counters"])
        out = code == dra_kernels.FIT
        for i in np.flatnonzero((code == dra_kernels.UNDECIDED) | (invalid & ~out)):
            out[i] = self.allocate(nodes[i]) is not None
        return out

    def _shape(self) -> tuple | None:
        """The claims' content the kernels read (requests, constraints, the
        classes' selectors, the features): equal for pods of one template.
        None for claims the kernels do not take."""
        if getattr(self, "_shape_memo", False) is not False:
            return self._shape_memo
        parts = []
        classes = set()
        shape = None
        for claim in self.claims:
            reqs = []
            for r in claim.requests:
                e = r.exactly
                if e is None or e.capacity_requests is not None or e.device_class_name not in self.classes:
                    break
                reqs.append((r.name, e.device_class_name, e.selectors, e.count, e.allocation_mode,
                             e.admin_access, e.tolerations))
                classes.add(e.device_class_name)
            else:
                parts.append((tuple(reqs), claim.constraints))
                continue
            break
        else:
            cls = tuple((n, self.classes[n].selectors) for n in sorted(classes))
            shape = (tuple(parts), cls, self.features)
        self._shape_memo = shape
        return shape

    def _memo_key(self, csr) -> tuple | None:
        """What the all-nodes answer depends on besides the devices in use:
        the claims' shape and the node list (None when capacity sharing
        makes it depend on more)."""
        if self.features.consumable_capacity or self.columns.consumed or self._shape() is None:
            return None
        return ("feasible", self._shape(), id(csr))

    @staticmethod
    def _node_of_row(ptr, rows, n_rows: int) -> np.ndarray:
        """[D]: per device row, the one position in the node list that sees
        it, -1 when several do, -2 when none does."""
        node_of_entry = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
        seen = np.bincount(rows, minlength=n_rows)
        where = np.full(n_rows, -2, np.int64)
        where[rows] = node_of_entry
        where[seen > 1] = -1
        return where

    def _encode(self) -> dict | None:
        """The claims as flat arrays for the kernels, or None when they need
        the host search (subrequests, All, admin access, capacity requests,
        anything that is an error)."""
        cols, f = self.columns, self.features
        counts, statuses, req_claim, con_first = [], [], [], [0]
        applies_rows, codes, kinds = [], [], []
        blocked = cols.per_device_node.copy()
        if f.consumable_capacity:
            blocked |= cols.allow_multiple | cols.has_capacity
        plain = True
        for ci, claim in enumerate(self.claims):
            first_req = len(counts)
            total = 0
            for ri, req in enumerate(claim.requests):
                spec = req.exactly
                if spec is None or spec.allocation_mode != "ExactCount" or spec.admin_access is not None \
                        or spec.capacity_requests is not None or not spec.device_class_name \
                        or spec.device_class_name not in self.classes or None in spec.selectors:
                    return None
                cls = self.classes[spec.device_class_name]
                if None in cls.selectors:
                    return None
                status = self.status((ci, ri, -1), spec, cls)[0]
                if f.device_taints and cols.has_taints.any():
                    status = self._untainted(status, spec)
                counts.append(spec.count)
                statuses.append(status)
                req_claim.append(ci)
                total += spec.count
            if total > ALLOCATION_RESULTS_MAX_SIZE:
                return None
            for c in claim.constraints:
                name = c.match_attribute if c.match_attribute is not None else c.distinct_attribute
                if name is None:
                    return None
                code, problem = self._attribute_codes(name)
                plain = False
                names = set(c.requests)
                row = [first_req <= r < len(counts) and (not names or claim.requests[r - first_req].name in names)
                       for r in range(len(counts))]
                applies_rows.append(row)
                codes.append(code)
                kinds.append(0 if c.match_attribute is not None else 1)
                blocked = blocked | problem
            con_first.append(len(codes))
        n_req = len(counts)
        applies = np.zeros((len(codes), n_req), bool)
        for c, row in enumerate(applies_rows):
            applies[c, :len(row)] = row
        counters = self._counters()
        if f.partitionable_devices:
            blocked = blocked | counters[4]
            if cols.consumes_counters.any():
                plain = False
        else:
            blocked = blocked | cols.consumes_counters
        return {
            "plain": plain,
            "counts": np.asarray(counts, np.int64),
            "status": np.stack(statuses) if statuses else np.zeros((0, cols.n), np.int8),
            "req_claim": np.asarray(req_claim, np.int64),
            "blocked": blocked,
            "con_first": np.asarray(con_first, np.int64),
            "con_applies": applies,
            "con_code": np.stack(codes) if codes else np.zeros((0, cols.n), np.int64),
            "con_kind": np.asarray(kinds, np.int64),
            "counters": counters[:4] if f.partitionable_devices else
            (np.zeros(cols.n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
             np.zeros(0, np.int64)),
        }

    def _untainted(self, status: np.ndarray, spec: ExactRequest) -> np.ndarray:
        """``status`` with devices whose NoSchedule / NoExecute taints the
        request does not tolerate turned to 'no match' (errors stay)."""
        out = status.copy()
        for row in np.flatnonzero(self.columns.has_taints & (status == STATUS_MATCH)):
            _, dev = self.columns.device(int(row))
            if any(t.effect in ("NoSchedule", "NoExecute") and
                   not any(tol.tolerates(t) for tol in spec.tolerations) for t in dev.taints):
                out[row] = STATUS_NO
        return out

    def _attribute_codes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Per device: an id of its value of attribute ``name`` (-1 absent)
        and whether the value is one constraints refuse (no value, a list)."""
        cols = self.columns
        key = ("attr-codes", name)
        got = cols.cache.get(key)
        if got is None:
            codes = np.full(cols.n, -1, np.int64)
            problem = np.zeros(cols.n, bool)
            ids: dict = {}
            dom, _, ident = name.partition("/")
            for row in range(cols.n):
                sl, dev = cols.device(row)
                attr = dev.attributes.get(name)
                if attr is None and dom == sl.driver:
                    attr = dev.attributes.get(ident)
                if attr is None:
                    continue
                if attr.kind == "none" or attr.is_list:
                    problem[row] = True
                    continue
                codes[row] = ids.setdefault((attr.kind, attr.value), len(ids))
            got = cols.cache[key] = (codes, problem)
        return got

    def _counters(self):
        """(ctr_ptr[D+1], ctr_slot[E], ctr_amt[E], slot_cap[K], blocked[D]):
        the counters each device consumes, in milli-units, per (pool,
        counter set, counter) slot of the pool's newest generation.  Devices
        the kernel cannot account exactly are blocked: pools whose devices
        are not all on one node, values finer than a milli-unit."""
        cols = self.columns
        got = cols.cache.get("counters")
        if got is not None:
            return got
        slots: dict = {}
        caps: list[int] = []
        entries: list[list] = [[] for _ in range(cols.n)]
        blocked = np.zeros(cols.n, bool)

        def milli(q):
            m = q * 1000
            return int(m) if m.denominator == 1 else None

        for key, members in cols.pool_slices.items():
            newest = max(cols.slices[s].pool.generation for s in members)
            members = [s for s in members if cols.slices[s].pool.generation == newest]
            sets: dict = {}
            for s in members:
                for cs in cols.slices[s].shared_counters:
                    sets.setdefault(cs.name, cs.counters)
            device_slices = [s for s in members if cols.slices[s].devices]
            nodes = {cols.slices[s].node_name for s in device_slices}
            local = len(nodes) == 1 and None not in nodes
            for s in device_slices:
                for i, dev in enumerate(cols.slices[s].devices):
                    if not dev.consumes_counters:
                        continue
                    row = int(cols.first_row[s]) + i
                    for use in dev.consumes_counters:
                        for c, q in use.counters.items():
                            cap = sets.get(use.counter_set, {}).get(c)
                            amount = milli(q)
                            if not local or cap is None or amount is None or milli(cap) is None:
                                blocked[row] = True
                                continue
                            slot = slots.get((key, use.counter_set, c))
                            if slot is None:
                                slot = slots[(key, use.counter_set, c)] = len(caps)
                                caps.append(milli(cap))
                            entries[row].append((slot, amount))
        ptr = np.zeros(cols.n + 1, np.int64)
        np.cumsum([len(e) for e in entries], out=ptr[1:])
        flat = [x for e in entries for x in e]
        got = (ptr, np.array([a for a, _ in flat], np.int64), np.array([b for _, b in flat], np.int64),
               np.array(caps, np.int64), blocked)
        cols.cache["counters"] = got
        return got

    def _csr(self, given, nodes):
        """(ptr[N+1], rows[V], invalid[N]) of ``nodes``' search-order device
        lists, cached on the columns for the last few node lists (the same
        list object passed again is recognized without reading it)."""
        cache = self.columns.cache
        part = self.features.partitionable_devices
        last = cache.get(("csr-last", part))
        if last is not None and last[0] is given and last[1] == len(nodes):
            return last[2]
        names = tuple([n.name for n in nodes] if nodes and hasattr(nodes[0], "name")
                      else [_node_identity(n)[0] for n in nodes])
        key = ("csr", names, part)
        got = cache.get(key)
        if got is None:
            views = [self.view(n) for n in nodes]
            ptr = np.zeros(len(views) + 1, np.int64)
            np.cumsum([len(v.rows) for v in views], out=ptr[1:])
            rows = np.concatenate([v.rows for v in views]) if views else np.zeros(0, np.int64)
            invalid = np.array([v.any_invalid for v in views], bool)
            got = (ptr, rows, invalid)
            old = [k for k in cache if k[0] == "csr"]
            for k in old[:-7]:
                del cache[k]
            cache[key] = got
        cache[("csr-last", part)] = (given, len(nodes), got)
        return got

    # ---------------------------------------------------------------- counters

    def available_counters(self, pool: Pool) -> dict:
        key = (pool.driver, pool.name)
        got = self._available_counters.get(key)
        if got is None:
            got = {(cs, c): q for cs, counters in pool.counter_sets.items() for c, q in counters.items()}
            cols = self.columns
            for s in [*pool.slices, *pool.other_slices]:
                sl = cols.slices[s]
                base = int(cols.first_row[s])
                for i, dev in enumerate(sl.devices):
                    if not dev.consumes_counters:
                        continue
                    # held exclusively, or shared by claims that consume capacity
                    if not self.in_use_rows[base + i] and \
                            not self.shared_capacity((sl.driver, sl.pool.name, dev.name)):
                        continue
                    for use in dev.consumes_counters:
                        for c, q in use.counters.items():
                            if (use.counter_set, c) in got:
                                got[(use.counter_set, c)] -= q
            self._available_counters[key] = got
        return got


_NO_SUCH_KEY_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or "
                     "guarding the check with has() for optional fields")


def _hint(message: str) -> str:
    """Upstream appends advice to a missing attribute's error."""
    return message + _NO_SUCH_KEY_HINT if message.startswith("no such key") else message


def _node_identity(node) -> tuple[str, dict]:
    if isinstance(node, str):
        return node, {}
    if isinstance(node, tuple):
        return node[0], dict(node[1] or {})
    return node.name, dict(getattr(node, "labels", None) or {})


def allocate(claims, node, *, classes, devices, allocated=None, features=None):
    """One-shot :meth:`Allocator.allocate`."""
    return Allocator(claims, classes=classes, devices=devices, allocated=allocated,
                     features=features).allocate(node)


# --------------------------------------------------------------------------
# constraints


class _Constraint:
    def __init__(self, search: _Search, claim_index: int, index: int, requests, attribute: str):
        self.search = search
        self.claim_index = claim_index
        self.index = index
        self.requests = set(requests)
        self.attribute = attribute
        self.stack: list = []

    def applies(self, req: _Request) -> bool:
        if not self.requests:
            return True
        return req.name in self.requests if req.parent is None else (
            req.parent in self.requests or req.full_name in self.requests)

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
        if attr.kind == "none" or (attr.is_list and not lists) or (attr.is_list and not attr.value):
            claim = self.search.alloc.claims[self.claim_index]
            raise AllocationError(f"claim {claim_ref(claim)}, constraint #{self.index}: "
                                  f"attribute {self.attribute}: unsupported attribute value")
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
        return policy.range_step is not None and (value - policy.range_min) % policy.range_step != 0
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


class _Search:
    def __init__(self, alloc: Allocator, view: _NodeView):
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
        self.shares: dict[tuple, int] = {}             # shares of multi-allocatable devices taken
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
            return _node_matches(self.view.name, self.view.labels, dev.node_name,
                                 dev.all_nodes, dev.node_selector)
        return True

    def candidates(self, req: _Request) -> list:
        """(row, pool) of the node's devices in search order whose status is
        not 'no match' (errors included: raised when reached)."""
        got = self._candidates.get(req.key)
        if got is None:
            status, _ = self.alloc.status(req.key, req.spec, req.cls)
            keep = status[self.view.rows] != STATUS_NO
            pools = self.view.pools
            got = [(int(r), pools[p]) for r, p in zip(self.view.rows[keep], self.view.pool_of[keep])]
            self._candidates[req.key] = got
        return got

    # ------------------------------------------------------------ validation

    def validate(self, claim, spec: ExactRequest, key, parent: str | None) -> _Request:
        ref = claim_ref(claim)
        name = spec.name if parent else claim.requests[key[1]].name
        for i, sel in enumerate(spec.selectors):
            if sel is None:
                raise AllocationError(f"claim {ref}, request {name}, selector #{i}: "
                                      "CEL expression empty (unsupported selector type?)")
        if not self.features.admin_access and spec.admin_access is not None:
            raise AllocationError(f"claim {ref}, request {name}: admin access is requested, "
                                  "but the feature is disabled")
        if not spec.device_class_name:
            raise AllocationError(f"claim {ref}, request {name}: missing device class name "
                                  "(unsupported request type?)")
        cls = self.alloc.classes.get(spec.device_class_name)
        if cls is None:
            raise AllocationError(
                f"claim {ref}, request {name}: could not retrieve device class "
                f"{spec.device_class_name}: deviceclass.resource.k8s.io "
                f"\"{spec.device_class_name}\" not found")
        for i, sel in enumerate(cls.selectors):
            if sel is None:
                raise AllocationError(f"class {cls.name}: selector #{i}: CEL expression empty "
                                      "(unsupported selector type?)")
        req = _Request(key, spec, name, parent, cls)
        if spec.allocation_mode == "ExactCount":
            req.num_devices = spec.count
            return req
        for pool in self.view.pools:
            if pool.incomplete:
                raise AllocationError(f"claim {ref}, request {name}: asks for all devices, but "
                                      f"resource pool {pool.pool_id} is currently being updated")
            if pool.invalid:
                raise AllocationError(f"claim {ref}, request {name}: asks for all devices, but "
                                      f"resource pool {pool.pool_id} is currently invalid")
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
                    raise AllocationError(f"claim {ref}, request {request.name}: has subrequests, "
                                          "but the DRAPrioritizedList feature is disabled")
                if not f.consumable_capacity and request.exactly is not None and \
                        request.exactly.capacity_requests is not None:
                    raise AllocationError(f"claim {ref}, request {request.name}: has capacity "
                                          "requests, but the DRAConsumableCapacity feature is disabled")
                if subs:
                    fewest = None
                    for si, sub in enumerate(subs):
                        if not f.consumable_capacity and sub.capacity_requests is not None:
                            raise AllocationError(f"claim {ref}, subrequest {sub.name}: has capacity "
                                                  "requests, but the DRAConsumableCapacity feature "
                                                  "is disabled")
                        req = self.validate(claim, sub, (ci, ri, si), request.name)
                        self.requests[(ci, ri, si)] = req
                        fewest = req.num_devices if fewest is None else min(fewest, req.num_devices)
                    min_devices += fewest
                else:
                    req = self.validate(claim, request.exactly, (ci, ri, -1), None)
                    self.requests[(ci, ri, -1)] = req
                    min_devices += req.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(f"claim {ref}: number of requested devices {min_devices} "
                                      f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            constraints = []
            for i, c in enumerate(claim.constraints):
                if c.match_attribute is not None:
                    constraints.append(_MatchAttribute(self, ci, i, c.requests, c.match_attribute))
                elif c.distinct_attribute is not None:
                    constraints.append(_DistinctAttribute(self, ci, i, c.requests, c.distinct_attribute))
                else:
                    raise AllocationError(f"claim {ref}, constraint #{i}: empty constraint "
                                          "(unsupported constraint type?)")
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
        shared_already = multi and (self.shares.get(dev_id, 0) > 0
                                    or bool(self.alloc.shared_capacity(dev_id)))
        if dev.consumes_counters and not shared_already:
            if not self.take_counters(pool, dev):
                return None
            counted = True

        def release_counters():
            if counted:
                self.return_counters(pool, dev)

        if f.device_taints and any(t.effect in ("NoSchedule", "NoExecute") and
                                   not any(tol.tolerates(t) for tol in req.spec.tolerations)
                                   for t in dev.taints):
            release_counters()
            return None
        added = []
        for c in self.constraints[ci]:
            if not c.add(req, row):
                if must:
                    claim = self.alloc.claims[ci]
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {req.name}: cannot add device "
                        f"{'/'.join(dev_id)} because a claim constraint would not be satisfied")
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
        return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(
            (claim.namespace, claim.name, req.full_name, *dev_id, str(n)))))

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
        claim = self.alloc.claims[ci]
        f = self.features
        results = []
        for pick in self.results[ci]:
            _, dev = self.cols.device(pick.row)
            driver, pool, name = self.device_id(pick.row)
            results.append(DeviceRequestAllocationResult(
                request=pick.req.full_name, driver=driver, pool=pool, device=name,
                admin_access=True if pick.req.admin else None,
                tolerations=pick.req.spec.tolerations,
                binding_conditions=dev.binding_conditions if f.binding_and_status else (),
                binding_failure_conditions=dev.binding_failure_conditions if f.binding_and_status else (),
                share_id=pick.share_id, consumed_capacity=pick.consumed))
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
                    out[i] = AllocatedConfig(out[i].source, out[i].requests + (req.full_name,),
                                             out[i].config)
                continue
            start = len(out)
            out.extend(AllocatedConfig("FromClass", (req.full_name,), cfg) for cfg in req.cls.config)
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
                return {"nodeSelectorTerms": [{"matchFields": [
                    {"key": _NODE_NAME_SELECTOR, "operator": "In", "values": [self.view.name]}]}]}
            if selector is None:
                continue
            terms = selector.obj.get("nodeSelectorTerms") or []
            if len(terms) > 1:
                raise AllocationError(f"create NodeSelector for claim {self.alloc.claims[ci].name}: "
                                      f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
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
        if any(r.get("key") == req.get("key") and r.get("operator") == req.get("operator")
               and set(r.get("values") or ()) == values for r in into):
            continue
        into.append(dict(req))
