"""Per-node answers kept while a node's GPU-table row is unchanged.

The GPU plugins' per-node answers (GpuShareFit's fit, the cheapest GPU
subset, GpuShareScore's policy score) are functions of one node's row of
the ``GpuTable`` (its GPUs, NUMA zones, pod shapes, and the CPU left that
the table's listener sees change) and of the pod's shape.  The table bumps
``ver[row]`` whenever anything of a row changes, so an answer computed at
version ``v`` for a shape stays right while ``ver[row] == v``: after a pod
is placed only that node's answer is recomputed, not every node's.

``RowAnswers.get(table, n, key, compute)`` returns the answers [n] for the
pod shape ``key``, recomputing the rows whose version moved with
``compute(rows)`` (``rows`` int64 [k] or None for rows 0..n-1).  The rows
that moved come from the table's change log (``rows_changed_since``: the
rows bumped since a table version), so a placement costs the rows it
changed rather than a comparison of every row's version; without the log
(too old) the versions are compared.  The answers
start afresh with another table, a table of another capacity, or another
``token`` (what else they depend on: the typical pods of FGD, the subset
tables).
"""

from __future__ import annotations

import numpy as np

#: shapes kept at once; past it the answers start afresh (a workload has a
#: handful of shapes; an unbounded mix must not grow memory without end)
MAX_SHAPES = 256
#: above this share of stale rows one pass over all rows replaces gathering
FULL_PASS_SHARE = 0.25
#: changed-row lists up to this long are deduplicated in Python
SMALL_LOG = 64


class RowAnswers:
    """Answers per pod shape: ``width`` arrays [cap] (int64 unless ``dtypes``
    says), with the row versions [cap] they were computed at."""

    def __init__(self, width: int, dtypes: tuple | None = None):
        self.width = width
        self.dtypes = dtypes or (np.int64,) * width
        self._owner = None
        self._cap = -1
        self._token = None
        # key -> (ver [cap], [arrays [cap]], [(table version, n) when last current])
        self._shapes: dict = {}
        self._scratch: dict = {}

    def scratch(self, name: str, shape: tuple, dtype) -> np.ndarray:
        """The full-size array ``name`` kept for ``compute`` functions that
        write their answers by row (and return those rows): zeros when
        made or when its ``shape`` or ``dtype`` changes; its other rows
        hold whatever was written last."""
        got = self._scratch.get(name)
        if got is None or got.shape != shape or got.dtype != np.dtype(dtype):
            got = self._scratch[name] = np.zeros(shape, dtype)
        return got

    def clear(self) -> None:
        self._shapes.clear()
        self._owner = None

    def get(self, t, n: int, key, compute, token=None) -> tuple:
        """The answers of shape ``key`` for rows 0..n-1 (views [n] of the
        kept arrays: read them before the next ``get`` of the same key).
        ``compute(rows)`` gives ``width`` arrays for ``rows`` (int64 [k]),
        or for rows 0..n-1 when ``rows`` is None."""
        if self._owner is not t or self._cap != t.cap or not _same(self._token, token):
            self._shapes.clear()
            self._owner, self._cap, self._token = t, t.cap, token
        got = self._shapes.get(key)
        if got is None:
            if len(self._shapes) >= MAX_SHAPES:
                self._shapes.clear()
            got = self._shapes[key] = (np.full(t.cap, -1, np.int64),
                                       [np.zeros(t.cap, d) for d in self.dtypes], [None])
        ver, arrays, synced = got
        # nothing bumped since this shape was brought up to date (the table's
        # counter moves with every row version): no row to compare
        if synced[0] == (t.version, n):
            return tuple(a[:n] for a in arrays)
        now = t.ver[:n]
        stale = None
        if synced[0] is not None and synced[0][1] == n:
            # the rows bumped since then, from the table's change log: a
            # placement costs its own rows, not a comparison of every row
            moved = t.rows_changed_since(synced[0][0])
            if moved is not None:
                stale = _distinct(moved, n)
        if stale is None:
            stale = np.flatnonzero(ver[:n] != now)
        if stale.shape[0]:
            # many stale rows (a first use, a node-set change): one pass
            # over all of them is cheaper than gathering
            rows = None if stale.shape[0] > FULL_PASS_SHARE * n else stale
            fresh = compute(rows)
            for a, f in zip(arrays, fresh):
                if rows is None:
                    a[:n] = f
                else:
                    a[rows] = f
            if rows is None:
                ver[:n] = now
            else:
                ver[rows] = now[rows]
        synced[0] = (t.version, n)
        return tuple(a[:n] for a in arrays)


def _distinct(rows: np.ndarray, n: int) -> np.ndarray:
    """The distinct rows below ``n`` of ``rows`` (int64 [k]), ascending."""
    if rows.shape[0] <= SMALL_LOG:
        # a placement's few bumps: a set beats np.unique's sort machinery
        return np.array(sorted({r for r in rows.tolist() if r < n}), np.int64)
    return np.unique(rows[rows < n])


def _same(a, b) -> bool:
    """Tokens are objects (equal when the same object) or integers (equal
    by value)."""
    if a is b:
        return True
    return type(a) is int and type(b) is int and a == b
