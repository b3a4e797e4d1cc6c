"""The devices a cluster's resource claims hold, counted as the allocator
takes them (upstream's ``AllocatedState``).

Every result of every allocated or in-flight claim counts, but
admin-access results; with DRAConsumableCapacity a result with a share id
takes part of its device's capacity (summed per device) instead of the
whole device.  The counts change in O(devices of the claim) when a claim
is allocated or released (``count``); ``version`` moves with them, and
the node rows each version touched are logged (``touched_since``) so a
cached per-node answer is recomputed only where devices changed hands.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from tensorsched.framework.records.dra_records import AllocationResult

from .dra_devices import AllocatedState, DeviceColumns, qualify

DeviceID = tuple  # (driver, pool, device)


class DevicesInUse:
    """The devices in use by the claims of one ``ClaimState`` (``claims``:
    its slices, objects version, DRAConsumableCapacity switch and state)."""

    def __init__(self, claims) -> None:
        self.claims = claims
        self.version = 0                # moves whenever devices in use change
        self._exclusive_n: dict[DeviceID, int] = {}   # device -> results holding it
        self.exclusive: set = set()                     # keys of _exclusive_n
        self._shared_n: dict[tuple, int] = {}         # (device, share id) -> results
        self.shared: set = set()                        # keys of _shared_n
        self.capacity: dict[DeviceID, dict[str, Fraction]] = {}   # consumed, per device
        self._columns: tuple | None = None
        self._in_use_rows = np.zeros(0, np.bool_)
        self._touched: list = []        # (version, node rows changed or None)

    def count(self, allocation: AllocationResult, sign: int) -> None:
        """Count (``sign`` +1) or uncount (-1) one allocation's devices."""
        for r in allocation.results:
            if r.admin_access:
                continue        # admin access never takes a device from others
            did = (r.driver, r.pool, r.device)
            if self.claims.consumable_capacity and r.share_id is not None:
                sid = (did, r.share_id)
                left = self._shared_n.get(sid, 0) + sign
                if left > 0:
                    self._shared_n[sid] = left
                    self.shared.add(sid)
                else:
                    self._shared_n.pop(sid, None)
                    self.shared.discard(sid)
                if r.consumed_capacity:
                    caps = self.capacity.setdefault(did, {})
                    for name, q in r.consumed_capacity.items():
                        v = caps.get(name, Fraction(0)) + sign * q
                        if v:
                            caps[name] = v
                        else:
                            caps.pop(name, None)
                    if not caps:
                        self.capacity.pop(did, None)
                continue
            left = self._exclusive_n.get(did, 0) + sign
            if left > 0:
                self._exclusive_n[did] = left
                self.exclusive.add(did)
            else:
                self._exclusive_n.pop(did, None)
                self.exclusive.discard(did)
            if self._columns is not None:
                self._in_use_rows[self._columns[1].rows_of(did)] = left > 0
        self.version += 1
        self._log_touched(allocation)

    def _log_touched(self, allocation: AllocationResult) -> None:
        """Record which node rows this version changed (None: maybe any
        node, a device not local to one node)."""
        cols = self._columns[1] if self._columns is not None else None
        rows: set | None = set()
        if cols is None:
            rows = None
        else:
            for r in allocation.results:
                for d in cols.rows_of((r.driver, r.pool, r.device)):
                    node = int(cols.node[d])
                    if node < 0:
                        rows = None
                        break
                    rows.add(node)
                if rows is None:
                    break
        self._touched.append((self.version, rows))
        if len(self._touched) > 4096:
            del self._touched[:2048]

    def touched_since(self, version: int) -> set | None:
        """The node rows whose devices in use changed after ``version``
        (None: unknown or possibly every node)."""
        if version == self.version:
            return set()
        log = self._touched
        if not log or log[0][0] > version + 1:
            return None
        out: set = set()
        for v, rows in reversed(log):
            if v <= version:
                break
            if rows is None:
                return None
            out |= rows
        return out

    def columns_tag(self, features=None) -> tuple:
        """What the devices and the nodes' view of them depend on."""
        return (self.claims.objects_version, self.claims.state.structure_tag(), features)

    def columns(self):
        """The devices of the loaded slices as ``DeviceColumns`` (built once
        per set of slices and nodes)."""
        # the columns' caches take a node's labels as fixed: rebuilt when
        # labels, the node set or the slices change
        tag = (self.claims.objects_version, self.claims.state.structure_tag())
        if self._columns is None or self._columns[0] != tag:
            st = self.claims.state
            names = [st.nodes[r].name if st.nodes[r] is not None else "" for r in range(st.n_rows)]
            cols = DeviceColumns(self.claims.slices, names)
            self._columns = (tag, cols)
            self._in_use_rows = np.zeros(cols.n, np.bool_)
            for did in self.exclusive:
                self._in_use_rows[cols.rows_of(did)] = True
        return self._columns[1]

    def in_use_rows(self) -> np.ndarray:
        """[D] bool over ``columns()`` rows: the devices in exclusive use
        (kept as devices are allocated and released; read-only)."""
        self.columns()
        return self._in_use_rows

    def allocated_state(self) -> AllocatedState:
        """Devices in use as the allocator takes them: the exclusive set (the
        live one) and consumed capacity by fully qualified name."""
        caps = {d: {qualify(k, d[0]): v for k, v in c.items()}
                for d, c in self.capacity.items()}
        return AllocatedState(self.exclusive, caps)
