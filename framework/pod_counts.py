"""Per-node counts of bound pods, kept incrementally for the pod-to-pod plugins.

``pod_count_index(state)`` attaches one :class:`PodCountIndex` to a
ClusterState (as a ``state.listeners`` hook).  It keeps:

* ``counts(key, predicate)``: [rows] int64, how many bound pods on each node
  satisfy ``predicate(record)``; built once by one pass over the bound pods,
  then updated by +-1 on the pod's node row when a pod is bound or removed
  (an LRU of the most recently used keys is kept);
* ``groups[kind]``: the affinity terms that bound pods carry (kind is
  req_aff, req_anti, pref_aff or pref_anti) -> [rows] int64 count of pods
  carrying that term on each node, so "existing pods' terms" are evaluated
  once per distinct term, not once per pod.

The kernels (``tensorsched.kernels.topology``) turn these node counts into
per-domain counts for each cycle.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .pod_selectors import pod_terms

KINDS = ("req_aff", "req_anti", "pref_aff", "pref_anti")


class PodCountIndex:
    MAX_KEYS = 128

    def __init__(self, state):
        self.state = state
        self._entries: OrderedDict = OrderedDict()   # key -> (predicate, counts)
        self.groups: dict = {k: {} for k in KINDS}   # kind -> {term: counts}
        self.pods_with_affinity = 0
        for entry in state.pods.values():
            self._group(entry.record, entry.node_row, 1)

    def _cap(self) -> int:
        return max(self.state.allocatable.shape[0], self.state.n_rows, 1)

    def _grown(self, arr):
        cap = self._cap()
        if arr.shape[0] >= cap:
            return arr
        out = np.zeros(cap, np.int64)
        out[: arr.shape[0]] = arr
        return out

    def on_pod(self, record, row: int, delta: int) -> None:
        for key, (pred, arr) in list(self._entries.items()):
            if pred(record):
                if row >= arr.shape[0]:
                    arr = self._grown(arr)
                    self._entries[key] = (pred, arr)
                arr[row] += delta
        self._group(record, row, delta)

    def _group(self, record, row, delta):
        if not (record.pod_affinity or record.pod_anti_affinity):
            return
        self.pods_with_affinity += delta
        terms = pod_terms(record)
        for kind in KINDS:
            table = self.groups[kind]
            for t in terms[kind]:
                arr = table.get(t)
                if arr is None:
                    arr = np.zeros(self._cap(), np.int64)
                elif row >= arr.shape[0]:
                    arr = self._grown(arr)
                arr[row] += delta
                if delta < 0 and not arr.any():
                    table.pop(t, None)
                else:
                    table[t] = arr

    def counts(self, key, predicate) -> np.ndarray:
        """[>= n_rows] int64 pods per node row satisfying ``predicate``."""
        got = self._entries.get(key)
        if got is None:
            arr = np.zeros(self._cap(), np.int64)
            for entry in self.state.pods.values():
                if predicate(entry.record):
                    arr[entry.node_row] += 1
            self._entries[key] = (predicate, arr)
            while len(self._entries) > self.MAX_KEYS:
                self._entries.popitem(last=False)
            return arr
        self._entries.move_to_end(key)
        arr = got[1]
        if arr.shape[0] < self.state.n_rows:
            arr = self._grown(arr)
            self._entries[key] = (got[0], arr)
        return arr

    def group_counts(self, kind: str) -> dict:
        """{term: [>= n_rows] int64} for one kind of existing pods' terms."""
        table = self.groups[kind]
        for t, arr in list(table.items()):
            if arr.shape[0] < self.state.n_rows:
                table[t] = self._grown(arr)
        return table


def pod_count_index(state) -> PodCountIndex:
    idx = state.__dict__.get("_pod_count_index")
    if idx is None:
        idx = PodCountIndex(state)
        state.__dict__["_pod_count_index"] = idx
        state.listeners.append(idx.on_pod)
    return idx
