"""The nominated pods a cycle counts, as node columns beside the state's.

Upstream (``RunFilterPluginsWithNominatedPods`` in the framework runtime)
counts, on the node being filtered only, the pods nominated to that node
whose priority is at least the scheduled pod's (never the pod itself), and
DefaultPreemption's dry run (``SelectVictimsOnNode``) filters the same way.
For the node-column filters (NodeResourcesFit, NodePorts) that is the
node's requested columns plus the requests of those pods, and since more
requests never turn a failing node into a passing one, the second pass
upstream runs without them changes nothing.

``NominatedOverlay`` keeps, for one priority threshold, a copy of the
state's ``requested`` and ``nonzero_requested`` columns with the requests
of the nominated pods of at least that priority added on their nodes.  It
is a ``ColumnSource`` of its own (its own ``version`` / ``row_version``,
so the fused backends keep a row cache for it beside the state's): a
refresh rewrites only the rows the state wrote since the last one, the
rows whose nominations changed (``touch``), and the row of the scheduled
pod's own nomination, which is left out.  A cycle then costs the changes
since the previous one, not the nominations outstanding.

It answers only for plain nominated pods (no host ports, no pod affinity
or anti-affinity, every requested resource known to the state): anything
else a nominated pod could change is read outside the node columns, where
the scheduling cycle adds the pods to the state instead
(``SchedulingCycle``).
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.records.records import PodRecord
from tensorsched.kernels import layout as L


def plain_nominee(pod: PodRecord) -> bool:
    """Whether a nominated pod shows only in the requested columns: no host
    ports (NodePorts' bitsets, the victim table's ports), no pod affinity or
    anti-affinity terms (InterPodAffinity reads those of existing pods)."""
    return not (pod.host_ports or pod.pod_affinity or pod.pod_anti_affinity)


class NominatedOverlay:
    """The requested columns with the nominated pods of priority >=
    ``threshold`` counted on their nodes (module doc).

    ``nominator``: the ``Nominator`` whose pods it counts (it calls
    ``touch`` on every change).  After ``refresh(state, exclude)``,
    ``columns()`` are the state's node columns with ``requested`` [N, R]
    and ``nonzero_requested`` [N, 2] int64 replaced by the counted copies;
    ``version``, ``row_version`` [N] and ``layout_version`` are this
    overlay's own counters (``kernels.fused.source.ColumnSource``) and
    ``cache_tag`` keeps the backends' row caches for it apart from the
    state's."""

    def __init__(self, nominator, threshold: int):
        self.nominator = nominator
        self.threshold = threshold
        self.cache_tag = ("nominated", id(self), threshold)
        self.version = 0
        self.layout_version = 0
        self.row_version = np.zeros(0, np.int64)
        self.requested = np.zeros((0, 0), np.int64)
        self.nonzero_requested = np.zeros((0, 2), np.int64)
        self.usable = True          # every counted pod is plain and its resources known
        self._base = None           # (state, state columns, epoch) the copies follow
        self._cols = None
        self._seen = -1             # the state version the copies are level with
        self._pending: set[str] = set()     # nodes whose nominations changed
        self._sums: dict[str, np.ndarray] = {}      # node -> [R + 2] counted sums
        self._unusable: set[str] = set()     # nodes holding a pod the copies cannot count
        self._excluded: tuple = (None, None)    # (row, [R + 2]) left out last refresh

    def touch(self, node: str) -> None:
        """The nominations on ``node`` changed."""
        self._pending.add(node)

    def columns(self) -> L.NodeColumns:
        return self._cols

    # ------------------------------------------------------------ refresh
    def _vector(self, state, pod: PodRecord) -> np.ndarray | None:
        """[R + 2] int64: the pod's requests (pods = 1) then its non-zero
        cpu and memory; None when it requests a resource the state lacks."""
        r = len(state.resources)
        index = state.resources.index
        vec = np.zeros(r + 2, np.int64)
        for name, v in pod.requests.items():
            if name == "pods":
                continue
            if name not in index:
                return None
            vec[state.resources.get(name)] = v
        vec[L.RES_PODS] = 1
        vec[r] = pod.nonzero_cpu
        vec[r + 1] = pod.nonzero_memory
        return vec

    def _sum_node(self, state, node: str) -> None:
        nom = self.nominator
        total = None
        bad = False
        for key in nom.by_node.get(node, ()):
            pod = nom.pods[key]
            if pod_priority(pod) < self.threshold:
                continue
            vec = self._vector(state, pod) if plain_nominee(pod) else None
            if vec is None:
                bad = True
                continue
            total = vec if total is None else total + vec
        if total is None:
            self._sums.pop(node, None)
        else:
            self._sums[node] = total
        if bad:
            self._unusable.add(node)
        else:
            self._unusable.discard(node)

    def _rebuild(self, state, cols) -> None:
        """Every row afresh (first use, reallocated or resized columns, a
        changed node set)."""
        self._base = (state, cols, state.epoch)
        self.layout_version += 1
        self.version += 1
        self.requested = state.requested.copy()
        self.nonzero_requested = state.nonzero_requested.copy()
        self.row_version = np.full(state.row_version.shape[0], self.version, np.int64)
        n, r = cols.requested.shape
        self._cols = cols._replace(requested=self.requested[:n, :r],
                                   nonzero_requested=self.nonzero_requested[:n])
        self._sums = {}
        self._unusable = set()
        self._pending = set()
        for node in list(self.nominator.by_node):
            self._sum_node(state, node)
        rows = state.node_rows
        for node, total in self._sums.items():
            row = rows.get(node)
            if row is not None:
                self.requested[row, :r] += total[:r]
                self.nonzero_requested[row] += total[r:]
        self._excluded = (None, None)

    def refresh(self, state, exclude: PodRecord | None) -> bool:
        """Bring the copies level with ``state`` and the nominator, leaving
        out ``exclude``'s own nomination (the pod being scheduled).  False
        when some counted pod is not plain (the caller then adds the pods to
        the state)."""
        cols = state.columns()
        base = self._base
        if base is None or base[0] is not state or base[1] is not cols \
                or base[2] != state.epoch:
            self._rebuild(state, cols)
            changed = []
        else:
            n = cols.requested.shape[0]
            changed = np.flatnonzero(state.row_version[:n] > self._seen).tolist()
            if self._pending:
                rows = state.node_rows
                for node in self._pending:
                    self._sum_node(state, node)
                    row = rows.get(node)
                    if row is not None:
                        changed.append(row)
                self._pending = set()
        self._seen = state.version
        self.usable = not self._unusable
        r = cols.requested.shape[1]
        old_row = self._excluded[0]
        own = None
        if exclude is not None and self.usable:
            node = self.nominator.node_of.get(exclude.key)
            if node is not None and pod_priority(exclude) >= self.threshold \
                    and node in self._sums and node in state.node_rows:
                vec = self._vector(state, self.nominator.pods[exclude.key])
                if vec is not None:
                    own = (state.node_rows[node], vec)
        if old_row is not None:
            changed.append(old_row)
        if own is not None:
            changed.append(own[0])
        self._excluded = own if own is not None else (None, None)
        if changed:
            self._write_rows(state, sorted(set(changed)), r)
        return self.usable

    def _write_rows(self, state, rows: list, r: int) -> None:
        self.version += 1
        sums = self._sums
        names = state.nodes
        own_row, own = self._excluded
        for row in rows:
            self.requested[row, :r] = state.requested[row, :r]
            self.nonzero_requested[row] = state.nonzero_requested[row]
            rec = names[row]
            total = sums.get(rec.name) if rec is not None else None
            if total is not None:
                self.requested[row, :r] += total[:r]
                self.nonzero_requested[row] += total[r:]
            if row == own_row:
                self.requested[row, :r] -= own[:r]
                self.nonzero_requested[row] -= own[r:]
            self.row_version[row] = self.version
