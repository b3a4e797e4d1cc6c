"""Devices as columns, and the resource pools a node can reach.

:class:`DeviceColumns` holds one row per device of every ResourceSlice (in
slice order, devices in slice order): its slice, driver and pool ids, the node
row of a node-local slice (-1 for pools reached through a node selector,
``allNodes`` or per-device node selection), flags the allocator branches on,
and every attribute and capacity dictionary-encoded per fully qualified name
(``<driver>/<name>`` for names without a domain) as :class:`DeviceValues` for
the CEL compiler.  Which claim holds a device (``allocated_by``) and how much
capacity claims consume on shared devices are kept here too, updated in
O(devices changed) by :meth:`DeviceColumns.allocate` / :meth:`release`.

:func:`gather_pools` is upstream's pool gathering (``GatherPools``) for one
node: the slices that target the node, grouped by (driver, pool), only the
newest generation, incomplete pools marked (or dropped when a newer
generation exists elsewhere), invalid pools marked (duplicate device names,
counter sets defined twice or consumed but not defined), sorted by driver
and pool name with pools of devices with binding conditions last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from tensorsched.framework.errors import StateError
from tensorsched.framework.parsing.dra import node_selector_matches
from tensorsched.framework.records.dra_records import (
    LIST_KINDS,
    AllocationResult,
    ResourceSliceRecord,
)
from tensorsched.framework.parsing.semver import parse_semver

from .dra_cel import DeviceValues, Quantity

__all__ = ["DeviceID", "AllocatedState", "DeviceColumns", "Pool", "gather_pools", "qualify"]

DeviceID = tuple  # (driver, pool, device)


def qualify(name: str, driver: str) -> str:
    """A device attribute / capacity name with its domain (the driver's when
    it has none)."""
    return name if "/" in name else f"{driver}/{name}"


@dataclass
class AllocatedState:
    """Devices other claims hold: ``devices`` in exclusive use, and on
    multi-allocatable devices the capacity already consumed (fully qualified
    capacity name -> quantity)."""

    devices: set = field(default_factory=set)
    capacity: dict = field(default_factory=dict)

    @classmethod
    def from_allocations(cls, allocations, features_consumable: bool = True) -> AllocatedState:
        """From the AllocationResults of allocated claims: a result with a
        ``share_id`` (a share of a multi-allocatable device) consumes
        capacity, any other holds its device (admin-access results hold
        nothing, as upstream's allocated-device tracking skips them)."""
        state = cls()
        for alloc in allocations:
            for r in alloc.results:
                state.add_result(r)
        return state

    def add_result(self, r) -> None:
        dev = r.device_id
        if r.admin_access:
            return
        if r.share_id is not None:
            used = self.capacity.setdefault(dev, {})
            for name, q in (r.consumed_capacity or {}).items():
                key = qualify(name, r.driver)
                used[key] = used.get(key, Fraction(0)) + q
            return
        self.devices.add(dev)


def _cel_value(attr):
    """An AttrValue as CEL sees it (None when CEL cannot read it)."""
    kind, v = attr.kind, attr.value
    if kind == "version":
        return parse_semver(v)
    if kind == "versions":
        return tuple(parse_semver(x) for x in v)
    if kind == "none":
        return None
    return v


class DeviceColumns:
    """Every device of ``slices`` as a row (see the module docstring).

    Shapes (D devices, S slices): ``slice_of[D]``, ``index_in_slice[D]``,
    ``driver[D]``, ``pool[D]`` int32 ids; ``node[D]`` int32 node row (-1 when
    not node-local or the node is not in ``node_names``); ``first_row[S+1]``
    (slice s owns rows ``first_row[s]:first_row[s+1]``); flags bool[D];
    ``allocated_by[D]`` int32 index into ``claim_keys`` (-1 free)."""

    def __init__(self, slices, node_names=()):
        self.slices: list[ResourceSliceRecord] = list(slices)
        node_row = {n: i for i, n in enumerate(node_names)}
        counts = [len(s.devices) for s in self.slices]
        self.first_row = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=self.first_row[1:])
        d = int(self.first_row[-1])
        self.n = d
        self.slice_of = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
        self.index_in_slice = (
            (np.arange(d) - self.first_row[self.slice_of]).astype(np.int32)
            if d
            else np.zeros(0, np.int32)
        )
        drivers: dict[str, int] = {}
        pools: dict[tuple, int] = {}
        self.driver = np.zeros(d, np.int32)
        self.pool = np.zeros(d, np.int32)
        self.node = np.full(d, -1, np.int32)
        self.has_binding_conditions = np.zeros(d, bool)
        self.consumes_counters = np.zeros(d, bool)
        self.allow_multiple = np.zeros(d, bool)
        self.has_taints = np.zeros(d, bool)
        self.has_capacity = np.zeros(d, bool)
        self.per_device_node = np.zeros(d, bool)
        # CEL cannot read a device with an attribute without a value, or
        # (DRAListTypeAttributes off) with a list value: message per row
        self.cel_problem: dict[int, str] = {}
        self.list_problem: dict[int, str] = {}
        self.ids: dict[tuple, list[int]] = {}
        # per leaf: the rows that have it and their (type, value) keys; coded
        # into dictionary ids once at the end
        leaf_rows: dict[tuple, list[int]] = {}
        leaf_of: dict[tuple, tuple] = {}
        typed_of: dict = {}
        leaf_keys: dict[tuple, list] = {}
        driver_names: list[str] = []
        flags = {name: [] for name in ("binding", "counters", "multi", "taints", "capacity")}
        per_device = []
        for s_idx, sl in enumerate(self.slices):
            drv = drivers.setdefault(sl.driver, len(drivers))
            if drv == len(driver_names):
                driver_names.append(sl.driver)
            pid = pools.setdefault((sl.driver, sl.pool.name), len(pools))
            base = int(self.first_row[s_idx])
            n_dev = len(sl.devices)
            self.driver[base : base + n_dev] = drv
            self.pool[base : base + n_dev] = pid
            if sl.node_name is not None:
                self.node[base : base + n_dev] = node_row.get(sl.node_name, -1)
            per_device.append((base, n_dev, sl.per_device_node_selection))
            driver = sl.driver
            prefix = driver + "/"
            for i, dev in enumerate(sl.devices):
                row = base + i
                flags["binding"].append(bool(dev.binding_conditions))
                flags["counters"].append(bool(dev.consumes_counters))
                flags["multi"].append(dev.allow_multiple_allocations)
                flags["taints"].append(bool(dev.taints))
                flags["capacity"].append(bool(dev.capacity))
                self.ids.setdefault((driver, sl.pool.name, dev.name), []).append(row)
                for name, attr in dev.attributes.items():
                    kind = attr.kind
                    if kind == "none":
                        self.cel_problem.setdefault(
                            row, f"attribute {name}: unsupported attribute value"
                        )
                        continue
                    if kind in LIST_KINDS:
                        self.list_problem.setdefault(
                            row, f"attribute {name}: unsupported attribute value"
                        )
                    # devices of one model repeat names and values: each
                    # leaf key and CEL value is made once
                    key = leaf_of.get((prefix, name))
                    if key is None:
                        key = leaf_of[(prefix, name)] = (
                            "attr", name if "/" in name else prefix + name)
                    typed = typed_of.get(attr)
                    if typed is None:
                        value = _cel_value(attr)
                        typed = typed_of[attr] = (type(value).__name__, value)
                    got = leaf_rows.get(key)
                    if got is None:
                        got = leaf_rows[key] = []
                        leaf_keys[key] = []
                    got.append(row)
                    leaf_keys[key].append(typed)
                for name, cap in dev.capacity.items():
                    key = ("cap", name if "/" in name else prefix + name)
                    got = leaf_rows.get(key)
                    if got is None:
                        got = leaf_rows[key] = []
                        leaf_keys[key] = []
                    got.append(row)
                    leaf_keys[key].append(("Quantity", Quantity(cap.value)))
        if d:
            self.has_binding_conditions[:] = flags["binding"]
            self.consumes_counters[:] = flags["counters"]
            self.allow_multiple[:] = flags["multi"]
            self.has_taints[:] = flags["taints"]
            self.has_capacity[:] = flags["capacity"]
        for base, n_dev, per in per_device:
            self.per_device_node[base : base + n_dev] = per
        self.driver_names = driver_names
        # slice indexes by the node they name, the rest, and by pool: a node's
        # pools are gathered from its own slices and the non-local ones
        self.local_slices: dict[str, list[int]] = {}
        self.nonlocal_slices: list[int] = []
        self.counter_slices: dict[tuple, list[int]] = {}
        self.pool_slices: dict[tuple, list[int]] = {}
        for s_idx, sl in enumerate(self.slices):
            key = (sl.driver, sl.pool.name)
            if sl.shared_counters:
                self.counter_slices.setdefault(key, []).append(s_idx)
            elif sl.node_name:
                self.local_slices.setdefault(sl.node_name, []).append(s_idx)
            else:
                self.nonlocal_slices.append(s_idx)
            self.pool_slices.setdefault(key, []).append(s_idx)
        self.pool_keys = list(pools)
        leaves = {("driver",): (self.driver.copy(), list(driver_names))}
        multi_ids = self.allow_multiple.astype(np.int32)
        leaves[("multi",)] = (multi_ids, [False, True])
        for key, rows_of_leaf in leaf_rows.items():
            table: dict = {}
            codes = [table.setdefault(h, len(table)) for h in leaf_keys[key]]
            col = np.full(d, -1, np.int32)
            col[rows_of_leaf] = codes
            leaves[key] = (col, [v for (_, v) in table])
        self.values = DeviceValues(d, leaves, self._cel_record)
        # derived data the allocator keeps per content (selector columns,
        # node pool views): valid as long as the slices are
        self.cache: dict = {}
        # allocation state
        self.claim_keys: list[str] = []
        self._claim_index: dict[str, int] = {}
        self.allocated_by = np.full(d, -1, np.int32)
        self.consumed: dict[int, dict[str, Fraction]] = {}
        self._held: dict[str, list] = {}

    # ------------------------------------------------------------------
    # reading

    def device(self, row: int):
        """(slice record, device record) of ``row``."""
        sl = self.slices[int(self.slice_of[row])]
        return sl, sl.devices[int(self.index_in_slice[row])]

    def device_id(self, row: int) -> DeviceID:
        sl, dev = self.device(row)
        return (sl.driver, sl.pool.name, dev.name)

    def rows_of(self, device_id: DeviceID) -> list[int]:
        return self.ids.get(tuple(device_id), [])

    def _cel_record(self, row: int):
        sl, dev = self.device(row)
        attrs: dict = {}
        for name, attr in dev.attributes.items():
            dom, ident = qualify(name, sl.driver).split("/", 1)
            if attr.kind != "none":
                attrs.setdefault(dom, {})[ident] = _cel_value(attr)
        caps: dict = {}
        for name, cap in dev.capacity.items():
            dom, ident = qualify(name, sl.driver).split("/", 1)
            caps.setdefault(dom, {})[ident] = Quantity(cap.value)
        return sl.driver, dev.allow_multiple_allocations, attrs, caps

    # ------------------------------------------------------------------
    # allocation state, O(devices of the claim)

    def allocate(self, claim_key: str, allocation: AllocationResult) -> None:
        """Mark the devices of ``claim_key``'s allocation as held by it.
        A claim allocated twice is an error (release it first)."""
        if claim_key in self._held:
            raise StateError(f"ResourceClaim {claim_key} already holds devices; release it first")
        idx = self._claim_index.get(claim_key)
        if idx is None:
            idx = self._claim_index[claim_key] = len(self.claim_keys)
            self.claim_keys.append(claim_key)
        held = []
        for r in allocation.results:
            rows = self.rows_of(r.device_id)
            if r.admin_access:
                continue
            for row in rows:
                if r.share_id is not None:
                    used = self.consumed.setdefault(row, {})
                    for name, q in (r.consumed_capacity or {}).items():
                        key = qualify(name, r.driver)
                        used[key] = used.get(key, Fraction(0)) + q
                    held.append((row, r.consumed_capacity or {}, r.driver))
                else:
                    self.allocated_by[row] = idx
                    held.append((row, None, r.driver))
        self._held[claim_key] = held

    def release(self, claim_key: str) -> None:
        """Free what ``claim_key`` holds (nothing when it holds nothing)."""
        for row, consumed, driver in self._held.pop(claim_key, ()):
            if consumed is None:
                self.allocated_by[row] = -1
                continue
            used = self.consumed.get(row, {})
            for name, q in consumed.items():
                key = qualify(name, driver)
                used[key] = used.get(key, Fraction(0)) - q
                if used[key] == 0:
                    del used[key]
            if not used:
                self.consumed.pop(row, None)

    def holds(self, claim_key: str) -> bool:
        return claim_key in self._held

    def in_use(self) -> AllocatedState:
        """The allocated state the allocator starts from."""
        state = AllocatedState()
        for row in np.flatnonzero(self.allocated_by >= 0):
            state.devices.add(self.device_id(int(row)))
        for row, used in self.consumed.items():
            dev = self.device_id(row)
            agg = state.capacity.setdefault(dev, {})
            for k, q in used.items():
                agg[k] = agg.get(k, Fraction(0)) + q
        return state


