"""The structured-parameters allocator of Dynamic Resource Allocation,
vectorized: an :class:`Allocator` per pod over :class:`DeviceColumns`.

Every selector is evaluated for all devices at once (``dra_cel``) into a
per-request status column (match / no match / error), and
:meth:`Allocator.feasible` answers "can this node satisfy all claims" for
every node in one compiled pass (``kernels.dra.first_fit_search``): the
allocator's depth-first search over flat arrays, for claims with exact
counts, ``matchAttribute`` / ``distinctAttribute`` constraints, taints and
counter sets (no subrequests, ``All``, admin access or capacity requests).
The NumPy engine runs the vectorized first fit (``kernels.dra.feasible``)
for claims without constraints or counters.  A node the pass cannot decide
(a selector error on the way, a device it does not judge) and every node of
other claims is searched on the host (``dra_search``, upstream's semantics
and errors).  :meth:`Allocator.allocate` is that host search for one node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tensorsched.framework.records.dra_records import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationResult,
    DeviceClassRecord,
    ExactRequest,
    ResourceClaimRecord,
)
from tensorsched.kernels import dra as dra_kernels

from .dra_cel import CelError, compile_selector
from .dra_devices import AllocatedState, DeviceColumns, Pool, gather_pools
from .dra_search import (
    CLAIM,
    FEATURE_GATES,
    STATUS_ERROR,
    STATUS_MATCH,
    STATUS_NO,
    AllocationError,
    DraFeatures,
    NodeSearch,
    NodeView,
    claim_ref,
    with_cel_hint,
)

__all__ = ["DraFeatures", "AllocationError", "Allocator", "allocate", "FEATURE_GATES"]


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

    def __init__(
        self,
        claims: Sequence[ResourceClaimRecord],
        *,
        classes,
        devices,
        allocated: AllocatedState | None = None,
        features: DraFeatures | None = None,
        in_use_rows: np.ndarray | None = None,
    ):
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

    def status(
        self, key: tuple, spec: ExactRequest, cls: DeviceClassRecord
    ) -> tuple[np.ndarray, dict]:
        """Per device: does it satisfy the class and request selectors
        (STATUS_* int8[D]), and the error message of STATUS_ERROR rows."""
        cols = self.columns
        f = self.features
        cache_key = (
            "status",
            cls.name,
            cls.selectors,
            spec.selectors,
            f.binding_and_status,
            f.list_type_attributes,
        )
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
        for owner, exprs in (
            (f"class {cls.name}", cls.selectors),
            (f"claim {CLAIM}", spec.selectors),
        ):
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
                            errors[row] = (
                                f"{owner}: selector #{i} on device "
                                f"{'/'.join(cols.device_id(row))}: CEL runtime error: {msg}"
                            )
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
                    errors[int(row)] = (
                        f"{owner}: selector #{i} on device "
                        f"{'/'.join(cols.device_id(int(row)))}: CEL runtime error: "
                        f"{with_cel_hint(col.messages[col.error[row]])}"
                    )
                status[bad] = STATUS_ERROR
                status[pending & (col.error < 0) & ~col.value] = STATUS_NO
        cols.cache[cache_key] = (status, errors)
        return status, errors

    # ---------------------------------------------------------------- nodes

    def view(self, node) -> NodeView:
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
        view = NodeView(
            name,
            labels,
            pools,
            np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64),
            np.concatenate(owner) if owner else np.zeros(0, np.int32),
            any(p.invalid for p in pools),
            any(p.incomplete for p in pools),
        )
        self.columns.cache[cache_key] = view
        return view

    def allocate(self, node) -> list[AllocationResult] | None:
        """One AllocationResult per claim (claim order), or None when the
        claims cannot all be satisfied on ``node``; AllocationError on an
        error (see the module docstring)."""
        return NodeSearch(self, self.view(node)).run()

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
        search = NodeSearch(self, view)
        search.prepare()
        f = self.features
        for (ci, ri, si), req in search.requests.items():
            claim = self.claims[ci]
            label = f"claim {claim_ref(claim)}, request {req.full_name}"
            if req.spec.allocation_mode == "All":
                if not req.all_rows:
                    return f"{label}: no device on the node matches the selectors (mode All)"
                # every matching device must be free and usable
                rows = [row for row, _ in req.all_rows]
                used = 0 if req.admin else sum(bool(self.in_use_rows[r]) for r in rows)
                tainted = sum(self._untolerated(r, req.spec) for r in rows) if f.device_taints else 0
                if used or tainted:
                    why = f"{label}: asks for all {len(rows)} matching devices, {used} in use"
                    return why + (f", {tainted} tainted" if tainted else "")
                continue
            matching = [row for row, _ in search.candidates(req) if search.selectable(req, row)]
            free = [row for row in matching if not self.in_use_rows[row]]
            tainted = 0
            if f.device_taints:
                usable = [row for row in free if not self._untolerated(row, req.spec)]
                tainted = len(free) - len(usable)
                free = usable
            if len(free) < req.num_devices and (
                si == -1 or si == len(claim.requests[ri].first_available) - 1
            ):
                why = (
                    f"{label}: {len(free)} of {req.num_devices} devices available "
                    f"({len(matching)} match the selectors"
                )
                why += f", {len(matching) - len(free) - tainted} in use"
                if tainted:
                    why += f", {tainted} tainted"
                why += ")"
                # the devices of such pools are not used (nor counted above)
                skipped = [
                    f"{p.pool_id} ({'incomplete' if p.incomplete else 'invalid'})"
                    for p in view.pools if p.incomplete or p.invalid
                ]
                if skipped:
                    why += "; pools not used: " + ", ".join(skipped)
                return why
        constrained = [claim_ref(c) for c in self.claims if c.constraints]
        if constrained:
            return (
                f"claim {constrained[0]}: the constraints (matchAttribute / distinctAttribute) "
                "cannot be met by the node's available devices"
            )
        return "cannot allocate all claims (their requests compete for the same devices)"

    def _untolerated(self, row: int, spec: ExactRequest) -> bool:
        """Device ``row`` has a NoSchedule / NoExecute taint that ``spec``
        does not tolerate (DRADeviceTaints)."""
        _, dev = self.columns.device(row)
        return any(
            t.effect in ("NoSchedule", "NoExecute")
            and not any(tol.tolerates(t) for tol in spec.tolerations)
            for t in dev.taints
        )

    def feasible(self, nodes, engine: str = "auto") -> np.ndarray:
        """[N] bool: ``allocate(node) is not None`` for every node, answered
        by one kernel pass where the claims allow it (module docstring);
        errors raise as :meth:`allocate` does.  ``engine``: the kernel's
        (``numpy``, ``numba``, ``cuda``: one GPU thread per node, ``auto`` =
        numba)."""
        given = nodes
        nodes = nodes if isinstance(nodes, list) else list(nodes)
        out = np.zeros(len(nodes), bool)
        enc = self.encoded()
        if enc is None or (engine == "numpy" and not enc["plain"]):
            # the host search, node by node (the NumPy engine has no
            # vectorized depth-first search)
            for i, node in enumerate(nodes):
                out[i] = self.allocate(node) is not None
            return out
        if engine not in ("auto", "numba", "numpy", "cuda"):
            raise ValueError(f"unknown engine {engine!r} (numpy, numba, cuda, auto)")
        csr = self.device_lists(given, nodes)
        ptr, rows, invalid = csr
        # answers only change on nodes whose devices changed hands since the
        # last pass of claims like these (pods of one template): redo those
        # (a few nodes are simply answered: the memo's per-device map would
        # cost more than the pass)
        memo_key = self._memo_key(csr) if len(nodes) > 64 else None
        memos = self.columns.cache.setdefault("feasible-memos", {})
        memo = memos.get(memo_key) if memo_key is not None else None
        if memo is not None and memo["csr"] is not csr:
            memo = None  # another node list took that id
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
                sub_rows = np.concatenate([rows[ptr[i] : ptr[i + 1]] for i in redo])
            out[redo] = self._decide(
                sub_ptr, sub_rows, invalid[redo], [nodes[i] for i in redo], enc, engine
            )
        if memo_key is not None:
            if memo is None:
                memo = {"csr": csr, "node_of_row": self._node_of_row(ptr, rows, self.columns.n)}
                while len(memos) >= 64:
                    del memos[next(iter(memos))]
                memos[memo_key] = memo
            memo["in_use"] = self.in_use_rows.copy()
            memo["out"] = out.copy()
        return out

    def encoded(self) -> dict | None:
        """``_encode``'s arrays, kept on the columns per shape of claims."""
        shape = self._shape()
        enc = self.columns.cache.get(("enc", shape)) if shape is not None else None
        if enc is None:
            enc = self._encode()
            if enc is not None and shape is not None:
                self.columns.cache[("enc", shape)] = enc
        return enc

    def _decide(self, ptr, rows, invalid, nodes, enc, engine) -> np.ndarray:
        if engine == "numpy":
            code = dra_kernels.greedy_first_fit(
                ptr,
                rows,
                enc["status"],
                enc["counts"],
                self.in_use_rows,
                enc["blocked"],
                engine="numpy",
            )
        else:
            code, _ = dra_kernels.first_fit_search(
                ptr,
                rows,
                enc["status"],
                enc["counts"],
                enc["req_claim"],
                self.in_use_rows,
                enc["blocked"],
                enc["con_first"],
                enc["con_applies"],
                enc["con_code"],
                enc["con_kind"],
                *enc["counters"],
                engine="cuda" if engine == "cuda" else "numba",
            )
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
                if (
                    e is None
                    or e.capacity_requests is not None
                    or e.device_class_name not in self.classes
                ):
                    break
                reqs.append(
                    (
                        r.name,
                        e.device_class_name,
                        e.selectors,
                        e.count,
                        e.allocation_mode,
                        e.admin_access,
                        e.tolerations,
                    )
                )
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
                if (
                    spec is None
                    or spec.allocation_mode != "ExactCount"
                    or spec.admin_access is not None
                    or spec.capacity_requests is not None
                    or not spec.device_class_name
                    or spec.device_class_name not in self.classes
                    or None in spec.selectors
                ):
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
                row = [
                    first_req <= r < len(counts)
                    and (not names or claim.requests[r - first_req].name in names)
                    for r in range(len(counts))
                ]
                applies_rows.append(row)
                codes.append(code)
                kinds.append(0 if c.match_attribute is not None else 1)
                blocked = blocked | problem
            con_first.append(len(codes))
        n_req = len(counts)
        applies = np.zeros((len(codes), n_req), bool)
        for c, row in enumerate(applies_rows):
            applies[c, : len(row)] = row
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
            "counters": counters[:4]
            if f.partitionable_devices
            else (
                np.zeros(cols.n + 1, np.int64),
                np.zeros(0, np.int64),
                np.zeros(0, np.int64),
                np.zeros(0, np.int64),
            ),
        }

    def _untainted(self, status: np.ndarray, spec: ExactRequest) -> np.ndarray:
        """``status`` with devices whose NoSchedule / NoExecute taints the
        request does not tolerate turned to 'no match' (errors stay)."""
        out = status.copy()
        for row in np.flatnonzero(self.columns.has_taints & (status == STATUS_MATCH)):
            _, dev = self.columns.device(int(row))
            if any(
                t.effect in ("NoSchedule", "NoExecute")
                and not any(tol.tolerates(t) for tol in spec.tolerations)
                for t in dev.taints
            ):
                out[row] = STATUS_NO
        return out

    def _attribute_codes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Per device: an id of its value of attribute ``name`` (-1 absent)
        and whether the value is one constraints refuse (no value, a list)."""
        cols = self.columns
        key = ("attr-codes", name)
        got = cols.cache.get(key)
        if got is None and "/" in name:
            got = _attribute_codes_of_leaf(cols, name)
            if got is not None:
                cols.cache[key] = got
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
        got = (
            ptr,
            np.array([a for a, _ in flat], np.int64),
            np.array([b for _, b in flat], np.int64),
            np.array(caps, np.int64),
            blocked,
        )
        cols.cache["counters"] = got
        return got

    def device_lists(self, given, nodes):
        """(ptr[N+1], rows[V], invalid[N]) of ``nodes``' search-order device
        lists, cached on the columns for the last few node lists (the same
        list object passed again is recognized without reading it)."""
        cache = self.columns.cache
        part = self.features.partitionable_devices
        last = cache.get(("csr-last", part))
        if last is not None and last[0] is given and last[1] == len(nodes):
            return last[2]
        names = tuple(
            [n.name for n in nodes]
            if nodes and hasattr(nodes[0], "name")
            else [_node_identity(n)[0] for n in nodes]
        )
        # the last few node lists, in their own small dict (oldest first)
        lists = cache.setdefault("csr-lists", {})
        key = (names, part)
        got = lists.get(key)
        if got is None:
            views = [self.view(n) for n in nodes]
            ptr = np.zeros(len(views) + 1, np.int64)
            np.cumsum([len(v.rows) for v in views], out=ptr[1:])
            rows = np.concatenate([v.rows for v in views]) if views else np.zeros(0, np.int64)
            invalid = np.array([v.any_invalid for v in views], bool)
            got = (ptr, rows, invalid)
            while len(lists) >= 8:
                del lists[next(iter(lists))]
            lists[key] = got
        cache[("csr-last", part)] = (given, len(nodes), got)
        return got

    _csr = device_lists     # the name the allocator's tests know it by

    # ---------------------------------------------------------------- counters

    def available_counters(self, pool: Pool) -> dict:
        key = (pool.driver, pool.name)
        got = self._available_counters.get(key)
        if got is None:
            got = {
                (cs, c): q
                for cs, counters in pool.counter_sets.items()
                for c, q in counters.items()
            }
            cols = self.columns
            for s in [*pool.slices, *pool.other_slices]:
                sl = cols.slices[s]
                base = int(cols.first_row[s])
                for i, dev in enumerate(sl.devices):
                    if not dev.consumes_counters:
                        continue
                    # held exclusively, or shared by claims that consume capacity
                    if not self.in_use_rows[base + i] and not self.shared_capacity(
                        (sl.driver, sl.pool.name, dev.name)
                    ):
                        continue
                    for use in dev.consumes_counters:
                        for c, q in use.counters.items():
                            if (use.counter_set, c) in got:
                                got[(use.counter_set, c)] -= q
            self._available_counters[key] = got
        return got


def _attribute_codes_of_leaf(cols, name: str):
    """``Allocator._attribute_codes`` from the columns' dictionary-encoded
    leaf of attribute ``name`` (fully qualified), without visiting every
    device: codes numbered by first appearance in row order over the
    devices whose value is a string, int or bool; list values are refused
    (``problem``), and so are attributes without a value (only devices CEL
    cannot read can have one: looked at one by one).  None when the leaf
    holds another kind of value (versions compare as written: the slow
    path keeps that)."""
    ids, values = cols.values.leaf(("attr", name))
    kinds = [type(v) for v in values]
    if any(k not in (str, int, bool, tuple) for k in kinds):
        return None
    ids = np.asarray(ids, np.int64)
    has = ids >= 0
    is_list = np.array([k is tuple for k in kinds] + [False], bool)[ids]
    problem = has & is_list
    keep = has & ~is_list
    codes = np.full(cols.n, -1, np.int64)
    if keep.any():
        kept = ids[keep]
        uniq, first = np.unique(kept, return_index=True)
        remap = np.full(len(values), -1, np.int64)
        remap[uniq[np.argsort(first, kind="stable")]] = np.arange(uniq.shape[0])
        codes[keep] = remap[kept]
    dom, _, ident = name.partition("/")
    for row in cols.cel_problem:
        sl, dev = cols.device(row)
        attr = dev.attributes.get(name)
        if attr is None and dom == sl.driver:
            attr = dev.attributes.get(ident)
        if attr is not None and attr.kind == "none":
            codes[row] = -1
            problem[row] = True
    return codes, problem


def _node_identity(node) -> tuple[str, dict]:
    if isinstance(node, str):
        return node, {}
    if isinstance(node, tuple):
        return node[0], dict(node[1] or {})
    return node.name, dict(getattr(node, "labels", None) or {})


def allocate(claims, node, *, classes, devices, allocated=None, features=None):
    """One-shot :meth:`Allocator.allocate`."""
    return Allocator(
        claims, classes=classes, devices=devices, allocated=allocated, features=features
    ).allocate(node)
