"""Which nodes can allocate a DynamicResources cycle's pending claims.

``ClaimFits`` drives the allocator for the plugin's Filter and compiled
runs: it builds a cycle's allocator (again whenever the devices in use
changed), answers feasibility over node rows, and keeps the answer per
kind of claims: pods whose pending claims have equal specs (one
template's pods) get equal answers from the allocator, and an allocation
or release changes the answer only on the nodes whose devices it touched
(``DevicesInUse.touched_since``), which alone are asked again.  Counted
claims (``dra_counted``) are answered by a count of free matching devices
per node instead of a search; claims the compiled search allocates
(``dra_searched``: constraints included) take the devices its pass picks.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.runtime.plugin import sign_value
from tensorsched.framework.runtime.status import Code
from tensorsched.framework.state.derived import StateKey
from tensorsched.framework.state.dra_allocator import AllocationError, Allocator
from tensorsched.framework.state.dra_claims import ClaimState
from tensorsched.framework.state.dra_counted import CountedClaims
from tensorsched.framework.state.dra_searched import SearchedClaims

from .dra_cycle import Cycle, error, unresolvable

NODE_LIST = StateKey("dra_node_list", __name__,
                     "'nodes' -> the node records of the valid rows, in row order")


class ClaimFits:
    """Feasibility of pending claims per node, kept per kind of claims
    (``features()``: the DRA feature switches the allocator runs with now;
    the plugin's, which may be set after it is made)."""

    def __init__(self, features) -> None:
        self._features = features
        self._fits: dict = {}           # spec key -> (columns tag, version, [rows] bool)
        # per kind of claims [CountedClaims | None, free per row,
        # DevicesInUse.version of it]
        self._counted: dict = {}
        self._searched: dict = {}       # kind of claims -> SearchedClaims | None

    def ensure_allocator(self, store: ClaimState, cyc: Cycle) -> None:
        """The pod's allocator, built on first need and again whenever the
        devices in use changed since."""
        if cyc.version != store.in_use.version or (cyc.allocator is None
                                                   and cyc.allocator_error is None):
            self._build_allocator(store, cyc)
            cyc.results.clear()

    def _build_allocator(self, store: ClaimState, cyc: Cycle) -> None:
        cyc.version = store.in_use.version
        cyc.allocator = None
        cyc.allocator_error = None
        try:
            cyc.allocator = Allocator(
                [cyc.claims[i].record for i in cyc.pending], classes=store.classes,
                devices=store.in_use.columns(), allocated=store.in_use.allocated_state(),
                in_use_rows=store.in_use.in_use_rows(), features=self._features())
        except AllocationError as exc:
            # found before any node is tried; upstream's allocator reports
            # it from Allocate, so Filter answers it as an Error
            cyc.allocator_error = str(exc)

    def counted_for(self, cyc: Cycle, store: ClaimState):
        """The ``CountedClaims`` of the cycle's kind of claims (kept per
        kind while the devices' columns stay), or None."""
        key = (self.spec_key(cyc), store.in_use.columns_tag(self._features()))
        got = self._counted.get(key)
        if got is None:
            if len(self._counted) > 64:
                self._counted.clear()
            got = self._counted[key] = [CountedClaims.of(cyc.allocator), None, -1]
        counted = got[0]
        if counted is not None:
            # the kind's allocator is kept; it reads the live devices in use
            counted.allocator.in_use_rows = cyc.allocator.in_use_rows
        return counted

    def searched_for(self, cyc: Cycle, store: ClaimState):
        """The ``SearchedClaims`` of the cycle's kind of claims (kept per
        kind while the devices' columns stay, reading the cycle's devices in
        use), or None."""
        key = (self.spec_key(cyc), store.in_use.columns_tag(self._features()))
        if key not in self._searched:
            if len(self._searched) > 64:
                self._searched.clear()
            self._searched[key] = SearchedClaims.of(cyc.allocator)
        got = self._searched[key]
        if got is not None:
            got.allocator.in_use_rows = cyc.allocator.in_use_rows
        return got

    def kind_for(self, cyc: Cycle, store: ClaimState):
        """The cycle's claims as counts (``CountedClaims``), else as the
        compiled search's picks (``SearchedClaims``), else None."""
        counted = self.counted_for(cyc, store)
        return counted if counted is not None else self.searched_for(cyc, store)

    def free_counts(self, cyc: Cycle, counted, store: ClaimState, state):
        """[n_rows] free matching devices per node, refreshed on the nodes
        touched since the kind's last count."""
        key = (self.spec_key(cyc), store.in_use.columns_tag(self._features()))
        got = self._counted[key]
        free, version = got[1], got[2]
        touched = store.in_use.touched_since(version) if free is not None else None
        if touched is None or free.shape[0] != state.n_rows:
            rows = state.valid_rows()
            nodes = self.node_list(state)
            free = counted.free_counts(nodes, rows, state.n_rows)
            if free is None:
                return None
        else:
            for r in touched:
                node = state.nodes[r]
                n = counted.free_on(node) if node is not None else 0
                if n is None:
                    return None
                free[r] = n
        got[1], got[2] = free, store.in_use.version
        return free.copy()

    def allocate_on(self, cyc: Cycle, store: ClaimState, node):
        """``cyc.allocator.allocate(node)``, taken by count for counted
        claims (``CountedClaims``) and from the compiled search's picks for
        searched ones (``SearchedClaims``): the same answer without the
        host search."""
        counted = self.counted_for(cyc, store)
        if counted is not None and not counted.allocator.view(node).any_invalid:
            return counted.allocate(node)
        searched = self.searched_for(cyc, store) if counted is None else None
        if searched is not None:
            return searched.allocate(node)
        return cyc.allocator.allocate(node)

    @staticmethod
    def node_list(state) -> list:
        """The node records of the valid rows, in row order (one list per
        structure, so the allocator recognizes it)."""
        cache = state.derived.memo(NODE_LIST, state.structure_tag())
        got = cache.get("nodes")
        if got is None:
            got = cache["nodes"] = [state.nodes[r] for r in state.valid_rows().tolist()]
        return got

    def pending_fits(self, cyc: Cycle, store: ClaimState, state, rows,
                     keep: bool) -> np.ndarray:
        """[M] bool: the cycle's pending claims can be allocated on the
        rows (``keep``: the answer may be kept per kind of claims)."""
        fits = self._cached(cyc, store, state, rows) if keep else None
        if fits is None:
            self.ensure_allocator(store, cyc)
            if cyc.allocator_error is not None:
                st = error(cyc.allocator_error)
                for r in rows.tolist():
                    cyc.statuses.setdefault(r, st)
                return np.zeros(rows.shape[0], np.bool_)
            fits = self._feasible(cyc, state, rows)
            if keep:
                self._remember(cyc, store, state, rows, fits)
        # a rejected row without a status of its own could not allocate
        # the claims (``explain_status``' default): nothing to record per row
        return fits

    @staticmethod
    def spec_key(cyc: Cycle) -> tuple:
        key = cyc.spec_key
        if key is None:
            key = cyc.spec_key = tuple(
                (cyc.claims[i].record.namespace,
                 sign_value((cyc.claims[i].record.obj or {}).get("spec")))
                for i in cyc.pending)
        return key

    def _cached(self, cyc: Cycle, store: ClaimState, state, rows) -> np.ndarray | None:
        got = self._fits.get(self.spec_key(cyc))
        if got is None or got[0] != store.in_use.columns_tag(self._features()):
            return None
        touched = store.in_use.touched_since(got[1])
        if touched is None:
            return None
        fits = got[2]
        if touched:
            self.ensure_allocator(store, cyc)
            if cyc.allocator_error is not None:
                return None
            redo = np.array(sorted(touched), np.int64)
            counted = self.counted_for(cyc, store)
            try:
                if counted is not None:
                    # counted claims: a count of free matching devices per node
                    for r in redo.tolist():
                        free = counted.free_on(state.nodes[r])
                        if free is None:
                            return None
                        fits[r] = free >= counted.need
                else:
                    fits[redo] = np.asarray(cyc.allocator.feasible(
                        [state.nodes[r] for r in redo.tolist()]), np.bool_)
            except AllocationError:
                return None
            self._fits[self.spec_key(cyc)] = (got[0], store.in_use.version, fits)
        return fits[rows]

    def _remember(self, cyc: Cycle, store: ClaimState, state, rows, fits) -> None:
        if any(st.code == Code.ERROR for st in cyc.statuses.values()):
            return
        if rows.shape[0] != state.num_nodes:
            return              # a partial answer (victim search): not kept
        full = np.zeros(max(state.n_rows, 1), np.bool_)
        full[rows] = fits
        if len(self._fits) > 64:
            self._fits.clear()
        self._fits[self.spec_key(cyc)] = (store.in_use.columns_tag(self._features()),
                                          store.in_use.version, full)

    def _feasible(self, cyc: Cycle, state, rows: np.ndarray) -> np.ndarray:
        """Allocator.feasible over the rows; on an allocator error, the nodes
        one by one in order, up to the first that fails (its Error status;
        upstream's attempt ends there, so the rest are failed with it)."""
        nodes = [state.nodes[r] for r in rows.tolist()]
        try:
            return np.asarray(cyc.allocator.feasible(nodes), np.bool_)
        except AllocationError:
            pass
        out = np.zeros(rows.shape[0], np.bool_)
        for j, node in enumerate(nodes):
            try:
                got = cyc.allocator.allocate(node)
            except AllocationError as exc:
                if exc.scope == "node":         # this node's pools are invalid
                    cyc.statuses[int(rows[j])] = unresolvable(str(exc))
                    continue
                st = error(str(exc))
                for r in rows[j:].tolist():
                    cyc.statuses.setdefault(int(r), st)
                break
            if got is not None:
                out[j] = True
                cyc.results[int(rows[j])] = got
        return out