# --------------------------------------------------------------------------
# pools of one node


@dataclass
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[int] = field(default_factory=list)  # device slices targeting the node, by name
    other_slices: list[int] = field(default_factory=list)  # device slices of the pool elsewhere
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


def node_matches(node_name: str, labels: dict, name, all_nodes, selector) -> bool:
    """Whether a slice or device targeting a node by ``name``, ``all_nodes``
    or a node ``selector`` reaches the node ``node_name`` with ``labels``."""
    if name:
        return name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node_name, labels)
    return False


def gather_pools(
    columns: DeviceColumns, node_name: str, labels: dict, partitionable: bool
) -> list[Pool]:
    """The pools ``node_name`` can reach (see the module docstring).

    Slices with counter sets reach every node (upstream); a pool reached
    only through them has no device for the node, so only an invalid or
    incomplete one matters (it is listed; the others are not): such pools
    are judged once for all nodes (:func:`_counter_only_problems`)."""
    slices = columns.slices
    found: dict[tuple, tuple[int, list[int]]] = {}

    def add(key, s_idx):
        # the newest generation's slices stay (upstream's addSlice, in any order)
        gen = slices[s_idx].pool.generation
        have = found.get(key)
        if have is None or gen > have[0]:
            found[key] = (gen, [s_idx])
        elif gen == have[0]:
            have[1].append(s_idx)

    for s_idx in [*columns.local_slices.get(node_name, ()), *columns.nonlocal_slices]:
        sl = slices[s_idx]
        if sl.node_name or sl.all_nodes or sl.node_selector is not None:
            relevant = node_matches(
                node_name, labels, sl.node_name, sl.all_nodes, sl.node_selector
            )
        elif sl.per_device_node_selection:
            relevant = partitionable and any(
                node_matches(node_name, labels, d.node_name, d.all_nodes, d.node_selector)
                for d in sl.devices
            )
        else:
            relevant = False
        if relevant:
            add((sl.driver, sl.pool.name), s_idx)
    if partitionable:
        for key in list(found):
            for s_idx in columns.counter_slices.get(key, ()):
                add(key, s_idx)
    plain, bound = [], []
    for key, (_, members) in found.items():
        pool = _finish_pool(columns, key, sorted(members), partitionable)
        if pool is None:
            continue
        has_bc = any(d.binding_conditions for s in pool.slices for d in slices[s].devices)
        (bound if has_bc else plain).append(pool)
    if partitionable:
        plain.extend(p for key, p in _counter_only_problems(columns) if key not in found)
    plain.sort(key=lambda p: (p.driver, p.name))
    bound.sort(key=lambda p: (p.driver, p.name))
    return plain + bound


