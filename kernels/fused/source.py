"""What the fused backends read of the node columns they evaluate.

``ColumnSource`` is the interface ``backends`` types its ``source``
argument against; the framework's ClusterState is one (the kernels do not
import the framework, so the interface is declared here, on the reading
side).  A backend keeps per-row caches and a device mirror keyed on the
three counters, so a source must move them whenever it writes.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from tensorsched.kernels import layout as L


@runtime_checkable
class ColumnSource(Protocol):
    """Node columns plus the counters that say which rows changed.

    ``version``: moves with every write to any row;
    ``row_version``: [N] int64 (N >= rows in ``columns()``), the ``version``
    that last wrote each row, so a mirror re-copies only rows newer than
    its copy; ``layout_version``: moves when the arrays are reallocated
    (every cached view and mirror is then rebuilt).  A source may name a
    ``cache_tag`` (hashable): its row caches are kept apart from those of
    sources without one (the state), whose counters it does not share.
    A source may also keep a ``write_log`` (``WriteLog``): the rows written
    since a version are then found in O(rows written) instead of a scan of
    ``row_version``, and every write must then be logged too."""

    version: int
    layout_version: int
    row_version: np.ndarray

    def columns(self) -> L.NodeColumns:
        """The node columns trimmed to the rows in use (views, no copies)."""
        ...


LOG_READ_MAX = 128
"""A reader takes at most this many log entries after its version (more:
it scans ``row_version``, which is then as cheap), and a writer logs a
batch of at most this many rows (a larger one starts the log over)."""


class WriteLog:
    """The node rows a source wrote, in version order: ``rows`` [cap] int64
    and ``versions`` [cap] int64 (non-decreasing) hold ``length`` entries,
    one per (row, version) write; every write with a version above
    ``floor`` is among them.  A reader level with version ``seen`` >=
    ``floor`` finds the rows written since from the log
    (``fused._core.logged_rows``: the entries after ``seen`` whose version
    is still their row's ``row_version``, each row once); one behind
    ``floor`` scans ``row_version``.  When ``limit`` entries are reached the
    log starts over (``floor`` moves up to the newest dropped version), so
    it holds at most ``limit`` entries."""

    def __init__(self, limit: int = 1 << 16):
        self.limit = max(int(limit), 16)
        self.rows = np.zeros(min(64, self.limit), np.int64)     # capacity <= limit
        self.versions = np.zeros(self.rows.shape[0], np.int64)
        self.length = 0
        self.floor = 0

    def add(self, row: int, version: int) -> None:
        """One write of ``row`` at ``version`` (not below the last one logged)."""
        k = self.length
        if k == self.rows.shape[0]:
            self._room(1)
            k = self.length
        self.rows[k] = row
        self.versions[k] = version
        self.length = k + 1

    def restart(self, version: int) -> None:
        """Every write up to ``version`` dropped (a batch larger than a
        reader would take: readers behind it scan)."""
        self.floor = max(self.floor, int(version))
        self.length = 0

    def add_many(self, rows: np.ndarray, versions: np.ndarray) -> None:
        """Writes of ``rows`` [k] at ``versions`` [k] (ascending, not below
        the last one logged)."""
        k = rows.shape[0]
        if self.length + k > self.rows.shape[0]:
            self._room(k)
        if k > self.limit:          # more than the log holds: only the newest
            self.floor = max(self.floor, int(versions[k - self.limit - 1]))
            rows, versions = rows[k - self.limit:], versions[k - self.limit:]
            k = self.limit
        at = self.length
        self.rows[at:at + k] = rows
        self.versions[at:at + k] = versions
        self.length = at + k

    def _room(self, k: int) -> None:
        """Room for ``k`` more entries: the arrays doubled up to ``limit``,
        else the log emptied (``floor`` = the newest dropped version)."""
        need = self.length + k
        if need <= self.limit:
            cap = min(self.limit, max(need, 2 * self.rows.shape[0]))
            for name in ("rows", "versions"):
                old = getattr(self, name)
                new = np.zeros(cap, np.int64)
                new[:self.length] = old[:self.length]
                setattr(self, name, new)
            return
        if self.length:
            self.floor = max(self.floor, int(self.versions[self.length - 1]))
        self.length = 0
        if self.rows.shape[0] < min(k, self.limit):
            self.rows = np.zeros(min(k, self.limit), np.int64)
            self.versions = np.zeros(min(k, self.limit), np.int64)
