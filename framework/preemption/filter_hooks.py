"""What host filters change about one preemptor's victim search.

SelectVictimsOnNode runs the profile's filters on a node with pods taken
off.  Two host-filter capabilities make that search differ from the fused
built-in filters' view (both asked by name, as ``Framework._user_stage``
asks the first):

* ``fused_exemptions(ctx, rows) -> [M] int64 | None``: reason bits of the
  fused filters the plugin answers for itself on those rows.
  DynamicResources with DRAExtendedResource: an extended resource that a
  DeviceClass serves and that the node's allocatable does not list is left
  to it by NodeResourcesFit (upstream's fitsRequest skips it there), so the
  victim search must not count it as a node resource either;
* ``begin_victim_search(ctx)`` / ``end_victim_search(ctx)``: the plugin's
  state follows pods taken off by the search as upstream's RemovePod /
  AddPod PreFilter extensions do (DynamicResources: which of a victim's
  claims a dry run frees).

``VictimSearchHooks`` gathers both for one preemptor and hands the
exemptions to the places the search tests NodeResourcesFit: the kernel
pre-pass (``columns`` / ``device_allocatable``: the exempt cells of
``allocatable`` lifted out of reach, so every backend's unchanged kernel
passes them) and the host search's per-step test (``bits``).
"""

from __future__ import annotations

import numpy as np

from tensorsched.kernels import layout as L
from tensorsched.kernels.dra.lifted import lifted_allocatable, lifted_allocatable_device

__all__ = ["VictimSearchHooks", "exempt_bits"]


def exempt_bits(filters, ctx, rows) -> np.ndarray | None:
    """[M] int64: the fused reason bits ``filters`` answer for themselves on
    ``rows`` (OR over the filters), None when none does."""
    out = None
    for p in filters:
        fn = getattr(p, "fused_exemptions", None)
        got = fn(ctx, rows) if fn is not None else None
        if got is not None:
            got = np.asarray(got, np.int64)
            out = got.copy() if out is None else out | got
    return out


class VictimSearchHooks:
    """The host filters' hooks for one preemptor's victim search (see the
    module doc).  ``close`` ends the search for the plugins."""

    def __init__(self, ctx, filters):
        self.ctx = ctx
        self.filters = [p for p in filters if getattr(p, "fused_exemptions", None) is not None]
        self._bits: dict[int, int] = {}         # row -> exempt reason bits
        self._ending = []
        for p in filters:
            begin = getattr(p, "begin_victim_search", None)
            if begin is not None:
                begin(ctx)
                self._ending.append(p)

    def close(self) -> None:
        while self._ending:
            self._ending.pop().end_victim_search(self.ctx)

    def _fill(self, rows) -> None:
        rows = np.asarray(rows, np.int64)
        todo = rows[[int(r) not in self._bits for r in rows.tolist()]] if self._bits else rows
        if not self.filters or todo.shape[0] == 0:
            return
        got = exempt_bits(self.filters, self.ctx, todo)
        got = np.zeros(todo.shape[0], np.int64) if got is None else got
        self._bits.update(zip(todo.tolist(), got.tolist()))

    def bits(self, row: int) -> int:
        """The reason bits NodeResourcesFit must not report on ``row``."""
        if not self.filters:
            return 0
        if row not in self._bits:
            self._fill([row])
        return self._bits[row]

    def _exempt_of(self, rows) -> np.ndarray:
        rows = np.asarray(rows, np.int64)
        self._fill(rows)
        return np.fromiter((self._bits[int(r)] for r in rows.tolist()), np.int64, rows.shape[0])

    def columns(self, cols: L.NodeColumns, rows) -> L.NodeColumns:
        """``cols`` as the victim kernel must read them on ``rows``."""
        if not self.filters:
            return cols
        got = lifted_allocatable(cols.allocatable, rows, self._exempt_of(rows),
                                 L.INSUFFICIENT_SHIFT)
        return cols if got is None else cols._replace(allocatable=got)

    def device_allocatable(self, cols: L.NodeColumns, rows):
        """For the device search: a lifted ``allocatable`` [N, R] uploaded
        when some cell is exempt, else None (the stage's own column)."""
        if not self.filters:
            return None
        return lifted_allocatable_device(cols.allocatable, rows, self._exempt_of(rows),
                                         L.INSUFFICIENT_SHIFT)