def _finish_pool(
    columns: DeviceColumns, key: tuple, members: list[int], partitionable: bool
) -> Pool | None:
    """A gathered pool: complete, incomplete, or None when a newer
    generation replaces it elsewhere (upstream: ignore the pool)."""
    slices = columns.slices
    driver, pool_name = key
    first = slices[members[0]].pool
    all_members = None
    if len(members) != first.resource_slice_count:
        # maybe slices elsewhere complete it, or a newer generation replaces it
        all_members = []
        for s_idx in columns.pool_slices[key]:
            gen = slices[s_idx].pool.generation
            if gen == first.generation:
                all_members.append(s_idx)
            elif gen > first.generation:
                return None
        if len(all_members) != first.resource_slice_count:
            return Pool(driver, pool_name, incomplete=True)
    return _build_pool(columns, driver, pool_name, members, all_members, partitionable)


def _counter_only_problems(columns: DeviceColumns) -> list[tuple[tuple, Pool]]:
    """Pools as a node reaching them only through their counter-set slices
    sees them, when that view is invalid or incomplete (cached)."""
    got = columns.cache.get("counter-only-problems")
    if got is None:
        got = []
        for key, members in columns.counter_slices.items():
            newest = max(columns.slices[s].pool.generation for s in members)
            pool = _finish_pool(
                columns,
                key,
                [s for s in members if columns.slices[s].pool.generation == newest],
                True,
            )
            if pool is not None and (pool.invalid or pool.incomplete):
                got.append((key, pool))
        columns.cache["counter-only-problems"] = got
    return got


