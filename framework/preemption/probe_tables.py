"""The probes' node and domain tables of the device search on counts, kept
between preemptors and updated by the rows that changed.

``HostVictimSearch.device_counts`` describes the tables a preemptor's
probes give (``on_counts.DeviceCounts``: ``nodes`` [N, 3S + P] per node
row, ``doms`` [D, 2S + P] per domain) as columns of sources instead of
filling them: a node column is a per-row array (a domain id column of
the state, memoized and read-only, or a DomainSums' own ``dom``) or a
constant, or sparse values on a few rows (the nominated pods' counts);
a domain column is a DomainSums' ``sums`` (moved in place by the pods
bound and removed: ``DomainSums.changed_since`` names the domains each
update moved), a fixed per-domain array (``present``) or zeros.

``ProbeTables.update`` brings the kept host tables level with such a
description and lists the rows it changed since the previous update:

- a column whose source is the same object as last time (an array, read
  only by contract, or a DomainSums whose journal still reaches back) costs
  nothing beyond the domains its journal names, which are re-read (up to
  ``SCALAR_ROWS`` one by one, more as arrays: a preemptor moves a few);
- a sparse column re-reads the rows it names now and named last time;
- any other column (a new source: another preemptor's constraints,
  another structure) is compared whole, O(N) for that column only;
- another shape rebuilds both tables (``nodes_changed`` / ``doms_changed``
  None: everything).

The device copy (``DeviceVictims``) follows by ``generation``: one ahead
of the copy it holds, the changed rows go up; otherwise the whole table.
``rows_read`` counts the rows re-read or compared (tests and benches: one
bound pod moved between two preemptors re-reads its node's domains, not N).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Column", "DomainColumn", "ProbeTables"]


class Column(NamedTuple):
    """A node column: ``fill`` where there is no value; ``values`` [k]
    int64 per row (rows beyond k hold ``fill``; the same object between
    updates means the same values), or with ``rows`` [k] int64 the values
    of those rows only (sparse; every other row holds ``fill``)."""

    fill: int
    values: np.ndarray | None = None
    rows: np.ndarray | None = None


class DomainColumn(NamedTuple):
    """A domain column: ``sums`` a DomainSums (its ``sums``, followed by its
    journal) or None; else ``values`` [k] a fixed per-domain array (the same
    object: the same values) or None (zeros)."""

    sums: object = None
    values: np.ndarray | None = None


def _dense(col: Column, n: int) -> np.ndarray:
    """[n] int64 the whole of node column ``col``."""
    out = np.full(n, col.fill, np.int64)
    if col.rows is not None:
        ok = col.rows < n
        out[col.rows[ok]] = col.values[ok]
    elif col.values is not None:
        k = min(n, col.values.shape[0])
        out[:k] = col.values[:k]
    return out


def _dom_values(col: DomainColumn) -> np.ndarray | None:
    return col.sums.sums if col.sums is not None else col.values


class ProbeTables:
    """The kept ``nodes`` [N, Wn] and ``doms`` [D, Wd] int64 tables (at
    least one column each), ``generation`` (bumped by each update),
    ``nodes_changed`` / ``doms_changed`` (rows the last update changed,
    sorted; None: all) and ``rows_read`` (rows re-read or compared by all
    updates)."""

    def __init__(self):
        self.nodes = np.zeros((0, 1), np.int64)
        self.doms = np.zeros((0, 1), np.int64)
        self.generation = 0
        self.nodes_changed: np.ndarray | None = None
        self.doms_changed: np.ndarray | None = None
        self.rows_read = 0
        self._node_src: list = []       # per column: the Column last written
        self._dom_src: list = []        # per column: (DomainColumn, sums version) last written

    def update(self, n_rows: int, node_cols: list, dom_cols: list) -> None:
        """Make the tables ``node_cols`` ([Column] per node column over
        ``n_rows`` rows) and ``dom_cols`` ([DomainColumn], as many rows as
        the longest) describe (module doc)."""
        self.generation += 1
        width = max([v.shape[0] for v in map(_dom_values, dom_cols) if v is not None],
                    default=0)
        shape_n = (n_rows, max(len(node_cols), 1))
        shape_d = (max(width, 1), max(len(dom_cols), 1))
        if self.nodes.shape != shape_n or self.doms.shape != shape_d \
                or len(self._node_src) != len(node_cols) or len(self._dom_src) != len(dom_cols):
            self._rebuild(shape_n, shape_d, node_cols, dom_cols)
            return
        self.nodes_changed = self._update_nodes(node_cols)
        self.doms_changed = self._update_doms(dom_cols)

    def _rebuild(self, shape_n, shape_d, node_cols, dom_cols) -> None:
        self.nodes = np.zeros(shape_n, np.int64)
        for j, col in enumerate(node_cols):
            self.nodes[:, j] = _dense(col, shape_n[0])
        self.doms = np.zeros(shape_d, np.int64)
        for j, col in enumerate(dom_cols):
            v = _dom_values(col)
            if v is not None:
                self.doms[:v.shape[0], j] = v
        self._node_src = list(node_cols)
        self._dom_src = [(c, c.sums.version if c.sums is not None else 0) for c in dom_cols]
        self.nodes_changed = self.doms_changed = None
        self.rows_read += shape_n[0] + shape_d[0]

    def _update_nodes(self, node_cols) -> np.ndarray:
        n = self.nodes.shape[0]
        changed = []
        for j, col in enumerate(node_cols):
            last = self._node_src[j]
            if col.values is last.values and col.rows is last.rows and col.fill == last.fill:
                diff = None             # the same source: the same values
            elif col.rows is not None and last.rows is not None and col.fill == last.fill \
                    and not col.rows.shape[0] and not last.rows.shape[0]:
                diff = None             # sparse, no row named now or last time
            elif col.rows is not None and last.rows is not None and col.fill == last.fill:
                # sparse: the rows named now or last time
                rows = np.union1d(col.rows, last.rows).astype(np.int64)
                rows = rows[rows < n]
                want = np.full(rows.shape[0], col.fill, np.int64)
                ok = col.rows < n
                want[np.searchsorted(rows, col.rows[ok])] = col.values[ok]
                self.rows_read += rows.shape[0]
                diff = rows[self.nodes[rows, j] != want]
                self.nodes[diff, j] = want[np.searchsorted(rows, diff)]
            else:
                want = _dense(col, n)
                self.rows_read += n
                diff = np.flatnonzero(self.nodes[:, j] != want)
                self.nodes[diff, j] = want[diff]
            self._node_src[j] = col
            if diff is not None and diff.shape[0]:
                changed.append(diff)
        return _union(changed)

    # Up to this many domains a column's journal names are compared one by
    # one in Python: a preemptor moves a few (its victims' and its own
    # node's), where each NumPy call would cost more than the loop.
    SCALAR_ROWS = 16

    def _update_doms(self, dom_cols) -> np.ndarray:
        d = self.doms.shape[0]
        changed = []
        few: set = set()                # rows changed by the one-by-one comparisons
        for j, col in enumerate(dom_cols):
            last, version = self._dom_src[j]
            sums = col.sums
            v = sums.sums if sums is not None else col.values
            rows = None
            if sums is not None and sums is last.sums:
                if sums.version == version:
                    continue                # no update since: nothing moved
                rows = sums.changed_since(version)
            elif sums is None and last.sums is None and col.values is last.values:
                self._dom_src[j] = (col, 0)
                continue
            self._dom_src[j] = (col, sums.version if sums is not None else 0)
            if rows is None:            # another source, or its journal is too short
                want = np.zeros(d, np.int64)
                if v is not None:
                    want[:v.shape[0]] = v
                self.rows_read += d
                diff = np.flatnonzero(self.doms[:, j] != want)
                self.doms[diff, j] = want[diff]
            elif v is None or not rows.shape[0]:    # nothing moved (zeros as last time)
                continue
            elif rows.shape[0] <= self.SCALAR_ROWS:
                width = v.shape[0]
                doms = self.doms
                for r in rows.tolist():
                    if r >= width:
                        continue
                    self.rows_read += 1
                    x = v[r]
                    if doms[r, j] != x:
                        doms[r, j] = x
                        few.add(r)
                continue
            else:
                rows = rows[rows < v.shape[0]]
                self.rows_read += rows.shape[0]
                diff = rows[self.doms[rows, j] != v[rows]]
                self.doms[diff, j] = v[diff]
            if diff.shape[0]:
                changed.append(diff)
        if few:
            changed.append(np.array(sorted(few), np.int64))
        return _union(changed)


def _union(parts: list) -> np.ndarray:
    """[k] int64 the sorted distinct rows of ``parts`` (sorted arrays)."""
    if not parts:
        return np.zeros(0, np.int64)
    if len(parts) == 1:
        return parts[0].astype(np.int64, copy=False)
    return np.unique(np.concatenate(parts))
