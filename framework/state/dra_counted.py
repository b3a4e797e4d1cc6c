"""Claims whose allocation on a node is "the first N free matching devices":
the shape of nearly every claim made from a template (one GPU, one MIG
device), answered per node by a count.

For claims without constraints, subrequests, ``All``, admin access,
capacity requests, counters or binding conditions, whose requests all
select the same devices (one status column), and whose matching devices
are node-local (a device is reached from one node only), the allocator's
depth-first search on a node takes the first ``need`` free matching
devices in the node's search order, ``need`` being the sum of the
requests' counts, and succeeds exactly when there are that many.  Devices
taken on one node never change another node's answer.  So:

* ``free_counts`` is, per node row, how many matching devices are free
  (kept per kind of claims and refreshed on the nodes whose devices
  changed hands since, ``DevicesInUse.touched_since``);
* ``allocate`` builds the AllocationResults the search would return on a
  node (requests filled in order, the node-name selector of node-local
  slices, the claims' configs), without searching.

``CountedClaims.of`` returns None for claims outside that shape; the
caller then keeps to the allocator.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.records.dra_records import (
    AllocationResult,
    DeviceRequestAllocationResult,
)

from .dra_search import NODE_NAME_SELECTOR, STATUS_ERROR, STATUS_MATCH, AllocationError, NodeSearch

__all__ = ["CountedClaims"]


class CountedClaims:
    """One kind of claims (an ``Allocator``'s) as counts per node.

    ``match`` [D] bool: the devices every request of the claims selects;
    ``need``: devices a pod's claims take on one node; ``requests``: per
    claim, (request name, count, tolerations) in request order."""

    def __init__(self, allocator, match: np.ndarray, need: int, requests: list):
        self.allocator = allocator
        self.match = match
        self.need = need
        self.requests = requests
        self._configs: list | None = None

    # ------------------------------------------------------------ shape
    @classmethod
    def of(cls, allocator) -> CountedClaims | None:
        """The claims of ``allocator`` as counts, or None when they are not
        of that shape (module doc)."""
        f = allocator.features
        if f.consumable_capacity:
            return None
        try:
            enc = allocator.encoded()
        except AllocationError:
            return None
        if enc is None or not enc["plain"] or enc["con_code"].shape[0]:
            return None
        status = enc["status"]
        if status.shape[0] == 0:
            return None
        first = status[0]
        for other in status[1:]:
            if not np.array_equal(first, other):
                return None
        cols = allocator.columns
        if (first == STATUS_ERROR).any():
            return None
        match = first == STATUS_MATCH
        if (match & (enc["blocked"] | cols.consumes_counters | cols.has_binding_conditions
                     | cols.per_device_node | (cols.node < 0))).any():
            return None
        requests = []
        for claim in allocator.claims:
            reqs = []
            for r in claim.requests:
                e = r.exactly
                reqs.append((r.name, int(e.count), e.tolerations))
            requests.append(reqs)
        return cls(allocator, match, int(enc["counts"].sum()), requests)

    # ------------------------------------------------------------ counts
    def node_rows(self, view) -> np.ndarray:
        """The matching device rows a node's view reaches, search order."""
        rows = view.rows
        return rows[self.match[rows]]

    def free_counts(self, nodes, node_rows: np.ndarray, n_rows: int) -> np.ndarray | None:
        """[n_rows] int64: free matching devices per node row, for ``nodes``
        (records) on ``node_rows`` ([N] int64; 0 for other rows), in one
        pass over their device lists; None when a node's pools are
        invalid (the allocator's answer there may be an error)."""
        alloc = self.allocator
        ptr, rows, invalid = alloc.device_lists(nodes, nodes)
        if invalid.any():
            return None
        free = self.match[rows] & ~alloc.in_use_rows[rows]
        acc = np.zeros(rows.shape[0] + 1, np.int64)
        np.cumsum(free, out=acc[1:])
        out = np.zeros(n_rows, np.int64)
        out[node_rows] = acc[ptr[1:]] - acc[ptr[:-1]]
        return out

    def free_on(self, node) -> int | None:
        """Free matching devices on one node (None: its pools are invalid)."""
        alloc = self.allocator
        view = alloc.view(node)
        if view.any_invalid:
            return None
        rows = self.node_rows(view)
        return rows.shape[0] - int(np.count_nonzero(alloc.in_use_rows[rows]))

    # ------------------------------------------------------------ allocate
    def allocate(self, node) -> list[AllocationResult] | None:
        """What ``Allocator.allocate(node)`` returns for these claims, by
        taking the first free matching devices (None when too few)."""
        alloc = self.allocator
        view = alloc.view(node)
        rows = self.node_rows(view)
        free = rows[~alloc.in_use_rows[rows]][: self.need]
        if free.shape[0] < self.need:
            return None
        if self._configs is None:
            search = NodeSearch(alloc, view)
            search.prepare()
            self._configs = [search.configs(ci) for ci in range(len(alloc.claims))]
        cols = alloc.columns
        out = []
        k = 0
        for ci, reqs in enumerate(self.requests):
            results = []
            for name, count, tolerations in reqs:
                for row in free[k: k + count].tolist():
                    driver, pool, device = cols.device_id(row)
                    results.append(DeviceRequestAllocationResult(
                        request=name, driver=driver, pool=pool, device=device,
                        tolerations=tolerations))
                k += count
            # node-local devices: the allocation is pinned to the node by name
            selector = {"nodeSelectorTerms": [{"matchFields": [
                {"key": NODE_NAME_SELECTOR, "operator": "In", "values": [view.name]}]}]}
            out.append(AllocationResult(tuple(results), self._configs[ci],
                                        selector if results else None))
        return out