def _build_pool(
    columns: DeviceColumns,
    driver: str,
    name: str,
    members: list[int],
    all_members: list[int] | None,
    partitionable: bool,
) -> Pool:
    slices = columns.slices
    members = sorted(members, key=lambda s: slices[s].name)
    if partitionable:
        counter_slices = [s for s in members if slices[s].shared_counters]
        device_slices = [s for s in members if not slices[s].shared_counters]
    else:
        counter_slices, device_slices = [], members
    seen = set()
    for s in device_slices:
        for dev in slices[s].devices:
            if dev.name in seen:
                return Pool(
                    driver, name, invalid=True, invalid_reason=f"duplicate device name {dev.name}"
                )
            seen.add(dev.name)
    if not partitionable:
        return Pool(driver, name, slices=device_slices)
    counter_sets: dict[str, dict[str, Fraction]] = {}
    for s in counter_slices:
        for cs in slices[s].shared_counters:
            if cs.name in counter_sets:
                return Pool(
                    driver,
                    name,
                    invalid=True,
                    invalid_reason=f"duplicate counter set name {cs.name}",
                )
            counter_sets[cs.name] = dict(cs.counters)
    reason = _consumption_problem(counter_sets, [slices[s] for s in members])
    if reason:
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    others: list[int] = []
    if all_members is not None and len(all_members) != len(members):
        names = {slices[s].name for s in members}
        others = [s for s in all_members if slices[s].name not in names]
        reason = _consumption_problem(counter_sets, [slices[s] for s in others])
        if reason:
            return Pool(driver, name, invalid=True, invalid_reason=reason)
    return Pool(
        driver,
        name,
        slices=device_slices,
        other_slices=[s for s in others if not slices[s].shared_counters],
        counter_sets=counter_sets,
    )


def _consumption_problem(counter_sets: dict, slice_records) -> str:
    for sl in slice_records:
        for dev in sl.devices:
            for use in dev.consumes_counters:
                cs = counter_sets.get(use.counter_set)
                if cs is None:
                    return f"counter set {use.counter_set} not found"
                for counter in use.counters:
                    if counter not in cs:
                        return f"counter {counter} not found in counter set {use.counter_set}"
    return ""
