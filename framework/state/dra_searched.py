"""Claims the compiled search allocates: the devices it picks on a node are
the allocator's, so Reserve and compiled runs take them without the host
search.

``kernels.dra.first_fit_search`` walks the allocator's depth-first search
over flat arrays (requests of all claims in order, each device in the
node's search order, ``matchAttribute`` / ``distinctAttribute`` checked as
the host search checks them, backtracking alike), so the first solution it
finds on a node is the one ``Allocator.allocate`` returns: ``picks[d]``,
the device of depth d, depth d being one device of request ``req_of[d]``.
That holds for the claims ``Allocator.encoded`` takes (exact counts, no
subrequests, ``All``, admin access or capacity requests) whose devices the
pass judges itself: no device a request may take is blocked, consumes
counters, waits for binding conditions or is reached through a node
selector (node-local devices only), and no selector fails on one.  A node
the pass leaves UNDECIDED (its search budget ran out) is searched on the
host.

``SearchedClaims`` is one kind of claims (the pods of one template):

* ``allocate(node)``: the node's AllocationResults built from the pass's
  picks (request names and tolerations in depth order, the claims' configs,
  the node-name selector of node-local devices);
* ``room(nodes, node_rows, n_rows)``: per node, how many pods of this kind
  the node takes one after another (each taking the pass's picks, which
  the next pass sees in use), in one pass per pod over the nodes still
  taking one: devices are node-local, so a node's sequence does not depend
  on what the others take.

``SearchedClaims.of`` returns None outside that shape; the caller keeps to
the allocator.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.records.dra_records import (
    AllocationResult,
    DeviceRequestAllocationResult,
)
from tensorsched.kernels import dra as dra_kernels

from .dra_search import NODE_NAME_SELECTOR, STATUS_ERROR, STATUS_NO, AllocationError, NodeSearch

__all__ = ["SearchedClaims"]


class SearchedClaims:
    """One kind of claims (an ``Allocator``'s) allocated by the compiled
    search (module doc).  ``requests[r]``: (claim index, request name,
    tolerations) of the flattened request r; ``allocator.in_use_rows`` is
    read live (the caller may point it at another allocator's)."""

    def __init__(self, allocator, enc: dict, requests: list, engine: str = "numba"):
        self.allocator = allocator
        self.enc = enc
        self.requests = requests
        self.engine = engine
        counts = enc["counts"]
        self.req_of = np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)
        self._configs: list | None = None

    @classmethod
    def of(cls, allocator, engine: str = "numba") -> SearchedClaims | None:
        """The claims of ``allocator`` for the compiled search, or None when
        the pass would not judge them alone (module doc)."""
        if allocator.features.consumable_capacity:
            return None
        try:
            enc = allocator.encoded()
        except AllocationError:
            return None
        if enc is None or enc["status"].shape[0] == 0:
            return None
        status = enc["status"]
        if (status == STATUS_ERROR).any():
            return None
        cols = allocator.columns
        reach = (status != STATUS_NO).any(axis=0)
        odd = (enc["blocked"] | cols.consumes_counters | cols.has_binding_conditions
               | cols.per_device_node | (cols.node < 0))
        if (reach & odd).any():
            return None
        requests = []
        for ci, claim in enumerate(allocator.claims):
            for r in claim.requests:
                requests.append((ci, r.name, r.exactly.tolerations))
        return cls(allocator, enc, requests, engine)

    # ------------------------------------------------------------ the pass
    def _search(self, ptr, rows, in_use):
        enc = self.enc
        return dra_kernels.first_fit_search(
            ptr, rows, enc["status"], enc["counts"], enc["req_claim"], in_use, enc["blocked"],
            enc["con_first"], enc["con_applies"], enc["con_code"], enc["con_kind"],
            *enc["counters"], engine=self.engine)

    def allocate(self, node) -> list[AllocationResult] | None:
        """What ``Allocator.allocate(node)`` returns for these claims (the
        host search where the pass leaves the node undecided or its pools
        are invalid)."""
        alloc = self.allocator
        view = alloc.view(node)
        if view.any_invalid:
            return alloc.allocate(node)
        ptr = np.array([0, view.rows.shape[0]], np.int64)
        code, picks = self._search(ptr, view.rows, alloc.in_use_rows)
        if int(code[0]) == dra_kernels.UNDECIDED:
            return alloc.allocate(node)
        if int(code[0]) != dra_kernels.FIT:
            return None
        return self.results(view, picks[0])

    def results(self, view, picks: np.ndarray) -> list[AllocationResult]:
        """The AllocationResults of the pass's ``picks`` [T] on ``view``'s node."""
        alloc = self.allocator
        if self._configs is None:
            search = NodeSearch(alloc, view)
            search.prepare()
            self._configs = [search.configs(ci) for ci in range(len(alloc.claims))]
        cols = alloc.columns
        per_claim: list[list] = [[] for _ in alloc.claims]
        for d, row in enumerate(picks[: self.req_of.shape[0]].tolist()):
            ci, name, tolerations = self.requests[int(self.req_of[d])]
            driver, pool, device = cols.device_id(row)
            per_claim[ci].append(DeviceRequestAllocationResult(
                request=name, driver=driver, pool=pool, device=device,
                tolerations=tolerations))
        # node-local devices: an allocation is pinned to the node by name
        selector = {"nodeSelectorTerms": [{"matchFields": [
            {"key": NODE_NAME_SELECTOR, "operator": "In", "values": [view.name]}]}]}
        return [AllocationResult(tuple(res), self._configs[ci], selector if res else None)
                for ci, res in enumerate(per_claim)]

    # ------------------------------------------------------------ room
    def room(self, nodes, node_rows: np.ndarray, n_rows: int) -> np.ndarray | None:
        """[n_rows] int64: how many pods of this kind each of ``nodes``
        (records, on ``node_rows``) takes one after another (0 for other
        rows); None when some node's answer is not the pass's alone
        (invalid pools, an undecided search)."""
        alloc = self.allocator
        sub_ptr, sub_rows, invalid = alloc.device_lists(nodes, nodes)
        if invalid.any():
            return None
        node_rows = np.asarray(node_rows, np.int64)
        in_use = np.array(alloc.in_use_rows, np.bool_, copy=True)
        out = np.zeros(n_rows, np.int64)
        idx = np.arange(len(nodes), dtype=np.int64)
        while idx.shape[0]:
            code, picks = self._search(sub_ptr, sub_rows, in_use)
            if (code == dra_kernels.UNDECIDED).any():
                return None
            fit = code == dra_kernels.FIT
            if not fit.any():
                break
            idx = idx[fit]
            out[node_rows[idx]] += 1
            taken = picks[fit][:, : self.req_of.shape[0]]
            in_use[taken[taken >= 0]] = True
            # the next pass over the nodes that took one
            lengths = np.diff(sub_ptr)
            sub_rows = sub_rows[np.repeat(fit, lengths)]
            sub_ptr = np.zeros(idx.shape[0] + 1, np.int64)
            np.cumsum(lengths[fit], out=sub_ptr[1:])
        return out
